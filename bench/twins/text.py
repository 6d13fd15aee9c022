#!/usr/bin/env python3
"""The PyTorch twin of `oa train text`: the same byte-level transformer, data,
batches, loss, optimizer, schedule, clipping and validation metric; only the
random initial values differ (both use PyTorch's default initialisation).

Usage: text.py [--input FILE | --fortunes DIR] [--context N] [--layers N]
               [--heads N] [--width N] [--steps N] [--batch-size B]
               [--eval-every N] [--lr X] [--seed S] [--device D]
               [--precision fp32|fp16|bf16]
               [--init FILE.safetensors] [--out FILE.jsonl] [--profile FILE.json]

What it mirrors (apps/oa/train_text.cpp, apps/oa/models.cpp):
- data: the --input bytes, or Debian's fortunes concatenated
  (common.fortune_text); the last 5% held out for validation (common.split_text);
- batch `step`: windows of context + 1 bytes starting at
  common.text_window_starts(len(train), context, batch_size, seed, step);
- model: token (256 x D) and position (context x D) embeddings, `layers`
  pre-norm blocks (LayerNorm eps 1e-5, fused qkv Linear(D, 3D) split into q,
  k, v, causal scaled dot-product attention with scale 1/sqrt(D / H), output
  Linear(D, D), MLP Linear(D, 4D) - exact GELU - Linear(4D, D)), a final
  LayerNorm and a Linear(D, 256) head with bias;
- loss: mean cross entropy over every position of the batch;
- AdamW (betas 0.9 / 0.999, eps 1e-8, weight decay 0.1 on every parameter),
  the learning rate of step s = warmup_cosine_lr(s, lr, steps // 20, steps,
  lr / 10) set before the step, gradients clipped to total norm 1;
- validation bits per character every eval_every steps and after the last:
  non-overlapping windows of the validation text (at most 64 * batch_size),
  summed cross entropy / positions / ln 2;
- tokens_per_second: tokens trained on so far / seconds since the first step
  (validation time included, as oa's).
FP32 throughout with TF32 off, or with --precision fp16 / bf16 as oa's:
torch.autocast(device_type, dtype) around the forward pass and the loss (and
the validation), and for fp16 torch.amp.GradScaler (gradients unscaled
before clipping); the master weights and AdamW's state stay FP32. Writes one JSON line per validation to --out,
with the keys of oa's metrics.jsonl. --init starts from given weights
instead (a safetensors file with oa's parameter names, which are this
model's state_dict keys), to follow oa step by step from the same start.
--profile FILE.json times the training steps' CUDA kernels and ops as oa train
text --profile does (torch_common.StepProfile), over the steps after the
first 3 up to the first validation (at most 50).
"""
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from torch_common import (PRECISIONS, StepProfile, TransformerBlock, autocast, device_name, fp32_device, grad_scaler,  # noqa: E402
                          read_safetensors, synchronize)

VOCABULARY = 256


class CharTransformer(nn.Module):
    """apps/oa/models.cpp's CharTransformer: tokens [B, T] -> logits [B, T, 256]."""

    def __init__(self, context, layers, heads, width):
        super().__init__()
        self.tok = nn.Embedding(VOCABULARY, width)
        self.pos = nn.Embedding(context, width)
        self.blocks = nn.Sequential(*[TransformerBlock(width, heads, causal=True) for _ in range(layers)])
        self.norm = nn.LayerNorm(width, eps=1e-5)
        self.head = nn.Linear(width, VOCABULARY)

    def forward(self, tokens):
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.tok(tokens) + self.pos(positions)
        return self.head(self.norm(self.blocks(x)))


def byte_tensor(data, device):
    """bytes -> int64 tensor on `device` (no numpy)."""
    if not data:
        return torch.zeros(0, dtype=torch.int64, device=device)
    return torch.frombuffer(bytearray(data), dtype=torch.uint8).to(device=device, dtype=torch.int64)


def windows(text, starts, context):
    """Rows text[s : s + context + 1] for each start s (a 1-D int64 tensor)."""
    offsets = torch.arange(context + 1, device=text.device)
    rows = text[starts[:, None] + offsets[None, :]]
    return rows[:, :-1], rows[:, 1:]


