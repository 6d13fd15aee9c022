#!/usr/bin/env python3
"""Python's cost per op: the host cases of oa_bench (family "host",
bench/matrix_cases.cpp) run from the oa Python package, timed the same way.

Each step records `ops` tiny adds, chained (y = y + b) or independent (a + b);
a loop runs --steps steps back to back with one synchronize at the end, the
best of --loops loops is kept. Per op it prints the host time spent recording
(before the synchronize) and the wall time (after it), next to oa_bench's
figures for the same cases when given its JSON (--cpp, from
`oa_bench --family host --out FILE`). On lavapipe the driver runs the adds on
the same CPU cores, so the difference of the two is noisy; the last line
times a binding round trip without GPU work (a.detach(): a Tensor in, a new
Tensor out), the part of an op call that Python adds.

Usage: PYTHONPATH=build/python /usr/bin/python3 bench/python_host.py [--cpp FILE]
"""
import argparse
import json
import time

import oa


def run_case(n, ops, chained, steps, loops):
    a = oa.rand(n, seed=1) * 2 - 1
    b = oa.rand(n, seed=2) * 2 - 1

    def step():
        y = a
        for _ in range(ops):
            y = y + b if chained else a + b

    for _ in range(2):
        step()
    oa.synchronize()
    best = None
    for _ in range(loops):
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        recorded = time.perf_counter() - t0
        oa.synchronize()
        wall = time.perf_counter() - t0
        if best is None or wall < best[1]:
            best = (recorded, wall)
    per_op = 1e6 / (steps * ops)
    return best[0] * per_op, best[1] * per_op


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cpp", help="oa_bench JSON of the host family, for the C++ figures")
    parser.add_argument("--ops", type=int, default=1000, help="adds per step (oa_bench: 1000, 50 with --quick)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--loops", type=int, default=2)
    args = parser.parse_args()
    cpp = {}
    if args.cpp:
        for c in json.load(open(args.cpp))["cases"]:
            if "host_us_per_dispatch" in c and c["kind"] == "add_loop":
                cpp[c["name"]] = (c["host_us_per_dispatch"], c["wall_ms"] * 1e3 / c["dispatches_per_step"])
    print(f"device: {oa.default_engine().device.name}")
    print(f"{'case':<28} {'py record us/op':>16} {'py wall us/op':>14} {'C++ record':>11} {'C++ wall':>9}")
    for chained in (True, False):
        for n in (256, 65536):
            name = f"host_add_{'chain' if chained else 'independent'}_n{n}"
            record, wall = run_case(n, args.ops, chained, args.steps, args.loops)
            c = cpp.get(name)
            tail = f" {c[0]:>11.2f} {c[1]:>9.2f}" if c else ""
            print(f"{name:<28} {record:>16.2f} {wall:>14.2f}{tail}")
    a = oa.zeros(256)
    calls = 200000
    t0 = time.perf_counter()
    for _ in range(calls):
        a.detach()
    print(f"binding round trip (a.detach(), no GPU work): {(time.perf_counter() - t0) * 1e6 / calls:.2f} us/call")


if __name__ == "__main__":
    main()
