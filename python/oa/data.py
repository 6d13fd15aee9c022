"""oa.data: datasets and mini-batches (torch.utils.data's Dataset and DataLoader,
torchvision's FashionMNIST) over the C++ readers and loaders of oa/ml/data.hpp
that `oa train` uses.

- ImageDataset / FashionMNIST: images and labels of IDX files (raw or gzip);
  dataset[i] is (image float32 [1, H, W], label int), normalised as
  (p / 255 - mean) / std.
- TextDataset: the windows of a byte text; dataset[i] is (tokens, targets),
  int32 [context] each, targets the bytes after the tokens.
- DataLoader(dataset, batch_size, shuffle, seed, drop_last) yields batches of
  oa Tensors in the order of oa::ml::data::epoch_order: with shuffle, epoch
  e's order is the Fisher-Yates permutation of Generator(seed).fork(e), so
  DataLoader(FashionMNIST(), 128, shuffle=True, seed=s) gives the batches of
  `oa train fashion-mnist --seed s`, one upload per batch.
- TextLoader: the random windows of `oa train text` (batch `step` depends on
  the seed and the step only), an iterable of (tokens, targets) [B, T].
- read_idx, read_text and split_text: the readers themselves.

The readers raise oa.InvalidArgumentError naming the file and the fault.
"""
import numpy as np

from . import _oa

_native = _oa.data

FASHION_MNIST_ROOT = _native.FASHION_MNIST_ROOT
# (mean, std) of Fashion-MNIST's training pixels p / 255, as `oa train` normalises them.
FASHION_MNIST_NORMALIZATION = _native.FASHION_MNIST_NORMALIZATION
read_idx = _native.read_idx
epoch_order = _native.epoch_order


class Dataset:
    """A map-style dataset (torch.utils.data.Dataset): subclass it with
    __len__ and __getitem__(index). A dataset may also define
    __getitems__(indices), which DataLoader then calls for a whole batch."""

    def __getitem__(self, index):
        raise NotImplementedError(f"{type(self).__name__} has no __getitem__")

    def __len__(self):
        raise NotImplementedError(f"{type(self).__name__} has no __len__")


def _int(value, what, low=0, high=None):
    """value as an int in [low, high) (no upper bound when high is None), else ValueError naming `what`."""
    if (isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)) or value < low
            or (high is not None and value >= high)):
        bound = f"in [{low}, {high})" if high is not None else f">= {low}"
        raise ValueError(f"{what} must be an int {bound}, not {value!r}")
    return int(value)


def _index(index, length, name):
    """index as an int in [0, length) (negative counts from the end), else IndexError."""
    if isinstance(index, (bool, np.bool_)) or not isinstance(index, (int, np.integer)):
        raise TypeError(f"{name} indices must be integers, not {type(index).__name__}")
    i = int(index)
    if not -length <= i < length:
        raise IndexError(f"{name} index {i} is out of range for {length} samples")
    return i + length if i < 0 else i


class ImageDataset(Dataset):
    """Images with one label each from an IDX images file [N, H, W] and an IDX
    labels file [N] (oa::ml::data::load_idx_images). dataset[i] is (image
    float32 [1, H, W] = (p / 255 - mean) / std, label int); normalization is
    (mean, std), default (0, 1) (torchvision's ToTensor). .data (uint8
    [N, H, W]) and .targets (int32 [N]) are read-only NumPy views."""

    def __init__(self, images, labels, normalization=(0.0, 1.0), engine=None):
        self._init(_native.load_idx_images(images, labels), normalization, engine)

    def _init(self, native, normalization, engine):
        self._native, self.engine = native, engine
        self.mean, self.std = (float(v) for v in normalization)
        if not (np.isfinite(self.mean) and np.isfinite(self.std) and self.std > 0):
            raise ValueError(f"oa.data.{type(self).__name__}: normalization {tuple(normalization)} must be a finite "
                             "(mean, std) with std > 0")

    @property
    def data(self):
        return self._native.pixels

    @property
    def targets(self):
        return self._native.labels

    @property
    def classes(self):
        """1 + the largest label."""
        return self._native.classes

    def __len__(self):
        return self._native.count

    def __getitem__(self, index):
        i = _index(index, len(self), type(self).__name__)
        image, label = _native.image_batch(self._native, [i], self.mean, self.std, self.engine)
        return image.reshape(image.shape[1:]), int(self._native.labels[i])

    def __getitems__(self, indices):
        """(images float32 [B, 1, H, W], labels int32 [B]) of the samples `indices`
        (ints in [0, len)), in one upload each."""
        return _native.image_batch(self._native, indices, self.mean, self.std, self.engine)


class FashionMNIST(ImageDataset):
    """Fashion-MNIST (Xiao, Rasul & Vollgraf 2017; torchvision.datasets.FashionMNIST):
    the training split (60000 images) or with train=False the test split (10000)
    of root's train-* / t10k-*-idx?-ubyte.gz (default: Debian's
    dataset-fashion-mnist), normalised with FASHION_MNIST_NORMALIZATION unless
    given another (mean, std)."""

    def __init__(self, root=FASHION_MNIST_ROOT, train=True, normalization=FASHION_MNIST_NORMALIZATION, engine=None):
        self._init(_native.load_fashion_mnist("train" if train else "t10k", root), normalization, engine)


