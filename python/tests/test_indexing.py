"""x[key] and the selection ops against NumPy, gradients by finite differences."""
import numpy as np
import pytest

import oa
from reference import assert_close, check_gradients, values


X = values((4, 5, 3), seed=1)


@pytest.mark.parametrize(
    "key",
    [
        1,
        -1,
        (slice(None), slice(1, 3)),
        slice(None, None, 2),
        (Ellipsis, None),
        (None, 2, Ellipsis, slice(0, 2)),
        (slice(-3, None), 0, -2),
        (Ellipsis, 1),
        (slice(1, 10, 3),),
        (slice(3, 1),),
    ],
)
def test_basic_indexing(key):
    assert_close(oa.tensor(X)[key].numpy(), X[key], rtol=0, atol=0)


@pytest.mark.parametrize("index", [[2, 0, 2], [[1, -1], [0, 3]], np.array([3, 1])])
def test_list_index(index):
    assert_close(oa.tensor(X)[index].numpy(), X[np.asarray(index)], rtol=0, atol=0)
    assert_close(oa.tensor(X)[:, index].numpy(), X[:, np.asarray(index)], rtol=0, atol=0)


def test_tensor_index():
    idx = np.array([[4, 0], [2, 2]], dtype=np.int32)
    assert_close(oa.tensor(X)[:, oa.tensor(idx)].numpy(), X[:, idx], rtol=0, atol=0)
    assert_close(oa.tensor(X)[oa.tensor(np.int32(3))].numpy(), X[3], rtol=0, atol=0)


def test_tensor_index_is_checked_as_a_list_is():
    # Negative indices count from the end; one outside the axis raises, as in
    # PyTorch (not a silent zero).
    idx = np.array([-1, 0, -5], dtype=np.int32)
    assert_close(oa.tensor(X)[:, oa.tensor(idx)].numpy(), X[:, idx], rtol=0, atol=0)
    for bad in ([5], [-6]):
        with pytest.raises(IndexError, match=f"index {bad[0]} is out of bounds for axis 1 of extent 5"):
            oa.tensor(X)[:, oa.tensor(np.array(bad, dtype=np.int32))]


@pytest.mark.parametrize("dtype", [oa.float16, oa.bfloat16, oa.bool])
def test_indexing_16_bit_and_bool_tensors(dtype):
    x = oa.tensor(X).to(dtype)
    want = x.to(oa.float32).numpy()
    idx = np.array([2, -1], dtype=np.int32)
    for key in (1, (slice(None), slice(1, 3)), (Ellipsis, 0), oa.tensor(idx), (slice(None), [4, 0])):
        got = x[key]
        assert got.dtype == dtype
        np_key = idx if isinstance(key, oa.Tensor) else key
        np.testing.assert_array_equal(got.to(oa.float32).numpy(), want[np_key])


def test_argmax_argmin_without_dim_flatten_as_torch():
    t = oa.tensor(X)
    assert t.argmax().item() == X.argmax() and oa.argmin(t).item() == X.argmin()
    assert t.argmax(keepdim=True).shape == (1, 1, 1)
    np.testing.assert_array_equal(t.argmax(-1).numpy(), X.argmax(-1))


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -2, -3])
@pytest.mark.parametrize("keepdim", [False, True])
def test_argmax_argmin_any_dim(dim, keepdim):
    t = oa.tensor(X)
    for got, want in ((t.argmax(dim, keepdim), X.argmax(dim)), (oa.argmax(t, dim=dim, keepdim=keepdim), X.argmax(dim)),
                      (t.argmin(dim, keepdim=keepdim), X.argmin(dim)), (oa.argmin(t, dim, keepdim), X.argmin(dim))):
        assert got.dtype == oa.int32
        np.testing.assert_array_equal(got.numpy(), np.expand_dims(want, dim) if keepdim else want)


