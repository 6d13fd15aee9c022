"""Layout and selection ops on every dtype (their elements moved as bits) against NumPy, 16-bit gradients that stay
16-bit, and bool masks at any position of an index key (x[:, mask], x[:, mask] = v) with gradients."""
import numpy as np
import pytest

import oa
import oa.nn.functional as F
from reference import check_gradients, values

DTYPES = [oa.float32, oa.float16, oa.bfloat16, oa.int32, oa.bool]
X = np.random.default_rng(5).integers(-3, 4, (2, 3, 4))
I32 = np.int32


def made(dtype):
    """X as `dtype` on the device, and the NumPy array it holds (bool: X != 0)."""
    return oa.tensor(X).to(dtype), (X != 0 if dtype == oa.bool else X)


def same(got, want):
    np.testing.assert_array_equal(np.asarray(got.numpy(), np.float64), np.asarray(want, np.float64))


MASK3 = np.array([True, False, True])
MOVES = {
    "T": (lambda t: t[0].T, lambda a: a[0].T),
    "t": (lambda t: t[1].t(), lambda a: a[1].T),
    "mT": (lambda t: t.mT, lambda a: np.swapaxes(a, -2, -1)),
    "transpose": (lambda t: t.transpose(0, 2), lambda a: np.swapaxes(a, 0, 2)),
    "permute": (lambda t: t.permute(2, 0, 1), lambda a: a.transpose(2, 0, 1)),
    "expand": (lambda t: t[:, :1].expand(2, 3, 4), lambda a: np.broadcast_to(a[:, :1], (2, 3, 4))),
    "flip": (lambda t: t.flip(1, 2), lambda a: a[:, ::-1, ::-1]),
    "roll": (lambda t: oa.roll(t, 3, 2), lambda a: np.roll(a, 3, 2)),
    "repeat": (lambda t: t.repeat(1, 2, 1), lambda a: np.tile(a, (1, 2, 1))),
    "cat": (lambda t: oa.cat([t, t[:, 1:]], 1), lambda a: np.concatenate([a, a[:, 1:]], 1)),
    "stack": (lambda t: oa.stack([t, t], 2), lambda a: np.stack([a, a], 2)),
    "slice": (lambda t: t[:, 1:, ::3], lambda a: a[:, 1:, ::3]),
    "pad": (lambda t: F.pad(t, (1, 2)), lambda a: np.pad(a, ((0, 0), (0, 0), (1, 2)))),
    "tril": (lambda t: oa.tril(t, -1), lambda a: np.tril(a, -1)),
    "triu": (lambda t: t.triu(1), lambda a: np.triu(a, 1)),
    "index_select": (lambda t: t.index_select(2, oa.tensor(np.array([3, 0, 3], I32))), lambda a: a[:, :, [3, 0, 3]]),
    "gather": (lambda t: oa.gather(t, 1, oa.tensor(np.array([[[2, 0, 1, 1]], [[0, 0, 2, 1]]], I32))),
               lambda a: np.take_along_axis(a, np.array([[[2, 0, 1, 1]], [[0, 0, 2, 1]]]), 1)),
    "take_along_dim": (lambda t: oa.take_along_dim(t, oa.tensor(np.array([[[3, 1], [0, 0], [2, 3]]], I32)), 2),
                       lambda a: np.take_along_axis(a, np.array([[[3, 1], [0, 0], [2, 3]]]), 2)),
    "masked_select": (lambda t: t.masked_select(oa.tensor(X[:, :, 0] > 0)), lambda a: a[X[:, :, 0] > 0]),
    "mask_after_slice": (lambda t: t[:, oa.tensor(MASK3)], lambda a: a[:, MASK3]),
    "sort": (lambda t: oa.sort(t, 2).values, lambda a: np.sort(a, 2, kind="stable")),
}


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("op", MOVES, ids=str)
def test_moves_keep_every_dtype(op, dtype):
    t, a = made(dtype)
    got = MOVES[op][0](t)
    assert got.dtype == dtype
    same(got, MOVES[op][1](a))


def test_causal_mask_is_triu_of_bool_ones():
    mask = oa.triu(oa.ones(8, 8, dtype=oa.bool), 1)
    assert mask.dtype == oa.bool
    np.testing.assert_array_equal(mask.numpy(), np.triu(np.ones((8, 8), bool), 1))


