#!/usr/bin/env python3
"""Runs oa_bench's cases in PyTorch, timed as oa_bench times them, and prints
the ratio table on wall time (PyTorch / oa; above 1 means oa is faster).

Usage: torch_compare.py OA.json [--out TORCH.json] [--device cuda|cpu]
       [--warmup 2] [--warmup-seconds 0.5] [--repeat 5] [--steps 20] [--loops 2] [--max-seconds S]

OA.json is what `oa_bench --out` wrote; every case there is run under the same
name from its kind and parameters (the twin() below). FP32 throughout with
TF32 off, except the f16 / bf16 matmul cases (cuBLAS on the tensor cores). Per case:
  gpu_ms   one step between CUDA events, synchronized, median of --repeat
           (on a CPU: the wall time of one synchronized step);
  wall_ms  wall time per step of --steps steps back to back followed by one
           torch.cuda.synchronize(), the best of --loops loops;
  peak_mib, reserved_mib  torch.cuda.max_memory_allocated over the loops and
           torch.cuda.memory_reserved after them (the cache is emptied
           before each case).
bench/report.py merges OA.json and TORCH.json into docs/performance.md.
"""
import argparse
import datetime
import json
import math
import re
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

import report

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def make_rand(dev):
    def rand(*shape, grad=False):
        return torch.rand(*shape, device=dev, dtype=torch.float32).mul_(2).sub_(1).requires_grad_(grad)
    return rand


def forward_step(fn, backward, dev):
    """The step of fn(), or of fn() then backward with dY = ones of its output's shape and dtype (made once per
    dtype) when `backward`."""
    if not backward:
        return fn
    ones = {}

    def step():
        y = fn()
        if y.dtype not in ones:
            ones[y.dtype] = torch.ones(y.shape, device=dev, dtype=y.dtype)
        torch.autograd.backward(y, ones[y.dtype])
    return step


def attention(q, k, v, causal):
    """A step computing softmax(q k^T / sqrt(D) (+ causal, aligned bottom-right as oa)) v."""
    sq, sk = q.shape[-2], k.shape[-2]
    if hasattr(F, "scaled_dot_product_attention"):
        if not causal:
            return lambda: F.scaled_dot_product_attention(q, k, v)
        if sq == sk:
            return lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True)
        from torch.nn.attention.bias import causal_lower_right
        bias = causal_lower_right(sq, sk)
        return lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
    # PyTorch before 2.0 (Debian's, for CPU checks): the materialised form.
    hidden = torch.ones(sq, sk, dtype=torch.bool, device=q.device).triu(sk - sq + 1) if causal else None

    def materialised():
        s = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
        if hidden is not None:
            s = s.masked_fill(hidden, float("-inf"))
        return torch.softmax(s, dim=-1) @ v
    return materialised


def twin(kind, p, dev):
    """Returns a zero-argument step computing what the oa case computes; a case with "autocast" (f16, bf16)
    runs its step under torch.autocast of that dtype, as oa's under oa::AutocastGuard."""
    step = plain_twin(kind, p, dev)
    if "autocast" not in p:
        return step
    dtype = dict(f16=torch.float16, bf16=torch.bfloat16)[p["autocast"]]

    def autocast_step():
        with torch.autocast(device_type=dev, dtype=dtype):
            return step()
    return autocast_step