def test_argmax_dim_out_of_range():
    with pytest.raises(oa.InvalidArgumentError, match=r"oa::matrix::argmax: dim 3 .*\[4, 5, 3\]"):
        oa.tensor(X).argmax(3)
    with pytest.raises(oa.InvalidArgumentError, match=r"oa::matrix::argmin: dim -4"):
        oa.argmin(oa.tensor(X), -4)


def test_arange_int32():
    np.testing.assert_array_equal(oa.arange(3, dtype=oa.int32).numpy(), np.arange(3, dtype=np.int32))
    np.testing.assert_array_equal(oa.arange(5, -3, -2, dtype=oa.int32).numpy(), np.arange(5, -3, -2, dtype=np.int32))
    assert oa.arange(2, 2, dtype=oa.int32).shape == (0,)


@pytest.mark.parametrize("mask_shape", [(4,), (4, 5), (4, 5, 3)])
def test_mask_index(mask_shape):
    mask = np.random.default_rng(3).uniform(size=mask_shape) > 0.5
    assert_close(oa.tensor(X)[oa.tensor(mask)].numpy(), X[mask], rtol=0, atol=0)
    assert_close(oa.masked_select(oa.tensor(X), oa.tensor(mask)).numpy(), X[mask], rtol=0, atol=0)


def test_mask_selecting_nothing_and_list_mask():
    assert oa.tensor(X)[oa.tensor([False] * 4)].shape == (0, 5, 3)
    mask = [True, False, False, True]
    assert_close(oa.tensor(X)[mask].numpy(), X[np.array(mask)], rtol=0, atol=0)


def test_int32_values_index():
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    np.testing.assert_array_equal(oa.tensor(a)[1:, [3, 0]].numpy(), a[1:, [3, 0]])


@pytest.mark.parametrize(
    "oa_fn, ref_fn",
    [
        (lambda x: x[1:3, ::2], lambda x: x[1:3, ::2]),
        (lambda x: x[-1, None], lambda x: x[-1, None]),
        (lambda x: x[[2, 0, 2]], lambda x: x[[2, 0, 2]]),
        (lambda x: x[:, oa.tensor(np.array([1, 1, 0], dtype=np.int32))], lambda x: x[:, [1, 1, 0]]),
        (lambda x: x[oa.tensor(np.array([[True, False, True], [False, True, True]] * 2))],
         lambda x: x[np.array([[True, False, True], [False, True, True]] * 2)]),
    ],
)
def test_indexing_gradients(oa_fn, ref_fn):
    check_gradients(oa_fn, ref_fn, [values((4, 3), seed=5)])


def test_selection_ops():
    x = values((3, 6), seed=7)
    t = oa.tensor(x)
    idx = np.array([[5, 0], [1, 1], [2, 4]], dtype=np.int32)
    assert_close(oa.gather(t, 1, oa.tensor(idx)).numpy(), np.take_along_axis(x, idx, 1), rtol=0, atol=0)
    assert_close(oa.take_along_dim(t, oa.tensor(idx), 1).numpy(), np.take_along_axis(x, idx, 1), rtol=0, atol=0)
    assert_close(t.index_select(0, oa.tensor(np.array([2, 0], dtype=np.int32))).numpy(), x[[2, 0]], rtol=0, atol=0)
    values_, indices = oa.topk(t, 2)
    order = np.argsort(-x, axis=1, kind="stable")[:, :2]
    np.testing.assert_array_equal(indices.numpy(), order)
    assert_close(values_.numpy(), np.take_along_axis(x, order, 1), rtol=0, atol=0)
    # torch.return_types.topk: .values / .indices, from the function and the method alike.
    for r in (oa.topk(t, 2), t.topk(2, largest=False)):
        assert type(r) is oa.return_types.topk
        assert r.values.shape == (3, 2) and r.indices.dtype == oa.int32
    np.testing.assert_array_equal(t.topk(2).indices.numpy(), order)
    np.testing.assert_array_equal(oa.argmin(t, dim=-1).numpy(), np.argmin(x, axis=1))
    np.testing.assert_array_equal(t.argmin(-1, keepdim=True).numpy(), np.argmin(x, axis=1)[:, None])
    full_idx = np.tile(idx, (1, 3))
    full_src = np.tile(values((3, 2), seed=8), (1, 3))
    expected = x.copy()
    np.add.at(expected, (np.arange(3)[:, None].repeat(6, 1), full_idx), full_src)
    assert_close(oa.scatter_add(t, 1, oa.tensor(full_idx), oa.tensor(full_src)).numpy(), expected)


