#!/usr/bin/env python3
"""The PyTorch twin of `oa train fashion-mnist`.

Everything but the random initial values matches oa (apps/oa/models.cpp,
apps/oa/train_images.cpp): the architectures and their parameter names,
PyTorch's default initialisation (which oa follows; the ViT's position
embedding N(0, 0.02)), the normalised pixels bit for bit, the sample order of
every epoch (common.epoch_order), batches of 128 with the last partial batch
kept, AdamW (betas 0.9 / 0.999, eps 1e-8, weight decay 1e-4 for the convnet and
0.05 for the ViT), the learning rate of every step (linear warmup over the
first 5% of all steps, then a cosine to 0), and the evaluation on the 10 000
test images in order, in batches of 500, after every epoch. FP32 throughout
(TF32 off), or with --precision fp16 / bf16 as oa's: torch.autocast(device_type,
dtype) around the forward pass and the loss (and the evaluation), and for fp16
torch.amp.GradScaler; the master weights and AdamW's state stay FP32.

    python3 bench/twins/fashion_mnist.py --model convnet|vit [--epochs N] [--batch-size 128]
        [--lr 1e-3] [--seed 0] [--data DIR] [--out FILE.jsonl] [--quick] [--precision fp32|fp16|bf16]
    python3 bench/twins/fashion_mnist.py --eval-checkpoint RUN/model.safetensors [--data DIR]

Writes one JSON line per epoch (epoch, train_loss, test_loss, test_accuracy,
seconds, images_per_second) to --out, as oa writes metrics.jsonl; `seconds`
times the training steps of the epoch (not the evaluation), as oa does.
--quick is oa's --quick: the small networks, one epoch unless --epochs is given.

--eval-checkpoint loads a model.safetensors written by `oa train
fashion-mnist` into the twin's model (same parameter names and shapes) and
evaluates it on the test split in FP32: for a checkpoint of an fp32 run its
figures must equal `oa eval`'s (up to float rounding), which checks that the
two networks compute the same function. (`oa eval` evaluates under the
precision the run recorded, and torch's autocast covers other ops than oa's,
so for fp16 / bf16 runs the figures differ in their last digits.)
"""
import argparse
import json
import math
import os
import struct
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from torch_common import (PRECISIONS, TransformerBlock, autocast, device_name, fp32_device, grad_scaler,  # noqa: E402
                          read_safetensors, safetensors_metadata, synchronize)

# oa's kFashionMnistNormalization (f32 constants).
MEAN, STD = 0.2860, 0.3530
WEIGHT_DECAY = {"convnet": 1e-4, "vit": 0.05}
# What `oa train fashion-mnist --model <kind> [--quick]` prints as "model: N parameters".
PARAMETERS = {("convnet", False): 421642, ("vit", False): 1199626, ("convnet", True): 9098, ("vit", True): 27914}
TEST_BATCH = 500


def f32(x):
    """x rounded to the nearest float32, as a Python float."""
    return struct.unpack("f", struct.pack("f", x))[0]


# ── Models (oa's module trees, with the same parameter names) ────────────────

def convnet(quick=False):
    """make_image_model convnet:
    full:  [1→32, ReLU, pool] [32→64, ReLU, pool] → 3136 → 128 → ReLU → 10
    quick: [1→8, stride 2, ReLU] [8→16, stride 2, ReLU] → 784 → 10"""
    if quick:
        return nn.Sequential(
            nn.Conv2d(1, 8, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU(),
            nn.Flatten(), nn.Linear(16 * 7 * 7, 10))
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))


class VisionTransformer(nn.Module):
    """make_image_model vit: 4x4 patches, a learned position embedding, pre-norm blocks, mean pooling
    over the 49 tokens (no class token), a linear head; full D 128, 4 heads, 6 blocks (quick 32, 2, 2)."""

    def __init__(self, dim=128, heads=4, depth=6):
        super().__init__()
        self.pos = nn.Parameter(torch.empty(49, dim).normal_(0.0, 0.02))
        self.patch = nn.Conv2d(1, dim, 4, stride=4)
        self.blocks = nn.Sequential(*[TransformerBlock(dim, heads) for _ in range(depth)])  # not causal
        self.norm = nn.LayerNorm(dim, eps=1e-5)
        self.head = nn.Linear(dim, 10)

    def forward(self, x):
        tokens = self.patch(x).flatten(2).transpose(1, 2) + self.pos  # [B, 49, D]
        return self.head(self.norm(self.blocks(tokens)).mean(dim=1))


