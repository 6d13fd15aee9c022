"""The PyTorch pieces the twins share: FP32 device set-up, oa's attention
modules (with oa::ml::nn's parameter names, so that oa's checkpoints load as
state_dicts) and oa's safetensors files. (common.py holds what needs no torch.)
"""
import contextlib
import json
import math
import struct
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F


def fp32_device(name=None):
    """torch.device(name), default cuda if there is one, else cpu; with TF32 off (FP32 as oa computes)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    return torch.device(name or ("cuda" if torch.cuda.is_available() else "cpu"))


PRECISIONS = ("fp32", "fp16", "bf16")  # oa train --precision


def _require_precision(device, precision):
    """Exits naming the flag for --precision fp16 on a CPU, which torch's CPU autocast does not offer."""
    if precision == "fp16" and device.type == "cpu":
        sys.exit("--precision fp16: torch's autocast on the CPU offers bf16 only; use bf16 or fp32, or a CUDA device")


def autocast(device, precision):
    """torch.autocast to F16 / BF16 for --precision fp16 / bf16 (oa's AutocastGuard); no context at all for fp32
    (older torch refuses even a disabled CPU autocast of F16)."""
    if precision == "fp32":
        return contextlib.nullcontext()
    _require_precision(device, precision)
    return torch.autocast(device.type, dtype={"fp16": torch.float16, "bf16": torch.bfloat16}[precision])


def grad_scaler(device, precision):
    """The loss scaler of --precision (enabled for fp16 only): torch.amp.GradScaler, or torch.cuda.amp's in a torch
    older than 2.3 (there a disabled one serves the CPU too). Created before any work, it refuses fp16 on a CPU."""
    _require_precision(device, precision)
    enabled = precision == "fp16"
    if hasattr(torch.amp, "GradScaler"):
        return torch.amp.GradScaler(device.type, enabled=enabled)
    return torch.cuda.amp.GradScaler(enabled=enabled)


def device_name(device):
    return torch.cuda.get_device_name(device) if device.type == "cuda" else "CPU"


def synchronize(device):
    """Waits for the device's queued work (to time it)."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)


class MultiHeadAttention(nn.Module):
    """oa::ml::nn::MultiHeadAttention without dropout: x [B, S, D] -> [B, S, D]."""

    def __init__(self, width, heads, causal=False):
        super().__init__()
        self.heads = heads
        self.causal = causal
        self.qkv = nn.Linear(width, 3 * width)  # rows: q, then k, then v
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        # [B, S, D] -> [B, H, S, D / H]; head h holds columns h * D / H ... (oa::ml::split_heads).
        q, k, v = (t.reshape(b, s, self.heads, d // self.heads).transpose(1, 2) for t in (q, k, v))
        # The default scale is 1 / sqrt(D / H), as oa's.
        o = attention(q, k, v, self.causal)
        return self.proj(o.transpose(1, 2).reshape(b, s, d))


def attention(q, k, v, causal):
    """softmax(q k^T / sqrt(d)) v over [B, H, S, d], a query attending to no later key when `causal`:
    F.scaled_dot_product_attention, spelled out in a torch older than 2.0 that lacks it."""
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        later = torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool, device=q.device).triu(1)
        scores = scores.masked_fill(later, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


class TransformerBlock(nn.Module):
    """oa::ml::nn::TransformerBlock without dropout: x + attn(norm1(x)), then + mlp(norm2(.)), exact GELU."""

    def __init__(self, width, heads, causal=False):
        super().__init__()
        self.norm1 = nn.LayerNorm(width, eps=1e-5)
        self.attn = MultiHeadAttention(width, heads, causal)
        self.norm2 = nn.LayerNorm(width, eps=1e-5)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(approximate="none"), nn.Linear(4 * width, width))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class StepProfile:
    """oa train's --profile for a twin: CUDA time per kernel and per op (torch.profiler) over the training steps after
    the first 3 (fewer in a shorter run), up to the first validation, the end or 50 steps (the profiler's events grow
    with every step). Call before_step() before each step
    and stop() before a validation and at the end: the first stop() prints the tables and writes the JSON file `path`
    {"steps", "after_steps", "gpu_ms_per_step", "kernels": [{"name", "calls", "gpu_ms", "gpu_ms_per_step"}],
    "ops": [{"name", "calls", "gpu_ms", "gpu_ms_per_step"}]}: kernels by self time (their sum is the GPU time); ops
    (aten ops, autograd backward nodes, optimizer steps) by the total of their kernels and their children's, so that
    nested ops overlap."""

    WARMUP_STEPS, MAX_STEPS = 3, 50

    def __init__(self, path, steps, device):
        self.path, self.device = path, device
        self.skip = min(self.WARMUP_STEPS, steps - 1)
        self.seen, self.profiler, self.done = 0, None, False

    def before_step(self):
        if self.seen == self.skip + self.MAX_STEPS:
            self.stop()
        if self.path and self.seen == self.skip and not self.done:
            synchronize(self.device)
            self.profiler = torch.profiler.profile(
                activities=[torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA])
            self.profiler.__enter__()
        self.seen += 1

    def stop(self):
        if self.profiler is None or self.done:
            return
        synchronize(self.device)
        self.profiler.__exit__(None, None, None)
        self.done = True
        steps = self.seen - self.skip
        kernels, ops = [], []
        for e in self.profiler.key_averages():
            if getattr(e, "is_user_annotation", False):
                continue  # the GPU range of a record_function (AdamW.step), not a kernel
            if e.device_type == torch.autograd.DeviceType.CUDA:
                kernels.append((e.key, e.count, e.self_device_time_total / 1e3))
            elif e.device_time_total > 0:
                ops.append((e.key, e.count, e.device_time_total / 1e3))
        total = sum(k[2] for k in kernels)
        rows = lambda items: [{"name": n, "calls": c, "gpu_ms": ms, "gpu_ms_per_step": ms / steps}
                              for n, c, ms in sorted(items, key=lambda x: -x[2])]
        with open(self.path, "w") as f:
            json.dump({"steps": steps, "after_steps": self.skip, "gpu_ms_per_step": total / steps,
                       "kernels": rows(kernels), "ops": rows(ops)}, f, indent=1)
        print(f"GPU time over {steps} training step(s) after the first {self.skip}, per step ({self.path}): "
              f"{total / steps:.4f} ms")
        for title, items in (("kernel", kernels), ("op (with its children)", ops)):
            print(f"{title[:90]:<90} {'calls/step':>10} {'gpu ms/step':>12}")
            for r in rows(items)[:40]:
                print(f"{r['name'][:90]:<90} {r['calls'] / steps:>10.4g} {r['gpu_ms_per_step']:>12.4f}")
        sys.stdout.flush()


def _read_header(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    return blob, n, json.loads(blob[8:8 + n])


def read_safetensors(path):
    """The F32 tensors of a safetensors file (as oa::ml::save_safetensors writes them), by name."""
    blob, n, header = _read_header(path)
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if entry["dtype"] != "F32":
            sys.exit(f"{path}: tensor {name} is {entry['dtype']}, not F32")
        begin, end = (8 + n + offset for offset in entry["data_offsets"])
        values = torch.frombuffer(bytearray(blob[begin:end]), dtype=torch.float32) if end > begin else torch.zeros(0)
        tensors[name] = values.reshape(entry["shape"]).clone()
    return tensors


def safetensors_metadata(path):
    """The string metadata of a safetensors file ({} if none)."""
    return _read_header(path)[2].get("__metadata__", {})
