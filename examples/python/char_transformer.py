#!/usr/bin/env python3
"""The character transformer of `oa train text` in Python, run for run the same.

The same model (apps/oa/models.cpp's CharTransformer: byte and position
embeddings, pre-norm causal TransformerBlocks, a final LayerNorm, a linear head
to 256 byte logits), initialised as the C++ model from the same seed, the same
random windows (oa.data.TextLoader is oa train's TextLoader), AdamW (weight
decay 0.1, gradients clipped to norm 1), the same learning rate (5% warmup,
then a cosine to lr / 10) and the same validation: bits per character over
non-overlapping windows of the held-out last 5% (at most 64 batches).

    PYTHONPATH=build/python /usr/bin/python3 examples/python/char_transformer.py --quick

It prints the `oa train text` command line of the same run.
"""
import argparse
import math
import time

import numpy as np

import oa
import oa.nn as nn
import oa.nn.functional as F

try:
    from tqdm import tqdm
except ImportError:
    tqdm = None

VOCABULARY = 256


class CharTransformer(nn.Module):
    """tokens int32 [B, T] (T <= context) -> logits [B, T, 256]."""

    def __init__(self, context, layers, heads, width):
        super().__init__()
        self.tok = nn.Embedding(VOCABULARY, width)
        self.pos = nn.Embedding(context, width)
        self.blocks = nn.Sequential(*[nn.TransformerBlock(width, heads, causal=True) for _ in range(layers)])
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, VOCABULARY)
        self.positions = {}  # T -> int32 [T] 0 .. T - 1, uploaded once per window length

    def forward(self, tokens):
        t = tokens.shape[-1]
        if t not in self.positions:
            self.positions[t] = oa.tensor(np.arange(t, dtype=np.int32))
        x = self.tok(tokens) + self.pos(self.positions[t])
        return self.head(self.norm(self.blocks(x)))


def validation_bpc(model, text, context, batch_size):
    """Mean cross entropy in bits per character over the non-overlapping windows of text."""
    windows = oa.data.DataLoader(oa.data.TextDataset(text, context, stride=context), batch_size=batch_size)
    if len(windows) == 0:
        raise SystemExit("the validation text is shorter than one context window")
    total, count = None, 0
    with oa.no_grad():
        for b, (tokens, targets) in enumerate(windows):
            if b == 64:
                break
            n = tokens.numel()
            loss = F.cross_entropy(model(tokens).reshape(n, VOCABULARY), targets.reshape(n), reduction="sum")
            total = loss if total is None else total + loss
            count += n
    return total.item() / count / math.log(2)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", help="training text (default: Debian's fortunes)")
    parser.add_argument("--context", type=int, default=128, help="tokens per window")
    parser.add_argument("--layers", type=int, default=4, help="transformer blocks")
    parser.add_argument("--heads", type=int, default=4, help="attention heads")
    parser.add_argument("--width", type=int, default=256, help="model width")
    parser.add_argument("--steps", type=int, default=3000, help="optimizer steps")
    parser.add_argument("--batch-size", type=int, default=64, help="windows per step")
    parser.add_argument("--eval-every", type=int, default=250, help="steps between validations")
    parser.add_argument("--lr", type=float, default=1e-3, help="peak AdamW learning rate")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true",
                        help="a small run for CPU devices: --context 64 --layers 2 --heads 2 --width 64 --steps 200 "
                             "--batch-size 16 --eval-every 100")
    args = parser.parse_args()
    if args.quick:
        for name, value in dict(context=64, layers=2, heads=2, width=64, steps=200, batch_size=16,
                                eval_every=100).items():
            if getattr(args, name) == parser.get_default(name):
                setattr(args, name, value)
    if args.width % args.heads:
        parser.error(f"--width {args.width} is not divisible by --heads {args.heads}")

    train, validation = oa.data.split_text(oa.data.read_text(args.input), 0.05)
    flags = (f"--context {args.context} --layers {args.layers} --heads {args.heads} --width {args.width} "
             f"--steps {args.steps} --batch-size {args.batch_size} --eval-every {args.eval_every} --lr {args.lr} "
             f"--seed {args.seed}" + (f" --input {args.input}" if args.input else ""))
    print(f"char_transformer.py: {len(train)} training / {len(validation)} validation bytes on "
          f"{oa.default_engine().device.name}; the same run as: oa train text {flags}")
    oa.manual_seed(args.seed)
    model = CharTransformer(args.context, args.layers, args.heads, args.width)
    optimizer = oa.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.1)
    loader = oa.data.TextLoader(train, args.batch_size, args.context, seed=args.seed, steps=args.steps)
    print(f"model: {sum(p.numel() for p in model.parameters())} parameters")

    bar = tqdm(total=args.steps, unit="step") if tqdm else None
    t0 = time.perf_counter()
    n = args.batch_size * args.context
    for step, (tokens, targets) in enumerate(loader):
        optimizer.lr = oa.optim.warmup_cosine_lr(step, args.lr, args.steps // 20, args.steps, args.lr / 10)
        loss = F.cross_entropy(model(tokens).reshape(n, VOCABULARY), targets.reshape(n))
        optimizer.zero_grad()
        loss.backward()
        oa.optim.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        if bar:
            bar.update(1)
        if (step + 1) % 25 == 0 or step + 1 == args.steps:  # a host read waits for the GPU: every 25 steps, as oa train
            value = loss.item()
            if bar:
                bar.set_postfix(loss=f"{value:.4f}")
            else:
                print(f"step {step + 1}/{args.steps}: loss {value:.4f}", flush=True)
        if (step + 1) % args.eval_every == 0 or step + 1 == args.steps:
            bpc = validation_bpc(model, validation, args.context, args.batch_size)
            seconds = time.perf_counter() - t0
            print(f"step {step + 1}: validation {bpc:.3f} bits per character ({(step + 1) * n / seconds:.0f} tokens/s)",
                  flush=True)
    if bar:
        bar.close()


if __name__ == "__main__":
    main()
