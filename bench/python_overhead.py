#!/usr/bin/env python3
"""Python's cost per op call: oa_bench's host cases (family "host",
bench/matrix_cases.cpp) run from the oa Python package, timed the same way,
next to oa_bench's own figures for them.

The cases: `ops` independent calls of one op on 8 x 8 operands (a + b, a @ b,
a Linear(8, 8) forward: host_<op>_8x8), and chains of tiny adds (y = y + b)
or independent ones (a + b) over n floats (host_add_<chain|independent>_n<n>).
A loop runs --steps steps back to back with one synchronize at the end; the
best of --loops loops is kept. Per op call it prints the host time spent
recording (before the synchronize) and the wall time (after it), from Python
and from C++, and the difference of the recording times: what the binding
adds. Both run with OA_BATCH_DISPATCHES=--batch-dispatches (100000) and
OA_EARLY_SUBMISSION=0: the loop's work is recorded into one command buffer
and submitted at the synchronize, so that the recording time is the host's cost alone (with the
engine's default of 64, a submission every 64 dispatches makes recording wait
for the device whenever its queue is full). Keep a loop short (the default
2 steps of 1000 calls): in one open command buffer the recording cost per
dispatch grows with the dispatches already in it (on lavapipe 2026-12-03, an
8 x 8 add: 6 us each for 2000 of them, 36 us for 20000). The C++ figures come from
running oa_bench (--oa-bench, default build/bench/oa_bench) with the same
--steps and --loops, or from its JSON (--cpp FILE, written by
`oa_bench --family host --out FILE`). On lavapipe
the driver executes the work on the same CPU cores, so wall times there are
noisy; the recording times are the comparison. The last line times a binding
round trip without GPU work (a.detach(): a Tensor in, a new Tensor out).

Usage: PYTHONPATH=build/python /usr/bin/python3 bench/python_overhead.py [--quick]
"""
import argparse
import json
import os
import subprocess
import tempfile
import time

import oa


def make_step(params):
    """The Python twin of the oa_bench case with these params (matrix_cases.cpp)."""
    ops = params["ops"]
    if "op" in params:  # op_loop
        a, b = oa.rand(8, 8, seed=1) * 2 - 1, oa.rand(8, 8, seed=2) * 2 - 1
        oa.manual_seed(0)
        layer = oa.nn.Linear(8, 8)
        call = {"add": lambda: a + b, "matmul": lambda: a @ b, "linear": lambda: layer(a)}[params["op"]]

        def step():
            for _ in range(ops):
                call()
        return step
    n, chained = params["n"], params["chained"]  # add_loop
    a, b = oa.rand(n, seed=1) * 2 - 1, oa.rand(n, seed=2) * 2 - 1

    def step():
        y = a
        for _ in range(ops):
            y = y + b if chained else a + b
    return step


def time_case(params, steps, loops, warmup=2):
    """(record, wall) microseconds per op call: the best of `loops` loops of `steps` steps."""
    step = make_step(params)
    for _ in range(warmup):
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
    per_call = 1e6 / (steps * params["ops"])
    return best[0] * per_call, best[1] * per_call


def cpp_cases(args):
    """name -> (params, record us, wall us per call) from oa_bench's host family."""
    path = args.cpp
    if path is None:
        path = os.path.join(tempfile.mkdtemp(), "host.json")
        command = [args.oa_bench, "--family", "^host$", "--filter", "^host_(add|matmul|linear)_", "--steps",
                   str(args.steps), "--loops", str(args.loops), "--out", path] + (["--quick"] if args.quick else [])
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    cases = {}
    for c in json.load(open(path))["cases"]:
        if c["kind"] in ("add_loop", "op_loop") and "error" not in c:
            calls = c["params"]["ops"]
            cases[c["name"]] = (c["params"], c["record_ms"] * 1e3 / calls, c["wall_ms"] * 1e3 / calls)
    return cases


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--oa-bench", default="build/bench/oa_bench", help="the oa_bench binary to run for C++")
    parser.add_argument("--cpp", help="oa_bench JSON of the host family instead of running oa_bench")
    parser.add_argument("--quick", action="store_true", help="oa_bench --quick: 50 op calls per step, not 1000")
    parser.add_argument("--steps", type=int, default=2, help="steps per loop (oa_bench's default is 20)")
    parser.add_argument("--loops", type=int, default=5)
    parser.add_argument("--batch-dispatches", type=int, default=100000,
                        help="OA_BATCH_DISPATCHES for both, with early submission off (0: the engine's defaults)")
    args = parser.parse_args()
    if args.batch_dispatches > 0:  # read when the default engine is created, at the first op below
        os.environ["OA_BATCH_DISPATCHES"] = str(args.batch_dispatches)
        os.environ["OA_EARLY_SUBMISSION"] = "0"
    cpp = cpp_cases(args)
    print(f"device: {oa.default_engine().device.name}")
    print(f"{'case':<28} {'py record':>10} {'py wall':>9} {'C++ record':>11} {'C++ wall':>9} {'py - C++':>9}"
          "   (us per op call)")
    for name, (params, cpp_record, cpp_wall) in cpp.items():
        record, wall = time_case(params, args.steps, args.loops)
        print(f"{name:<28} {record:>10.2f} {wall:>9.2f} {cpp_record:>11.2f} {cpp_wall:>9.2f} "
              f"{record - cpp_record:>9.2f}")
    a = oa.zeros(256)
    calls = 200000
    t0 = time.perf_counter()
    for _ in range(calls):
        a.detach()
    print(f"binding round trip (a.detach(), no GPU work): {(time.perf_counter() - t0) * 1e6 / calls:.2f} us/call")


if __name__ == "__main__":
    main()
