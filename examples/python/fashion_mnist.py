#!/usr/bin/env python3
"""The convnet of `oa train fashion-mnist` in Python, run for run the same.

The same model (apps/oa/models.cpp: two 3x3 convolution blocks, then the
classifier; --quick: the small one), the same initialisation (oa.manual_seed
then the layers in the same order, as the C++ model draws from
Generator(seed)), the same batches (oa.data.DataLoader's epoch order is
ImageLoader's), AdamW (weight decay 1e-4) and the same per-step learning rate
(5% linear warmup, then a cosine to 0). So from the same seed it ends at the
test accuracy `oa train fashion-mnist` reports.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/fashion_mnist.py --quick

--steps N stops each epoch after N steps (a smoke run: the schedule is still
that of full epochs); --data names another directory of the IDX files.
"""
import argparse
import time

import oa
import oa.nn as nn
import oa.nn.functional as F

try:
    from tqdm import tqdm
except ImportError:
    tqdm = None


def convnet(quick):
    """apps/oa/models.cpp's make_convnet: [B, 1, 28, 28] -> logits [B, 10]."""
    c1, c2, s = (8, 16, 2) if quick else (32, 64, 1)
    layers = [nn.Conv2d(1, c1, 3, stride=s, padding=1), nn.ReLU()]
    if not quick:
        layers.append(nn.MaxPool2d(2))
    layers += [nn.Conv2d(c1, c2, 3, stride=s, padding=1), nn.ReLU()]
    if not quick:
        layers.append(nn.MaxPool2d(2))
    layers.append(nn.Flatten())
    if quick:
        layers.append(nn.Linear(c2 * 7 * 7, 10))
    else:
        layers += [nn.Linear(c2 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10)]
    return nn.Sequential(*layers)


def evaluate(model, loader):
    """Mean cross entropy and accuracy over the loader, summed on the GPU, one host read."""
    model.eval()
    loss_sum = correct = None
    count = 0
    with oa.no_grad():
        for images, labels in loader:
            logits = model(images)
            n = labels.shape[0]
            loss = F.cross_entropy(logits, labels, reduction="sum")
            hits = F.accuracy(logits, labels) * float(n)
            loss_sum = loss if loss_sum is None else loss_sum + loss
            correct = hits if correct is None else correct + hits
            count += n
    model.train()
    return loss_sum.item() / count, correct.item() / count


class Progress:
    """A tqdm bar when tqdm is installed, else a line each time a loss is shown."""

    def __init__(self, total, label):
        self.bar = tqdm(total=total, desc=label, unit="step") if tqdm else None
        self.label, self.total, self.done = label, total, 0

    def update(self, loss_value=None):
        """One step done; loss_value (None: not read this step) is shown."""
        self.done += 1
        if self.bar:
            self.bar.update(1)
            if loss_value is not None:
                self.bar.set_postfix(loss=f"{loss_value:.4f}")
        elif loss_value is not None:
            print(f"{self.label}: step {self.done}/{self.total}, loss {loss_value:.4f}", flush=True)

    def close(self):
        if self.bar:
            self.bar.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, help="training epochs (default 10, 1 with --quick)")
    parser.add_argument("--batch-size", type=int, default=128, help="images per step")
    parser.add_argument("--lr", type=float, default=1e-3, help="peak AdamW learning rate")
    parser.add_argument("--seed", type=int, default=0, help="seed for initialisation and shuffling")
    parser.add_argument("--steps", type=int, help="stop each epoch after this many steps (a smoke run)")
    parser.add_argument("--quick", action="store_true", help="the small network of oa train --quick")
    parser.add_argument("--data", default=oa.data.FASHION_MNIST_ROOT, help="directory of the Fashion-MNIST IDX files")
    args = parser.parse_args()
    epochs = args.epochs if args.epochs is not None else (1 if args.quick else 10)

    train = oa.data.FashionMNIST(args.data, train=True)
    test = oa.data.FashionMNIST(args.data, train=False)
    train_loader = oa.data.DataLoader(train, batch_size=args.batch_size, shuffle=True, seed=args.seed)
    test_loader = oa.data.DataLoader(test, batch_size=500)
    oa.manual_seed(args.seed)
    model = convnet(args.quick)
    optimizer = oa.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    steps = len(train_loader)
    total = steps * epochs
    print(f"fashion_mnist.py: convnet{' (quick)' if args.quick else ''} on {oa.default_engine().device.name}, "
          f"{sum(p.numel() for p in model.parameters())} parameters, {len(train)} training images in batches of "
          f"{args.batch_size}, {epochs} epoch(s)")

    step = 0
    for epoch in range(epochs):
        train_loader.set_epoch(epoch)
        shown = min(steps, args.steps) if args.steps is not None else steps
        progress = Progress(shown, f"epoch {epoch + 1}/{epochs}")
        t0 = time.perf_counter()
        loss_sum, seen = None, 0
        for b, (images, labels) in enumerate(train_loader):
            if b == shown:
                break
            optimizer.lr = oa.optim.warmup_cosine_lr(step, args.lr, total // 20, total)
            loss = F.cross_entropy(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            n = labels.shape[0]
            with oa.no_grad():
                weighted = loss * float(n)
                loss_sum = weighted if loss_sum is None else loss_sum + weighted
            seen += n
            step += 1
            # A host read waits for the GPU: every 25 steps and at the end, as oa train.
            progress.update(loss.item() if (b + 1) % 25 == 0 or b + 1 == shown else None)
        progress.close()
        seconds = time.perf_counter() - t0
        test_loss, accuracy = evaluate(model, test_loader)
        print(f"epoch {epoch + 1}: train loss {loss_sum.item() / seen:.4f}, test loss {test_loss:.4f}, "
              f"test accuracy {100 * accuracy:.2f}% ({seconds:.1f} s, {seen / seconds:.0f} images/s)")


if __name__ == "__main__":
    main()