def plain_twin(kind, p, dev):
    """The step of `kind` with the parameters p, in f32 (or the dtype p names)."""
    rand = make_rand(dev)
    bwd = p.get("backward", False)
    if kind == "add":
        a, b = rand(p["n"]), rand(p["n"])
        return lambda: a + b
    if kind == "add_loop":
        a, b = rand(p["n"]), rand(p["n"])

        def loop():
            y = a
            for _ in range(p["ops"]):
                y = y + b if p["chained"] else a + b
            return y
        return loop
    if kind == "op_loop":  # independent calls of one small op: add, matmul, or a Linear layer's forward
        a, b = rand(p["n"], p["n"]), rand(p["n"], p["n"])
        layer = torch.nn.Linear(p["n"], p["n"]).to(dev)
        op = dict(add=lambda: a + b, matmul=lambda: a @ b, linear=lambda: layer(a))[p["op"]]

        def calls():
            for _ in range(p["ops"]):
                op()
        return calls
    if kind == "linear":
        x, w = rand(p["m"], p["k"], grad=bwd), rand(p["n"], p["k"], grad=bwd)
        return forward_step(lambda: F.linear(x, w), bwd, dev)
    if kind == "matmul":  # [M, K] @ [K, N] in f32, or f16 / bf16 on the tensor cores (output in that dtype)
        dt = dict(f32=torch.float32, f16=torch.float16, bf16=torch.bfloat16)[p["dtype"]]
        m, n, k = p["m"], p["n"], p["k"]  # A stored [K, M] with trans_a, B stored [N, K] with trans_b
        a = rand(k, m).to(dt).t() if p.get("trans_a") else rand(m, k).to(dt)
        b = rand(n, k).to(dt).t() if p.get("trans_b") else rand(k, n).to(dt)
        return lambda: torch.matmul(a, b)
    if kind in ("bmm", "bmm_nt"):
        n, m, k, q = p["batch"], p["m"], p["k"], p["n"]
        a = rand(n, m, k, grad=bwd)
        if kind == "bmm":
            b = rand(n, k, q, grad=bwd)
            return forward_step(lambda: torch.bmm(a, b), bwd, dev)
        b = rand(n, q, k, grad=bwd)
        return forward_step(lambda: torch.bmm(a, b.transpose(1, 2)), bwd, dev)
    if kind in ("conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d"):
        groups = p["groups"]
        spatial = [p["l"]] if kind.endswith("1d") else [p["h"], p["w"]]
        x = rand(p["n"], p["c_in"], *spatial, grad=bwd)
        ks = [p["k"]] * len(spatial)
        if kind.startswith("conv_transpose"):
            w = rand(p["c_in"], p["c_out"] // groups, *ks, grad=bwd)
        else:
            w = rand(p["c_out"], p["c_in"] // groups, *ks, grad=bwd)
        b = rand(p["c_out"], grad=bwd)
        fn = {"conv1d": F.conv1d, "conv2d": F.conv2d, "conv_transpose1d": F.conv_transpose1d,
              "conv_transpose2d": F.conv_transpose2d}[kind]
        kw = dict(stride=p["stride"], padding=p["padding"], groups=groups)
        return forward_step(lambda: fn(x, w, b, **kw), bwd, dev)
    if kind == "sdpa":
        q = rand(p["b"], p["h"], p["sq"], p["d"], grad=bwd)
        k, v = (rand(p["b"], p["h"], p["sk"], p["d"], grad=bwd) for _ in range(2))
        return forward_step(attention(q, k, v, p["causal"]), bwd, dev)
    if kind == "softmax":
        x = rand(p["batch"], p["rows"], p["cols"], grad=bwd)
        scale = p["scale"]
        if p["masked"]:
            mask = torch.full((p["rows"], p["cols"]), float("-inf"), device=dev).triu(1)
            return forward_step(lambda: torch.softmax(x * scale + mask, dim=-1), bwd, dev)
        if scale == 1.0:
            return forward_step(lambda: torch.softmax(x, dim=-1), bwd, dev)
        return forward_step(lambda: torch.softmax(x * scale, dim=-1), bwd, dev)
    if kind == "layer_norm":
        x, w, b = rand(p["rows"], p["d"], grad=bwd), rand(p["d"], grad=bwd), rand(p["d"], grad=bwd)
        return forward_step(lambda: F.layer_norm(x, (p["d"],), w, b), bwd, dev)
    if kind == "cross_entropy":
        logits = rand(p["n"], p["classes"], grad=bwd)
        targets = torch.randint(0, p["classes"], (p["n"],), device=dev)
        return forward_step(lambda: F.cross_entropy(logits, targets), bwd, dev)
    if kind == "adamw":
        params = [rand(*s, grad=True) for s in p["shapes"]]
        for t in params:
            t.grad = rand(*t.shape)
        opt = torch.optim.AdamW(params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2)
        return opt.step
    if kind in ("lstm", "gru"):
        layer = (torch.nn.LSTM if kind == "lstm" else torch.nn.GRU)(p["input"], p["hidden"], p["layers"]).to(dev)
        x = rand(p["steps"], p["batch"], p["input"], grad=bwd)
        return forward_step(lambda: layer(x)[0], bwd, dev)
    raise ValueError(f"no PyTorch twin for kind {kind}")


MAX_WARMUP_SECONDS = 5.0


def measure(step, dev, t):
    cuda = dev == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    # As oa_bench: the warm-up counts from the end of the first step (which may autotune while the GPU idles and
    # its clocks drop) and goes on in rounds of 8 steps (or 0.1 s) while a round still runs 5% faster per step.
    step()
    sync()
    warm_start, steps, last = time.perf_counter(), 1, 0.0
    while True:
        round_start, n = time.perf_counter(), 0
        while n < 8 and (n == 0 or time.perf_counter() - round_start < 0.1):
            step()
            n += 1
            if n % 4 == 0:
                sync()  # the host waits for the GPU, so the time measured is the GPU's
        sync()
        steps += n
        per_step, elapsed = (time.perf_counter() - round_start) / n, time.perf_counter() - warm_start
        rising = last > 0 and per_step < 0.95 * last
        last = per_step
        if elapsed >= MAX_WARMUP_SECONDS or (steps >= t.warmup and elapsed >= t.warmup_seconds and not rising):
            break
    sync()
    gpu = []
    for _ in range(t.repeat):
        if cuda:
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            step()
            e.record()
            sync()
            gpu.append(s.elapsed_time(e))
        else:
            t0 = time.perf_counter()
            step()
            gpu.append((time.perf_counter() - t0) * 1e3)
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    wall = math.inf
    for _ in range(t.loops):
        t0 = time.perf_counter()
        for _ in range(t.steps):
            step()
        sync()
        wall = min(wall, (time.perf_counter() - t0) * 1e3 / t.steps)
    gpu.sort()
    r = dict(gpu_ms=gpu[len(gpu) // 2], wall_ms=wall)
    if cuda:
        r.update(peak_mib=torch.cuda.max_memory_allocated() / 2**20, reserved_mib=torch.cuda.memory_reserved() / 2**20)
    return r


def device_info(dev):
    if dev != "cuda":
        return dict(device="CPU (" + (subprocess.run(["uname", "-m"], capture_output=True, text=True).stdout.strip()) + ")",
                    driver=f"PyTorch {torch.__version__} CPU, {torch.get_num_threads()} threads")
    try:
        drv = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20).stdout.strip().splitlines()[0]
    except (OSError, IndexError, subprocess.SubprocessError):
        drv = "unknown"
    return dict(device=torch.cuda.get_device_name(), driver=f"NVIDIA {drv}, CUDA {torch.version.cuda}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("oa_results")
    ap.add_argument("--out")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--filter", default=".*", help="regular expression over case names")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--warmup-seconds", type=float, default=0.5, help="untimed steps go on at least this long after the first (the GPU's clocks rise under load)")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--loops", type=int, default=2)
    ap.add_argument("--max-seconds", type=float, default=0, help="start no case after this many seconds (0 = no limit)")
    args = ap.parse_args()
    with open(args.oa_results) as f:
        oa = json.load(f)
    doc = dict(tool="torch_compare", date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
               torch=torch.__version__, tf32=False, **device_info(args.device),
               timing=dict(warmup=args.warmup, warmup_seconds=args.warmup_seconds, repeat=args.repeat, steps=args.steps, loops=args.loops), cases=[])
    print(f"PyTorch {torch.__version__} on {doc['device']}; oa_bench estimated {oa.get('estimate_h200_s', 0):.0f} s "
          "for its side on an H200, this side about as much")
    start = time.perf_counter()
    oa["cases"] = [c for c in oa["cases"] if re.search(args.filter, c["name"])]
    for c in oa["cases"]:
        r = dict(name=c["name"], family=c["family"], kind=c["kind"])
        if c.get("error", "").startswith("skipped"):
            r["error"] = "skipped: oa_bench skipped it"
        elif args.max_seconds and time.perf_counter() - start > args.max_seconds:
            r["error"] = "skipped: --max-seconds reached"
        else:
            t0 = time.perf_counter()
            try:
                r.update(measure(twin(c["kind"], c["params"], args.device), args.device, args))
            except Exception as e:  # report and go on: one failing twin must not hide the rest
                r["error"] = f"{type(e).__name__}: {e}"
            r["seconds"] = time.perf_counter() - t0
            if args.device == "cuda":
                torch.cuda.empty_cache()
        doc["cases"].append(r)
        if args.out:
            with open(args.out, "w") as f:
                json.dump(doc, f, indent=1)
    print(report.text_table(report.merge(oa, doc)))
    print(f"torch_compare: {len(doc['cases'])} cases in {time.perf_counter() - start:.1f} s")
    return 1 if any("error" in r for r in doc["cases"]) else 0


if __name__ == "__main__":
    sys.exit(main())