def make_model(kind, quick):
    model = convnet(quick) if kind == "convnet" else VisionTransformer(*((32, 2, 2) if quick else (128, 4, 6)))
    count = sum(p.numel() for p in model.parameters())
    if count != PARAMETERS[(kind, quick)]:
        raise SystemExit(f"the {kind} has {count} parameters; oa's has {PARAMETERS[(kind, quick)]}")
    return model


# ── Data ─────────────────────────────────────────────────────────────────────

def load_split(data_dir, split, device):
    """Fashion-MNIST `split` ("train" or "t10k") on `device`: normalised images [N, 1, 28, 28] f32, labels [N] i64."""
    dims, pixels = common.read_idx(os.path.join(data_dir, f"{split}-images-idx3-ubyte.gz"))
    label_dims, labels = common.read_idx(os.path.join(data_dir, f"{split}-labels-idx1-ubyte.gz"))
    if len(dims) != 3 or len(label_dims) != 1 or dims[0] != label_dims[0]:
        raise ValueError(f"{data_dir}: {split} images {dims} and labels {label_dims} do not match")
    # oa's table: float((p / 255.0 - double(mean_f32)) / double(std_f32)) for each byte value p.
    mean, std = f32(MEAN), f32(STD)
    table = torch.tensor([(p / 255.0 - mean) / std for p in range(256)], dtype=torch.float64).float().to(device)
    raw = torch.frombuffer(bytearray(pixels), dtype=torch.uint8).to(device)
    images = table[raw.long()].reshape(dims[0], 1, dims[1], dims[2])
    targets = torch.frombuffer(bytearray(labels), dtype=torch.uint8).to(device).long()
    if int(targets.max()) >= 10:
        raise ValueError(f"{data_dir}: {split} labels outside 0..9")
    return images, targets


@torch.no_grad()
def evaluate(model, images, labels, precision="fp32"):
    """Mean cross entropy and accuracy over the test split, in order, in batches of 500 (under autocast for fp16 / bf16)."""
    model.eval()
    loss_sum = torch.zeros((), device=images.device)
    correct = torch.zeros((), device=images.device, dtype=torch.long)
    for first in range(0, images.shape[0], TEST_BATCH):
        x, y = images[first:first + TEST_BATCH], labels[first:first + TEST_BATCH]
        with autocast(images.device, precision):
            logits = model(x)
            loss_sum += F.cross_entropy(logits, y, reduction="sum")
        correct += (logits.argmax(dim=1) == y).sum()
    model.train()
    n = images.shape[0]
    return loss_sum.item() / n, correct.item() / n


