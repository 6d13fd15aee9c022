#!/usr/bin/env python3
"""Random calls of the oa Python package's public functions, methods and
constructors with random arguments: tensors of random shapes (empty, scalar,
up to rank 4) and dtypes, None, negative and huge ints, NaN and inf, strings,
lists, NumPy arrays, bytes. Every call must return or raise an ordinary
exception; a crash of the interpreter, a hang, an oa.InternalError or (with OA_VALIDATION=1) a
Vulkan validation message is a finding.

Each worker process writes the call it is about to make to a log before
making it, so when a worker dies the parent prints that call (a reproducer)
and starts the next worker with the next seed.

Usage: PYTHONPATH=build/python /usr/bin/python3 fuzz/fuzz_python.py [--seconds 180] [--seed 0]
"""
import argparse
import inspect
import warnings
import os
import random
import subprocess
import sys
import time

import numpy as np

CALLS_PER_WORKER = 3000


def targets(oa):
    """(name, callable) of every public function, Tensor method and module constructor."""
    out = []
    for prefix, space in (("oa", oa), ("F", oa.nn.functional), ("oa.data", oa.data), ("oa.optim", oa.optim),
                          ("oa.nn", oa.nn)):
        for name in sorted(dir(space)):
            value = getattr(space, name)
            if name.startswith("_") or inspect.ismodule(value) or not callable(value):
                continue
            if name in ("manual_seed", "Engine", "devices", "synchronize", "load", "save", "read_text"):
                continue  # a new engine per call is slow; files: the readers are fuzzed in C++ (fuzz_idx)
            out.append((f"{prefix}.{name}", value))
    for name in sorted(dir(oa.Tensor)):
        if not name.startswith("_") or name in ("__getitem__", "__add__", "__matmul__", "__pow__", "__eq__",
                                                 "__truediv__", "__rsub__", "__repr__", "__array__", "__neg__"):
            out.append((f"Tensor.{name}", name))
    return out


class Values:
    def __init__(self, oa, rng):
        self.oa, self.rng = oa, rng
        self.shared = None  # (shape, dtype) of every tensor of a call, or None for independent ones

    def shape(self):
        return tuple(self.rng.choice([0, 1, 1, 2, 3, 4, 5]) for _ in range(self.rng.choice([0, 1, 2, 2, 3, 4])))

    def tensor(self):
        oa, rng = self.oa, self.rng
        shape, dtype = self.shared or (self.shape(), rng.choice([oa.float32, oa.float32, oa.float16, oa.bfloat16,
                                                                 oa.int32, oa.bool]))
        data = np.random.default_rng(rng.randrange(1 << 30)).uniform(-3, 3, shape)
        t = oa.tensor(data if dtype != oa.int32 else data.astype(np.int32), dtype=dtype)
        if dtype == oa.float32 and rng.random() < 0.3:
            t.requires_grad_()
        return t

    def value(self):
        rng = self.rng
        kind = rng.randrange(12)
        if kind < 4:
            return self.tensor()
        if kind == 4:
            return None
        if kind == 5:
            return rng.choice([-3, -2, -1, 0, 1, 2, 3, 4, 6, 2**62, 2**70])
        if kind == 6:
            return rng.choice([0.0, -1.0, 0.5, 2.0, float("nan"), float("inf"), -1e30])
        if kind == 7:
            return rng.choice(["", "mean", "sum", "none", "x"])
        if kind == 8:
            return [rng.choice([-1, 0, 1, 2, 3]) for _ in range(rng.randrange(4))]
        if kind == 9:
            return tuple(rng.choice([-1, 0, 1, 2]) for _ in range(rng.randrange(4)))
        if kind == 10:
            return np.zeros(self.shape(), dtype=rng.choice([np.float32, np.float64, np.int64, np.bool_, np.uint8]))
        return rng.choice([True, False, bytes(rng.randrange(256) for _ in range(rng.randrange(300))), slice(None, 2),
                           Ellipsis, object()])


def describe(v):
    if hasattr(v, "shape") and hasattr(v, "dtype") and not isinstance(v, np.ndarray):
        return f"<{v.dtype} {tuple(v.shape)}{' grad' if getattr(v, 'requires_grad', False) else ''}>"
    if isinstance(v, np.ndarray):
        return f"np.zeros({v.shape}, {v.dtype})"
    return repr(v)


def worker(seed, log_path):
    import oa

    warnings.simplefilter("ignore")
    rng = random.Random(seed)
    values = Values(oa, rng)
    funcs = targets(oa)
    log = open(log_path, "w", buffering=1)
    findings = returned = 0
    for _ in range(CALLS_PER_WORKER):
        name, fn = rng.choice(funcs)
        values.shared = (values.shape(), oa.float32) if rng.random() < 0.5 else None
        args = [values.value() for _ in range(rng.randrange(5))]
        if args and rng.random() < 0.7:  # most ops take a tensor first
            args[0] = values.tensor()
        receiver = None
        if isinstance(fn, str):  # a method or property of a tensor
            receiver = values.tensor()
            name = f"{describe(receiver)}.{fn}"
        log.write(f"{name}({', '.join(describe(a) for a in args)})\n")
        try:
            if receiver is not None:
                fn = getattr(receiver, fn)
                if not callable(fn):
                    continue
            out = fn(*args)
            returned += 1
            if isinstance(out, oa.Tensor) and rng.random() < 0.2:
                out.numpy()
                if out.requires_grad and rng.random() < 0.5:
                    out.sum().backward()
        except oa.InternalError as e:
            print(f"INTERNAL: {name}: {e}", flush=True)
            findings += 1
        except Exception:
            pass
    oa.synchronize()
    print(f"seed {seed}: {returned} of {CALLS_PER_WORKER} calls returned", flush=True)
    if oa.validation_message_count():
        print(f"seed {seed}: {oa.validation_message_count()} Vulkan validation messages", flush=True)
        findings += 1
    return findings


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=180)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--log", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        sys.exit(1 if worker(args.worker, args.log) else 0)
    log = f"/tmp/fuzz_python.{os.getpid()}.log"
    deadline, seed, crashes = time.time() + args.seconds, args.seed, 0
    while time.time() < deadline:
        try:
            done = subprocess.run([sys.executable, __file__, "--worker", str(seed), "--log", log], timeout=600)
            failed = done.returncode != 0
            reason = f"exit code {done.returncode}"
        except subprocess.TimeoutExpired:
            failed, reason = True, "a hang (600 s)"
        if failed:
            crashes += 1
            last = open(log).read().splitlines()[-1:] if os.path.exists(log) else []
            print(f"seed {seed}: {reason}; last call: {last[0] if last else '?'}", flush=True)
        seed += 1
    print(f"{seed - args.seed} workers of {CALLS_PER_WORKER} calls, {crashes} with findings")
    sys.exit(1 if crashes else 0)


if __name__ == "__main__":
    main()
