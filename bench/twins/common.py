"""What oa's trainers do on the host, re-done in Python for the PyTorch twins.

The twins must see the same data in the same order as `oa train`: oa draws
shuffles and text windows from oa::ml::Generator (include/oa/ml/generator.hpp),
a counter-based SplitMix64 stream, re-created here bit for bit.
"""
import gzip
import math
import struct

MASK = (1 << 64) - 1
GOLDEN_GAMMA = 0x9E3779B97F4A7C15


def mix(z):
    """SplitMix64's output mixer (Steele, Lea & Flood, OOPSLA 2014)."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


class Generator:
    """oa::ml::Generator: the k-th value is mix(seed + k * golden gamma), k = 1, 2, ..."""

    def __init__(self, seed):
        self.seed = seed & MASK
        self.counter = 0

    def next_u64(self):
        self.counter += 1
        return mix((self.seed + self.counter * GOLDEN_GAMMA) & MASK)

    def next_below(self, n):
        """Uniform on [0, n) by rejection of the short top range, as oa does."""
        limit = MASK - MASK % n
        while True:
            v = self.next_u64()
            if v < limit:
                return v % n

    def fork(self, stream):
        return Generator(mix(self.seed ^ mix((stream + 0x632BE59BD9B4E019) & MASK)))


def epoch_order(count, seed, epoch):
    """oa::ml::data::ImageLoader's sample order for `epoch` (Fisher-Yates)."""
    order = list(range(count))
    g = Generator(seed).fork(epoch)
    for i in range(count, 1, -1):
        j = g.next_below(i)
        order[i - 1], order[j] = order[j], order[i - 1]
    return order


def text_window_starts(train_size, context, batch_size, seed, step):
    """oa::ml::data::TextLoader: the window starts of batch `step`."""
    g = Generator(seed).fork(step)
    return [g.next_below(train_size - context) for _ in range(batch_size)]


def warmup_cosine_lr(step, base_lr, warmup_steps, total_steps, min_lr):
    """oa::ml::optim::warmup_cosine_lr."""
    if step < warmup_steps:
        return base_lr * step / warmup_steps
    if step >= total_steps:
        return min_lr
    progress = (step - warmup_steps) / (total_steps - warmup_steps)
    return min_lr + (base_lr - min_lr) * 0.5 * (1.0 + math.cos(math.pi * progress))


def read_idx(path):
    """An IDX file (gzip or plain): (dims, raw unsigned bytes)."""
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    zero, kind, rank = struct.unpack(">HBB", data[:4])
    if zero != 0 or kind != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file")
    dims = struct.unpack(">" + "I" * rank, data[4:4 + 4 * rank])
    return dims, data[4 + 4 * rank:]


def fortune_text(directory="/usr/share/games/fortunes"):
    """oa::ml::data::fortune_files + read_bytes: extension-less regular files, sorted."""
    import os
    names = sorted(n for n in os.listdir(directory)
                   if "." not in n and os.path.isfile(os.path.join(directory, n))
                   and not os.path.islink(os.path.join(directory, n)))
    return b"".join(open(os.path.join(directory, n), "rb").read() for n in names)


def split_text(data, validation_fraction=0.05):
    """oa::ml::data::split_text: the tail floor(n * fraction) bytes are held out."""
    held = math.floor(len(data) * validation_fraction)
    return data[:len(data) - held], data[len(data) - held:]