def eval_checkpoint(path, data_dir, device):
    meta = json.loads(safetensors_metadata(path).get("oa.run", "null"))
    flags = meta.get("model") if isinstance(meta, dict) and meta.get("task") == "fashion-mnist" else None
    if not isinstance(flags, dict) or "model" not in flags or "quick" not in flags:
        raise SystemExit(f"{path} was not written by oa train fashion-mnist (no oa.run metadata of that task)")
    model = make_model(flags["model"], flags["quick"])
    model.load_state_dict(read_safetensors(path), strict=True)
    test_x, test_y = load_split(data_dir, "t10k", device)
    loss, accuracy = evaluate(model.to(device), test_x, test_y)
    print(f"{path} ({flags['model']}{' quick' if flags['quick'] else ''}, step {meta.get('step')}) in torch, fp32: "
          f"test accuracy {100 * accuracy:.2f}%, test loss {loss:.6f} ({test_x.shape[0]} images)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", choices=["convnet", "vit"], default="convnet")
    ap.add_argument("--epochs", type=int, default=None, help="default 10, or 1 with --quick (as oa)")
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--out", default=None, help="metrics file (default runs/torch-fashion-mnist-<model>.jsonl)")
    ap.add_argument("--quick", action="store_true", help="oa's --quick: the small network, one epoch")
    ap.add_argument("--precision", choices=PRECISIONS, default="fp32", help="as oa train fashion-mnist --precision")
    ap.add_argument("--eval-checkpoint", metavar="FILE", help="evaluate an oa model.safetensors instead of training")
    args = ap.parse_args()
    if args.epochs is None:
        args.epochs = 1 if args.quick else 10
    if args.epochs < 1 or args.batch_size < 1 or not (args.lr > 0 and math.isfinite(args.lr)):
        ap.error("--epochs and --batch-size must be >= 1 and --lr a finite number above 0")
    out = args.out or f"runs/torch-fashion-mnist-{args.model}{'-quick' if args.quick else ''}.jsonl"

    device = fp32_device()
    if args.eval_checkpoint:
        return eval_checkpoint(args.eval_checkpoint, args.data, device)
    torch.manual_seed(args.seed)
    print(f"torch {torch.__version__} fashion-mnist twin: model {args.model}{' (quick)' if args.quick else ''}, "
          f"{args.precision} on {device_name(device)} — metrics in {out}", flush=True)

    train_x, train_y = load_split(args.data, "train", device)
    test_x, test_y = load_split(args.data, "t10k", device)
    model = make_model(args.model, args.quick).to(device)
    count = sum(p.numel() for p in model.parameters())
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.999), eps=1e-8,
                                  weight_decay=WEIGHT_DECAY[args.model])
    n = train_x.shape[0]
    steps = (n + args.batch_size - 1) // args.batch_size  # the last partial batch is kept
    total = args.epochs * steps
    warmup = total // 20
    print(f"model: {count} parameters; {n} training images in batches of {args.batch_size}, {args.epochs} epoch(s); "
          f"AdamW, weight decay {WEIGHT_DECAY[args.model]}, lr {args.lr} after {warmup} warmup steps, "
          f"cosine to 0 at step {total}", flush=True)

    scaler = grad_scaler(device, args.precision)
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    open(out, "w").close()
    model.train()
    row = None
    for epoch in range(args.epochs):
        order = torch.tensor(common.epoch_order(n, args.seed, epoch), dtype=torch.long, device=device)
        synchronize(device)
        t0 = time.perf_counter()
        loss_sum = torch.zeros((), device=device)
        seen = 0
        for step in range(steps):
            index = order[step * args.batch_size:(step + 1) * args.batch_size]
            x, y = train_x[index], train_y[index]
            lr = f32(common.warmup_cosine_lr(epoch * steps + step, args.lr, warmup, total, 0.0))
            for group in optimizer.param_groups:
                group["lr"] = lr
            with autocast(device, args.precision):
                loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
            loss_sum += loss.detach() * y.shape[0]
            seen += y.shape[0]
            if (step + 1) % 25 == 0 or step + 1 == steps:  # oa reads the loss as often (progress, divergence)
                value = loss.item()
                if not math.isfinite(value):
                    raise SystemExit(f"training diverged: loss {value} at epoch {epoch + 1} step {step + 1}")
        synchronize(device)
        seconds = time.perf_counter() - t0
        test_loss, test_accuracy = evaluate(model, test_x, test_y, args.precision)
        row = {"epoch": epoch + 1, "train_loss": loss_sum.item() / seen, "test_loss": test_loss,
               "test_accuracy": test_accuracy, "seconds": seconds, "images_per_second": seen / seconds}
        with open(out, "a") as f:
            f.write(json.dumps(row) + "\n")
        print(f"epoch {row['epoch']}: train loss {row['train_loss']:.4f}, test loss {test_loss:.4f}, "
              f"test accuracy {100 * test_accuracy:.2f}% ({seconds:.1f} s, {row['images_per_second']:.0f} images/s)",
              flush=True)
    print(f"done: test accuracy {100 * row['test_accuracy']:.2f}%, test loss {row['test_loss']:.4f} after "
          f"{args.epochs} epoch(s); metrics {out}", flush=True)


if __name__ == "__main__":
    main()