@pytest.mark.parametrize("dtype", [oa.float16, oa.bfloat16, oa.int32])
def test_scatter_add_and_index_add_take_16_bit_floats_and_int32(dtype):
    # torch's scatter_add, Tensor.scatter_add(_) and index_add(_) in x's dtype: float16 and bfloat16 summed in
    # float32 and rounded once (these sums are exact in float32, so the float64 sum rounded once to the dtype is
    # the answer, bit for bit), int32 exactly (a float32 sum would round 2**24 + 1).
    index = np.array([[2, 0, 1, 2], [0, 1, 2, 1], [2, 2, 0, 0]])
    columns = np.arange(4)[None].repeat(3, 0)
    if dtype == oa.int32:
        rng = np.random.default_rng(5)
        x, src = rng.integers(-2**30, 2**30, (3, 4)), rng.integers(-2**20, 2**20, (3, 4))
        x[0, 0] = 2**24 + 1
    else:
        x, src = values((3, 4), 10), values((3, 4), 11)
    t, s = oa.tensor(x, dtype=dtype), oa.tensor(src, dtype=dtype)
    exact = lambda a: a.numpy().astype(np.int64 if dtype == oa.int32 else np.float64)  # bfloat16 reads as float32
    want = exact(t)
    np.add.at(want, (index, columns), exact(s))
    rows = exact(t)
    np.add.at(rows, [2, 0, 2], 2 * exact(s))  # index_add along dim 0 with alpha=2 (exact)
    for got, expected in ((oa.scatter_add(t, 0, oa.tensor(index), s), want), (t.scatter_add(0, oa.tensor(index), s), want),
                          (t.clone().scatter_add_(0, oa.tensor(index), s), want),
                          (oa.index_add(t, 0, oa.tensor([2, 0, 2]), s, alpha=2), rows),
                          (t.clone().index_add_(0, oa.tensor([2, 0, 2]), s, alpha=2), rows)):
        assert got.dtype == dtype
        rounded = oa.tensor(expected, dtype=oa.int32) if dtype == oa.int32 else oa.tensor(expected.astype(np.float32)).to(dtype)
        np.testing.assert_array_equal(got.numpy(), rounded.numpy())
    with pytest.raises(oa.InvalidArgumentError, match=r"scatter_add: x .* and src .* must have the same dtype"):
        oa.scatter_add(t, 0, oa.tensor(index), s.float() if dtype == oa.int32 else s.int())
    if dtype == oa.int32:
        return
    # Gradients in the dtype: to x the result's, to src the result's gathered at index (exact).
    leaf, leaf_src = oa.tensor(x, dtype=dtype, requires_grad=True), oa.tensor(src, dtype=dtype, requires_grad=True)
    w = oa.tensor(values((3, 4), 12), dtype=dtype)
    oa.scatter_add(leaf, 0, oa.tensor(index), leaf_src).backward(w)
    assert leaf.grad.dtype == dtype and leaf_src.grad.dtype == dtype
    np.testing.assert_array_equal(leaf.grad.numpy(), w.numpy())
    np.testing.assert_array_equal(leaf_src.grad.numpy(), w.numpy()[index, columns])