def read_text(paths=None):
    """The concatenated bytes of the files `paths` (a path or a list of them), or
    of Debian's fortunes (/usr/share/games/fortunes, the default of `oa train
    text`) when None."""
    if paths is None:
        paths = _native.fortune_files()
    elif isinstance(paths, (str, bytes)) or hasattr(paths, "__fspath__"):
        paths = [paths]
    return _native.read_bytes(list(paths))


def split_text(text, validation_fraction=0.05):
    """(train, validation) bytes: the last floor(len * validation_fraction) bytes held out."""
    return _native.split_text(bytes(text), validation_fraction)


class TextDataset(Dataset):
    """The windows of a byte text (vocabulary 256): window i starts at i * stride
    and dataset[i] is (tokens, targets), int32 [context] NumPy arrays, targets
    the bytes one position later. len: (len(text) - 1 - context) // stride + 1
    windows (0 for a text shorter than context + 1 bytes). stride = context
    gives the non-overlapping windows `oa train text` validates on."""

    def __init__(self, text, context, stride=1):
        self.text = np.frombuffer(bytes(text), dtype=np.uint8)
        self.context = _int(context, "oa.data.TextDataset: context", 1)
        self.stride = _int(stride, "oa.data.TextDataset: stride", 1)

    def __len__(self):
        return max(0, (len(self.text) - 1 - self.context) // self.stride + 1)

    def __getitem__(self, index):
        start = _index(index, len(self), "TextDataset") * self.stride
        window = self.text[start:start + self.context + 1].astype(np.int32)
        return window[:-1], window[1:]


def _collate(samples, engine):
    """A batch from a list of samples: each field stacked along a new axis 0 (oa.stack
    for Tensors, else np.stack and one upload)."""
    first = samples[0]
    if isinstance(first, tuple):
        return tuple(_collate([s[k] for s in samples], engine) for k in range(len(first)))
    if isinstance(first, _oa.Tensor):
        return _oa.stack(samples, 0)
    return _oa.tensor(np.stack([np.asarray(s) for s in samples]), engine=engine)


class DataLoader:
    """Mini-batches of a map-style dataset (torch.utils.data.DataLoader): batches of
    batch_size samples (a smaller last one unless drop_last) in the order
    epoch_order(len(dataset), shuffle, seed, epoch). Each iteration uses the
    current epoch and then advances it (torch reshuffles every epoch too);
    set_epoch(e) selects one (torch's DistributedSampler.set_epoch). A batch is
    dataset.__getitems__(indices) where the dataset has it, else its samples
    collated field by field (Tensors stacked, NumPy arrays and numbers stacked
    and uploaded once, on `engine`)."""

    def __init__(self, dataset, batch_size=1, shuffle=False, seed=0, drop_last=False, engine=None):
        self.dataset, self.shuffle, self.drop_last, self.engine = dataset, bool(shuffle), bool(drop_last), engine
        self.batch_size = _int(batch_size, "oa.data.DataLoader: batch_size", 1)
        self.seed = _int(seed, "oa.data.DataLoader: seed", 0, 2**64)
        self.epoch = 0

    def set_epoch(self, epoch):
        self.epoch = _int(epoch, "oa.data.DataLoader.set_epoch: epoch", 0, 2**64)

    def __len__(self):
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else -(-n // self.batch_size)

    def __iter__(self):
        order = epoch_order(len(self.dataset), self.shuffle, self.seed, self.epoch)
        self.epoch += 1
        batched = getattr(self.dataset, "__getitems__", None)
        for b in range(len(self)):
            indices = order[b * self.batch_size:(b + 1) * self.batch_size]
            yield batched(indices) if batched else _collate([self.dataset[i] for i in indices], self.engine)


class TextLoader:
    """The random context windows of `oa train text` (oa::ml::data::TextLoader) over
    a byte text: batch(step) is (tokens, targets), int32 [batch_size, context],
    B windows whose starts are uniform on [0, len - context - 1], drawn from
    Generator(seed).fork(step). Iterating yields batch(0), batch(1), ... for
    `steps` steps, or without end when steps is None. Raises
    oa.InvalidArgumentError for batch_size or context < 1, or a text shorter than
    context + 1 bytes."""

    def __init__(self, text, batch_size, context, seed=0, steps=None, engine=None):
        self._native = _native.TextLoader(bytes(text), batch_size, context, seed, engine)
        self.steps = None if steps is None else _int(steps, "oa.data.TextLoader: steps")
        self.batch_size, self.context = batch_size, context

    def batch(self, step):
        return self._native.batch(step)

    def __len__(self):
        if self.steps is None:
            raise TypeError("oa.data.TextLoader without steps has no length (it does not end)")
        return self.steps

    def __iter__(self):
        step = 0
        while self.steps is None or step < self.steps:
            yield self._native.batch(step)
            step += 1