@torch.no_grad()
def validation_bpc(model, text, context, batch_size, precision):
    """train_text.cpp's validation_bpc, under autocast for --precision fp16 / bf16."""
    count_windows = min((text.numel() - 1) // context, 64 * batch_size)
    total = torch.zeros((), dtype=torch.float32, device=text.device)
    count = 0
    for w0 in range(0, count_windows, batch_size):
        b = min(batch_size, count_windows - w0)
        starts = torch.arange(w0, w0 + b, device=text.device) * context
        tokens, targets = windows(text, starts, context)
        with autocast(text.device, precision):
            logits = model(tokens)
            total = total + F.cross_entropy(logits.reshape(b * context, VOCABULARY), targets.reshape(b * context), reduction="sum")
        count += b * context
    return total.item() / count / math.log(2.0)


def clock(seconds):
    s = int(seconds + 0.5)
    return f"{s // 3600}:{s // 60 % 60:02}:{s % 60:02}" if s >= 3600 else f"{s // 60:02}:{s % 60:02}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = p.add_mutually_exclusive_group()
    source.add_argument("--input", help="a text file (default: the fortunes)")
    source.add_argument("--fortunes", default="/usr/share/games/fortunes", help="a fortune directory")
    p.add_argument("--context", type=int, default=128)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--eval-every", type=int, default=250)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--precision", choices=PRECISIONS, default="fp32", help="as oa train text --precision")
    p.add_argument("--init", help="initial weights (safetensors, oa's parameter names)")
    p.add_argument("--out", help="metrics file (JSON lines)")
    p.add_argument("--profile", metavar="FILE", help="write the training steps' CUDA time per kernel and op to FILE (JSON)")
    args = p.parse_args()
    for name in ("context", "layers", "heads", "width", "steps", "batch_size", "eval_every"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be at least 1")
    if not (math.isfinite(args.lr) and args.lr > 0):
        p.error("--lr must be a finite number above 0")
    if args.width % args.heads:
        p.error(f"--width {args.width} is not divisible by --heads {args.heads}")

    device = fp32_device(args.device)

    data = open(args.input, "rb").read() if args.input else common.fortune_text(args.fortunes)
    train_bytes, validation_bytes = common.split_text(data, 0.05)
    if len(train_bytes) < args.context + 1:
        p.error(f"the training text ({len(train_bytes)} bytes) is shorter than --context + 1")
    if (len(validation_bytes) - 1) // args.context < 1:
        p.error(f"the validation text ({len(validation_bytes)} bytes) is shorter than one context window")
    print(f"text.py (PyTorch {torch.__version__}): {len(train_bytes)} training / {len(validation_bytes)} validation bytes "
          f"from {args.input or args.fortunes} on {device_name(device)}", flush=True)
    train = byte_tensor(train_bytes, device)
    validation = byte_tensor(validation_bytes, device)

    torch.manual_seed(args.seed)
    model = CharTransformer(args.context, args.layers, args.heads, args.width)
    if args.init:
        model.load_state_dict(read_safetensors(args.init))
    model = model.to(device)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.1)
    parameters = sum(t.numel() for t in model.parameters())
    print(f"model: {parameters} parameters ({args.layers} layers, {args.heads} heads, width {args.width}, "
          f"context {args.context}); {args.precision}", flush=True)
    scaler = grad_scaler(device, args.precision)

    metrics = open(args.out, "w") if args.out else None
    tokens_per_step = args.batch_size * args.context
    synchronize(device)
    t0 = time.perf_counter()
    last_print = t0
    bpc = float("nan")
    profile = StepProfile(args.profile, args.steps, device)
    for step in range(args.steps):
        profile.before_step()
        lr = common.warmup_cosine_lr(step, args.lr, args.steps // 20, args.steps, args.lr / 10)
        for group in optimizer.param_groups:
            group["lr"] = lr
        starts = common.text_window_starts(len(train_bytes), args.context, args.batch_size, args.seed, step)
        tokens, targets = windows(train, torch.tensor(starts, dtype=torch.int64, device=device), args.context)
        with autocast(device, args.precision):
            logits = model(tokens)
            loss = F.cross_entropy(logits.reshape(tokens_per_step, VOCABULARY), targets.reshape(tokens_per_step))
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        last = step + 1 == args.steps
        if (step + 1) % 25 == 0 or last:
            value = loss.item()
            if not math.isfinite(value):
                sys.exit(f"text.py: training diverged: loss {value} at step {step + 1}; try a lower --lr")
            now = time.perf_counter()
            if now - last_print >= 10.0 or last:
                last_print = now
                elapsed = now - t0
                done = step + 1
                print(f"train text step {done}/{args.steps} loss {value:.4f} {done * tokens_per_step / elapsed:.0f} tok/s "
                      f"elapsed {clock(elapsed)} eta {clock(elapsed / done * (args.steps - done))}", flush=True)
        if (step + 1) % args.eval_every == 0 or last:
            profile.stop()
            model.eval()
            bpc = validation_bpc(model, validation, args.context, args.batch_size, args.precision)
            model.train()
            synchronize(device)
            seconds = time.perf_counter() - t0
            row = {"step": step + 1, "train_loss": loss.item(), "validation_bpc": bpc,
                   "tokens_per_second": (step + 1) * tokens_per_step / seconds}
            if metrics:
                metrics.write(json.dumps(row) + "\n")
                metrics.flush()
            print(f"step {step + 1}: validation {bpc:.3f} bits per character ({row['tokens_per_second']:.0f} tokens/s)",
                  flush=True)
    if metrics:
        metrics.close()
    print(f"done: validation {bpc:.3f} bits per character after {args.steps} steps"
          + (f"; metrics {args.out}" if args.out else ""), flush=True)


if __name__ == "__main__":
    main()