def test_one_hot_is_an_integer_tensor():
    # torch returns int64; oa's integer dtype is int32. num_classes defaults to the largest index plus one.
    F = oa.nn.functional
    labels = oa.tensor(np.array([[2, 0], [1, 2]], dtype=np.int32))
    for got, classes in ((F.one_hot(labels, 4), 4), (F.one_hot(labels), 3), (F.one_hot(labels, num_classes=-1), 3)):
        assert got.dtype == oa.int32 and got.shape == (2, 2, classes)
        np.testing.assert_array_equal(got.numpy(), np.eye(classes, dtype=np.int32)[labels.numpy()])
    # The C++ op writes int32 itself (no float32 result converted afterwards), or float32 when asked.
    native = oa._oa.functional.one_hot(labels, 3, oa.int32)
    assert native.dtype == oa.int32 and native.numpy().tolist() == np.eye(3, dtype=np.int32)[labels.numpy()].tolist()
    assert oa._oa.functional.one_hot(labels, 3, oa.float32).dtype == oa.float32
    with pytest.raises(oa.InvalidArgumentError, match=r"one_hot: dtype f16 must be f32 or i32"):
        oa._oa.functional.one_hot(labels, 3, oa.float16)
    # Float arithmetic takes it after .float(), as in torch: a label-smoothed cross-entropy by hand.
    logits = values((2, 3), 9)
    target = F.one_hot(oa.tensor([2, 0])).float() * 0.9 + 0.1 / 3
    smoothed = -(target * F.log_softmax(oa.tensor(logits), -1)).sum(-1).mean()
    assert_close(smoothed.item(), F.cross_entropy(oa.tensor(logits), oa.tensor([2, 0]), label_smoothing=0.1).item())
    with pytest.raises(oa.InvalidArgumentError, match=r"one_hot: tensor must hold int32 class indices, not oa.float32"):
        F.one_hot(oa.tensor([1.0]), 3)
    with pytest.raises(oa.InvalidArgumentError, match=r"one_hot: cannot infer num_classes \(-1\) from an empty tensor"):
        F.one_hot(oa.zeros(0, dtype=oa.int32))
    with pytest.raises(oa.InvalidArgumentError, match=r"one_hot: class values must be non-negative; found -2"):
        F.one_hot(oa.tensor([-2]))
    # A negative index beside a larger one: refused on the host too (it set num_classes from the largest).
    with pytest.raises(oa.InvalidArgumentError, match=r"one_hot: class values must be non-negative; found -1"):
        F.one_hot(oa.tensor([0, -1]))
    with pytest.raises(oa.InvalidArgumentError, match=r"one_hot: num_classes 0 must be >= 1"):
        F.one_hot(oa.tensor([0]), 0)


def test_concat_family():
    a, b = values((2, 3), seed=1), values((2, 3), seed=2)
    assert_close(oa.cat([oa.tensor(a), oa.tensor(b)], dim=1).numpy(), np.concatenate([a, b], 1), rtol=0, atol=0)
    assert_close(oa.stack([oa.tensor(a), oa.tensor(b)]).numpy(), np.stack([a, b]), rtol=0, atol=0)
    parts = oa.split(oa.tensor(a), [1, 2], dim=1)
    assert [p.shape for p in parts] == [(2, 1), (2, 2)]
    assert_close(parts[1].numpy(), a[:, 1:], rtol=0, atol=0)
    assert [p.shape for p in oa.tensor(a).split(2, dim=1)] == [(2, 2), (2, 1)]
    assert [p.shape for p in oa.tensor(a).chunk(3, dim=1)] == [(2, 1)] * 3
    check_gradients(lambda x, y: oa.cat([x, y], dim=0), lambda x, y: np.concatenate([x, y], 0), [a, b])


