"""oa.data: the IDX and text readers, datasets and loaders, against NumPy on
tiny IDX files written here from the format description."""
import gzip
import struct

import numpy as np
import pytest

import oa

data = oa.data


def idx_bytes(array):
    """An IDX file of unsigned bytes: 00 00 08 rank, big-endian u32 extents, the bytes."""
    array = np.asarray(array, dtype=np.uint8)
    return bytes([0, 0, 8, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape) + array.tobytes()


def write_idx(path, array, compress=True):
    raw = idx_bytes(array)
    path.write_bytes(gzip.compress(raw) if compress else raw)
    return path


def images_and_labels(count, height=28, width=28, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (count, height, width), dtype=np.uint8), rng.integers(0, 10, count, dtype=np.uint8)


def fashion_dir(tmp_path, train=11, test=5):
    """A directory with Fashion-MNIST's four file names over random images."""
    arrays = {}
    for split, count in (("train", train), ("t10k", test)):
        images, labels = images_and_labels(count, seed=count)
        write_idx(tmp_path / f"{split}-images-idx3-ubyte.gz", images)
        write_idx(tmp_path / f"{split}-labels-idx1-ubyte.gz", labels)
        arrays[split] = (images, labels)
    return tmp_path, arrays


def normalised(pixels, mean, std):
    """The f64 reference of (p / 255 - mean) / std."""
    return (pixels.astype(np.float64) / 255 - mean) / std


def test_read_idx_raw_and_gzip(tmp_path):
    a = np.arange(2 * 3 * 5, dtype=np.uint8).reshape(2, 3, 5)
    for compress in (False, True):
        got = data.read_idx(write_idx(tmp_path / f"a{compress}", a, compress))
        assert got.dtype == np.uint8 and got.shape == (2, 3, 5)
        np.testing.assert_array_equal(got, a)
    (tmp_path / "bad").write_bytes(b"\x00\x00\x09\x01\x00\x00\x00\x01\x05")
    with pytest.raises(oa.InvalidArgumentError, match="read_idx.*bad"):
        data.read_idx(tmp_path / "bad")
    with pytest.raises(oa.InvalidArgumentError, match="cannot open"):
        data.read_idx(tmp_path / "missing")


def test_image_dataset_items_against_numpy(tmp_path):
    images, labels = images_and_labels(7, 4, 3)
    ds = data.ImageDataset(write_idx(tmp_path / "i", images), write_idx(tmp_path / "l", labels),
                           normalization=(0.25, 0.5))
    assert len(ds) == 7 and ds.classes == labels.max() + 1
    np.testing.assert_array_equal(ds.data, images)
    np.testing.assert_array_equal(ds.targets, labels)
    assert not ds.data.flags.writeable
    for i in (0, 6, -1):
        image, label = ds[i]
        assert image.shape == (1, 4, 3) and image.dtype == oa.float32 and label == labels[i]
        np.testing.assert_allclose(image.numpy()[0], normalised(images[i], 0.25, 0.5), rtol=1e-6, atol=1e-6)
    with pytest.raises(IndexError):
        ds[7]
    with pytest.raises(TypeError):
        ds[1.0]
    with pytest.raises(ValueError, match="std > 0"):
        data.ImageDataset(tmp_path / "i", tmp_path / "l", normalization=(0.0, 0.0))
    write_idx(tmp_path / "l5", labels[:5])
    with pytest.raises(oa.InvalidArgumentError, match="l5"):  # 7 images, 5 labels
        data.ImageDataset(tmp_path / "i", tmp_path / "l5")


def test_fashion_mnist_splits_and_normalization(tmp_path):
    root, arrays = fashion_dir(tmp_path)
    mean, std = data.FASHION_MNIST_NORMALIZATION
    for train, split in ((True, "train"), (False, "t10k")):
        ds = data.FashionMNIST(root, train=train)
        images, labels = arrays[split]
        assert len(ds) == len(labels)
        image, label = ds[2]
        assert label == labels[2]
        np.testing.assert_allclose(image.numpy()[0], normalised(images[2], mean, std), rtol=1e-5, atol=1e-5)
    with pytest.raises(oa.InvalidArgumentError, match="cannot open"):
        data.FashionMNIST(tmp_path / "nowhere")


def test_loader_batches_in_order_with_a_partial_last(tmp_path):
    root, arrays = fashion_dir(tmp_path)
    images, labels = arrays["train"]
    ds = data.FashionMNIST(root)
    loader = data.DataLoader(ds, batch_size=4)
    batches = list(loader)
    assert len(loader) == len(batches) == 3
    assert [b[0].shape for b in batches] == [(4, 1, 28, 28), (4, 1, 28, 28), (3, 1, 28, 28)]
    got = np.concatenate([b[0].numpy() for b in batches])
    np.testing.assert_allclose(got[:, 0], normalised(images, *data.FASHION_MNIST_NORMALIZATION), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.concatenate([b[1].numpy() for b in batches]), labels)
    assert batches[0][1].dtype == oa.int32
    assert len(data.DataLoader(ds, batch_size=4, drop_last=True)) == len(list(data.DataLoader(ds, 4, drop_last=True))) == 2


def test_shuffling_by_seed_and_epoch(tmp_path):
    root, arrays = fashion_dir(tmp_path)
    labels = arrays["train"][1]
    ds = data.FashionMNIST(root)

    def epoch_labels(loader):
        return np.concatenate([b[1].numpy() for b in loader])

    a, b = data.DataLoader(ds, 3, shuffle=True, seed=5), data.DataLoader(ds, 3, shuffle=True, seed=5)
    first = epoch_labels(a)
    order = data.epoch_order(len(ds), True, 5, 0)
    assert sorted(order) == list(range(len(ds))) and order != list(range(len(ds)))
    np.testing.assert_array_equal(first, labels[order])
    np.testing.assert_array_equal(epoch_labels(b), first)  # the same seed, the same epoch 0
    second = epoch_labels(a)  # iterating again is epoch 1
    np.testing.assert_array_equal(second, labels[data.epoch_order(len(ds), True, 5, 1)])
    a.set_epoch(0)
    np.testing.assert_array_equal(epoch_labels(a), first)
    np.testing.assert_array_equal(epoch_labels(data.DataLoader(ds, 3, shuffle=True, seed=6)),
                                  labels[data.epoch_order(len(ds), True, 6, 0)])
    assert data.epoch_order(len(ds), True, 6, 0) != order


class Plain(data.Dataset):
    """A Python dataset of (Tensor, int) samples without __getitems__: collated field by field."""

    def __init__(self, inner):
        self.inner = inner

    def __len__(self):
        return len(self.inner)

    def __getitem__(self, i):
        return self.inner[i]


def test_a_python_dataset_gives_the_same_batches(tmp_path):
    root, _ = fashion_dir(tmp_path)
    ds = data.FashionMNIST(root)
    native = list(data.DataLoader(ds, 4, shuffle=True, seed=1))
    collated = list(data.DataLoader(Plain(ds), 4, shuffle=True, seed=1))
    for (x, y), (px, py) in zip(native, collated):
        np.testing.assert_array_equal(px.numpy(), x.numpy())
        np.testing.assert_array_equal(py.numpy(), y.numpy())
        assert py.dtype == oa.int32
    with pytest.raises(ValueError, match="batch_size"):
        data.DataLoader(ds, batch_size=0)
    with pytest.raises(ValueError, match="seed"):
        data.DataLoader(ds, seed=-1)
    with pytest.raises(NotImplementedError):
        len(data.Dataset())


def test_text_dataset_windows_against_numpy():
    text = bytes(range(200, 256)) + b"hello, world"
    arr = np.frombuffer(text, dtype=np.uint8)
    ds = data.TextDataset(text, context=8, stride=3)
    assert len(ds) == (len(text) - 1 - 8) // 3 + 1
    tokens, targets = ds[4]
    np.testing.assert_array_equal(tokens, arr[12:20])
    np.testing.assert_array_equal(targets, arr[13:21])
    x, y = next(iter(data.DataLoader(ds, batch_size=5)))
    assert x.shape == y.shape == (5, 8) and x.dtype == oa.int32
    np.testing.assert_array_equal(x.numpy(), np.stack([arr[3 * i:3 * i + 8] for i in range(5)]))
    assert len(data.TextDataset(b"abc", context=3)) == 0
    with pytest.raises(ValueError, match="context"):
        data.TextDataset(text, context=0)


def test_text_loader_windows_by_seed_and_step():
    rng = np.random.default_rng(3)
    text = rng.integers(0, 256, 300, dtype=np.uint8).tobytes()
    loader = data.TextLoader(text, batch_size=4, context=10, seed=7, steps=3)
    assert len(loader) == 3
    batches = list(loader)
    assert len(batches) == 3
    for tokens, targets in batches:
        t, y = tokens.numpy(), targets.numpy()
        assert t.shape == y.shape == (4, 10) and tokens.dtype == oa.int32
        np.testing.assert_array_equal(t[:, 1:], y[:, :-1])
        for row, last in zip(t, y[:, -1]):
            window = bytes(row.astype(np.uint8).tolist()) + bytes([last])
            start = text.find(window)
            assert 0 <= start <= len(text) - 11
    np.testing.assert_array_equal(loader.batch(1)[0].numpy(), batches[1][0].numpy())
    again = data.TextLoader(text, 4, 10, seed=7).batch(2)[0].numpy()
    np.testing.assert_array_equal(again, batches[2][0].numpy())
    assert not np.array_equal(data.TextLoader(text, 4, 10, seed=8).batch(2)[0].numpy(), again)
    with pytest.raises(TypeError):
        len(data.TextLoader(text, 4, 10))
    with pytest.raises(oa.InvalidArgumentError, match="shorter than one window"):
        data.TextLoader(text[:10], 4, 10)


def test_read_and_split_text(tmp_path):
    (tmp_path / "a").write_bytes(b"abc")
    (tmp_path / "b").write_bytes(b"defghijklmnopqrst")
    assert data.read_text(tmp_path / "a") == b"abc"
    text = data.read_text([tmp_path / "a", str(tmp_path / "b")])
    assert text == b"abcdefghijklmnopqrst"
    train, validation = data.split_text(text, 0.1)
    assert (train, validation) == (b"abcdefghijklmnopqr", b"st")
    with pytest.raises(oa.InvalidArgumentError, match="cannot open"):
        data.read_text(tmp_path / "c")
    with pytest.raises(oa.InvalidArgumentError, match="validation_fraction"):
        data.split_text(text, 1.0)