@pytest.mark.parametrize("dtype", [oa.float32, oa.float16, oa.bfloat16, oa.int32], ids=str)
@pytest.mark.parametrize("largest", [True, False])
def test_topk_orders_in_the_elements_own_dtype(dtype, largest):
    if dtype == oa.int32:  # beyond float32's 2^24, where float32 would tie them
        host = np.array([[16777217, 16777216, -2**31, 2**31 - 1, 16777217, 0]], np.int64)
        t = oa.tensor(host.astype(I32))
    else:
        t = oa.tensor(values((3, 6), 2)).to(dtype)
        host = t.numpy().astype(np.float64)
    r = oa.topk(t, 4, 1, largest)
    order = np.argsort(-host if largest else host, axis=1, kind="stable")[:, :4]  # ties by position
    assert r.values.dtype == dtype and r.indices.dtype == oa.int32
    np.testing.assert_array_equal(r.indices.numpy(), order)
    same(r.values, np.take_along_axis(host, order, 1))


@pytest.mark.parametrize("dtype", [oa.float16, oa.bfloat16], ids=str)
def test_sixteen_bit_gradients_stay_sixteen_bit(dtype):
    x = oa.tensor(values((4, 3), 3)).to(dtype).requires_grad_()
    picked = oa.tensor(np.array([3, 0, 3], I32))
    loss = (x.index_select(0, picked).sum() + oa.topk(x, 1, 0).values.sum() + x.T.sum() * 0 + oa.tril(x).sum()
            + x[:, oa.tensor(MASK3)].sum())
    loss.backward()
    assert x.grad.dtype == dtype
    host = x.detach().numpy().astype(np.float64)
    want = np.zeros((4, 3))
    want[[0, 3]] += [[1], [2]]
    want[np.argmax(host, 0), np.arange(3)] += 1
    want += np.tril(np.ones((4, 3)))
    want[:, MASK3] += 1
    same(x.grad, want)


# Bool masks after slices and ints (torch: any position): the true positions of the axes the mask covers.
MASK34 = np.array([[True, False, False, True], [False, False, False, False], [True, True, False, True]])
MASK_KEYS = {
    "after_slice": (lambda m: (slice(None), m(MASK3))),
    "after_int": (lambda m: (1, m(MASK3))),
    "two_axes": (lambda m: (slice(None), m(MASK34))),
    "last_after_ellipsis": (lambda m: (Ellipsis, m(np.array([False, True, True, False])))),
    "after_new_axis": (lambda m: (slice(None), None, m(MASK3), slice(1, 3))),
    "zero_dim": (lambda m: (slice(None), m(np.array(True)))),
    "nothing": (lambda m: (slice(None), m(np.zeros(3, bool)))),
}


@pytest.mark.parametrize("key", MASK_KEYS, ids=str)
def test_mask_at_any_position(key):
    oa_key, np_key = MASK_KEYS[key](oa.tensor), MASK_KEYS[key](np.asarray)
    same(oa.tensor(X)[oa_key], X[np_key])
    check_gradients(lambda t: t[oa_key], lambda a: a[np_key], [values(X.shape, 4)])


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("key", ["after_slice", "after_int", "two_axes", "last_after_ellipsis"])
def test_assignment_through_a_mask_at_any_position(key, dtype):
    oa_key, np_key = MASK_KEYS[key](oa.tensor), MASK_KEYS[key](np.asarray)
    t, a = made(dtype)
    a = a.copy()
    t[oa_key] = 1
    a[np_key] = 1
    same(t, a)
    # A value of the selection's shape, from a tensor.
    t, a = made(dtype)
    a = a.copy()
    v = np.arange(a[np_key].size).reshape(a[np_key].shape) % 2
    t[oa_key] = oa.tensor(v).to(dtype)
    a[np_key] = v
    same(t, a)


def test_assignment_through_a_middle_mask_has_gradients():
    x, v = oa.tensor(values(X.shape, 6), requires_grad=True), oa.tensor(values((4,), 7), requires_grad=True)
    w = values(X.shape, 8)
    y = x.clone()
    y[:, oa.tensor(MASK3)] = v  # broadcast over [2, 2, 4]
    (y * oa.tensor(w)).sum().backward()
    want_x = w.copy()
    want_x[:, MASK3] = 0
    np.testing.assert_allclose(x.grad.numpy(), want_x, rtol=1e-6)
    np.testing.assert_allclose(v.grad.numpy(), w[:, MASK3].sum((0, 1)), rtol=1e-5)


def test_mask_of_other_extents_names_them():
    with pytest.raises(IndexError, match=r"mask's shape \[2\] does not match the extents \[3\] .* from axis 1"):
        oa.ones(2, 3, 4)[:, oa.tensor([True, False])]