# torch.chunk: pieces of ceil(n / chunks), the last one smaller, so possibly
# fewer than `chunks` of them; an empty axis gives `chunks` empty pieces.
@pytest.mark.parametrize("n, chunks, sizes", [(5, 3, [2, 2, 1]), (6, 4, [2, 2, 2]), (7, 4, [2, 2, 2, 1]),
                                               (2, 5, [1, 1]), (6, 3, [2, 2, 2]), (0, 3, [0, 0, 0])])
def test_chunk_uneven(n, chunks, sizes):
    x = values((2, n, 3), seed=n)
    for dim in (1, -2):
        parts = oa.chunk(oa.tensor(x), chunks, dim)
        assert [p.shape for p in parts] == [(2, s, 3) for s in sizes]
        for p, start in zip(parts, np.cumsum([0] + sizes)):
            assert_close(p.numpy(), x[:, start:start + p.shape[1]], rtol=0, atol=0)
    assert [p.shape for p in oa.tensor(x.transpose(1, 0, 2)).chunk(chunks)] == [(s, 2, 3) for s in sizes]


def test_chunk_uneven_gradients():
    x = values((5, 2), seed=3)
    check_gradients(lambda t: oa.chunk(t, 3)[2] * 2.0, lambda t: t[4:] * 2.0, [x])
    check_gradients(lambda t: oa.cat(t.chunk(4, dim=0)[::-1]), lambda t: np.concatenate([t[4:], t[2:4], t[:2]]), [x])
    with pytest.raises(ValueError, match=r"oa::matrix::chunk: parts 0 .*\[5, 2\]"):
        oa.chunk(oa.tensor(x), 0)


@pytest.mark.parametrize(
    "key, error",
    [
        (4, IndexError),
        (-5, IndexError),
        ((0, 0, 0, 0), IndexError),
        ((Ellipsis, Ellipsis), IndexError),
        (slice(None, None, -1), ValueError),
        ([0, 7], IndexError),
        ("a", TypeError),
        (1.5, TypeError),
        (([0, 1], [0, 1, 2]), IndexError),  # index lists that do not broadcast together
    ],
)
def test_bad_indices(key, error):
    with pytest.raises(error):
        oa.tensor(X)[key]


def test_bad_masks_and_index_tensors():
    with pytest.raises(IndexError, match=r"mask's shape \[5\] does not match the extents \[4\] .* from axis 0"):
        oa.tensor(X)[oa.tensor([True] * 5)]
    with pytest.raises(IndexError, match=r"mask's shape \[3\] does not match the extents \[5\] .* from axis 1"):
        oa.tensor(X)[:, oa.tensor([True] * 3)]
    with pytest.raises(TypeError, match="int32 or bool"):
        oa.tensor(X)[oa.zeros(2)]
    with pytest.raises(ValueError):
        oa.masked_select(oa.tensor(X), oa.zeros(4))


def test_device_indices_out_of_range_raise_index_error_at_the_next_read():
    x = oa.tensor(X)
    bad = oa.tensor(np.array([1, 7], dtype=np.int32))
    y = oa.index_select(x, 1, bad)  # nothing is read at the op
    with pytest.raises(IndexError, match="oa::matrix::index_select: index 7 is out of range for dim 1"):
        y.numpy()
    assert issubclass(oa.OutOfRangeError, oa.Error) and issubclass(oa.OutOfRangeError, IndexError)
    np.testing.assert_array_equal(oa.index_select(x, 1, oa.tensor(np.array([1], dtype=np.int32))).numpy(), X[:, [1]])
    w = oa.tensor(np.ones((4, 3), dtype=np.float32))
    e = oa.nn.functional.embedding(oa.tensor(np.array([0, -2], dtype=np.int32)), w)
    with pytest.raises(oa.OutOfRangeError, match="index -2"):
        e.sum().item()
    oa.gather(x, 0, oa.tensor(np.full(X.shape, 9, dtype=np.int32)))
    with pytest.raises(IndexError, match="oa::matrix::gather: index 9"):
        x.engine.synchronize()
