#!/usr/bin/env python3
"""Runs oa's benchmark shapes in PyTorch on the same GPU and prints the ratio
table (PyTorch time / oa time; > 1 means oa is faster).

Usage: torch_compare.py OA_RESULTS.json [--out COMPARE.json] [--repeat 20]
FP32 throughout with TF32 off, for a like-for-like comparison. PyTorch times
are medians of CUDA-event timings after warm-up.
"""
import argparse
import json
import sys

import torch
import torch.nn.functional as F

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
dev = "cuda"


def rand(*shape, grad=False):
    return torch.randn(*shape, device=dev, dtype=torch.float32, requires_grad=grad)


def twin(kind, p):
    """Returns a zero-argument step computing what the oa case computes."""
    if kind == "add":
        a, b = rand(p["n"]), rand(p["n"])
        return lambda: a + b
    if kind in ("mat_mul_nt", "matmul"):
        a = rand(p["m"], p["k"])
        b = rand(p["n"], p["k"]) if kind == "mat_mul_nt" else rand(p["k"], p["n"])
        return (lambda: a @ b.t()) if kind == "mat_mul_nt" else (lambda: a @ b)
    if kind in ("bmm", "bmm_nt", "bmm_tn"):
        n, m, k, q = p["batch"], p["m"], p["k"], p["n"]
        a = rand(n, k, m) if kind == "bmm_tn" else rand(n, m, k)
        b = rand(n, q, k) if kind == "bmm_nt" else rand(n, k, q)
        if kind == "bmm":
            return lambda: torch.bmm(a, b)
        if kind == "bmm_nt":
            return lambda: torch.bmm(a, b.transpose(1, 2))
        return lambda: torch.bmm(a.transpose(1, 2), b)
    if kind in ("conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d"):
        backward = p.get("backward", False)
        groups = p.get("groups", 1)
        spatial = [p["l"]] if kind.endswith("1d") else [p["h"], p["w"]]
        x = rand(p["n"], p["c_in"], *spatial, grad=backward)
        ks = [p["k"]] * len(spatial)
        if kind.startswith("conv_transpose"):
            w = rand(p["c_in"], p["c_out"] // groups, *ks, grad=backward)
        else:
            w = rand(p["c_out"], p["c_in"] // groups, *ks, grad=backward)
        b = rand(p["c_out"], grad=backward)
        fn = {"conv1d": F.conv1d, "conv2d": F.conv2d, "conv_transpose1d": F.conv_transpose1d,
              "conv_transpose2d": F.conv_transpose2d}[kind]
        kw = dict(stride=p.get("stride", 1), padding=p.get("padding", 0), groups=groups)
        if not backward:
            return lambda: fn(x, w, b, **kw)
        g = torch.ones(fn(x, w, b, **kw).shape, device=dev)

        def step():
            y = fn(x, w, b, **kw)
            torch.autograd.backward(y, g)
        return step
    if kind == "sdpa_causal":
        backward = p.get("backward", False)
        q, k, v = (rand(p["b"], p["h"], p["s"], p["d"], grad=backward) for _ in range(3))
        from torch.nn.attention import SDPBackend, sdpa_kernel

        def fwd():
            with sdpa_kernel(SDPBackend.EFFICIENT_ATTENTION):
                return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        if not backward:
            return fwd
        g = torch.ones(p["b"], p["h"], p["s"], p["d"], device=dev)

        def step():
            torch.autograd.backward(fwd(), g)
        return step
    if kind == "softmax_masked":
        s, m = rand(p["rows"], p["cols"]), rand(p["rows"], p["cols"])
        return lambda: torch.softmax(s * p["scale"] + m, dim=-1)
    raise ValueError(f"no PyTorch twin for kind {kind}")


def time_ms(step, repeat):
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeat):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        step()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    times.sort()
    return times[len(times) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("oa_results")
    ap.add_argument("--out")
    ap.add_argument("--repeat", type=int, default=20)
    args = ap.parse_args()
    with open(args.oa_results) as f:
        results = json.load(f)
    rows = []
    print(f"{'case':<44} {'oa ms':>10} {'torch ms':>10} {'torch/oa':>9}  {'oa peak MiB':>11} {'torch peak MiB':>14}")
    for r in results:
        torch.cuda.reset_peak_memory_stats()
        try:
            t = time_ms(twin(r["kind"], r["params"]), args.repeat)
        except Exception as e:  # report and go on: one missing twin must not hide the rest
            print(f"{r['name']:<44} torch failed: {e}", file=sys.stderr)
            continue
        ratio = t / r["gpu_ms"] if r["gpu_ms"] > 0 else float("nan")
        peak = r.get("peak_bytes", 0) / 2**20
        torch_peak = torch.cuda.max_memory_allocated() / 2**20
        print(f"{r['name']:<44} {r['gpu_ms']:>10.3f} {t:>10.3f} {ratio:>9.2f}  {peak:>11.1f} {torch_peak:>14.1f}")
        rows.append(dict(name=r["name"], oa_ms=r["gpu_ms"], torch_ms=t, ratio=ratio, oa_peak_mib=peak,
                         torch_peak_mib=torch_peak))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
