"""x[key] op= v against NumPy (values) and central finite differences of a
NumPy f64 function (gradients), and the refusal of an in-place op on a stored
copy (y = x[key]; y += v), which in torch would write x through a view."""
import numpy as np
import pytest

import oa
from reference import values

X = values((4, 5), 1)
MASK = np.array([True, False, True, True])
KEYS = {
    "int": 0,
    "negative": -1,
    "column": (slice(None), 1),
    "slice": slice(1, 3),
    "rows_and_step": (slice(0, 4, 2), slice(1, None)),
    "ellipsis": (Ellipsis, 2),
    "index": np.array([0, 2]),
    "mask": MASK,
}
OPS = {"+=": np.add, "-=": np.subtract, "*=": np.multiply, "/=": np.divide}


def oa_key(key):
    if isinstance(key, np.ndarray):
        return oa.tensor(key, dtype=oa.bool if key.dtype == bool else oa.int32)
    return key


@pytest.mark.parametrize("op", OPS, ids=OPS.keys())
@pytest.mark.parametrize("key", KEYS.values(), ids=KEYS.keys())
def test_matches_numpy(key, op):
    x = oa.tensor(X)
    view = x.view(20)  # shares x's storage: sees the update
    exec(f"x[key] {op} 5", {}, {"x": x, "key": oa_key(key)})
    want = X.copy()
    want[key] = OPS[op](want[key], np.float32(5))
    np.testing.assert_allclose(x.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(view.numpy(), want.reshape(20), rtol=1e-6)


def test_tensor_operand_int32_and_float16():
    x = oa.tensor(X)
    x[MASK] += oa.tensor(np.float32(2))
    x[:, 1] *= oa.tensor(np.arange(4, dtype=np.float32))
    want = X.copy()
    want[MASK] += 2
    want[:, 1] *= np.arange(4, dtype=np.float32)
    np.testing.assert_allclose(x.numpy(), want, rtol=1e-6)
    i = oa.tensor(np.arange(6, dtype=np.int32).reshape(2, 3))
    i[0] += 1
    i[:, 2] *= 5
    assert i.dtype == oa.int32
    np.testing.assert_array_equal(i.numpy(), [[1, 2, 15], [3, 4, 25]])
    h = oa.tensor(X, dtype=oa.float16)
    h[1] -= 1
    want = X.astype(np.float16)
    want[1] -= 1
    np.testing.assert_array_equal(h.numpy(), want)


def test_an_in_place_op_on_a_stored_copy_still_raises():
    x = oa.tensor(X)
    y = x[0]
    with pytest.raises(oa.FailedPreconditionError, match=r"oa.Tensor.__getitem__.*x\[i, j\] \+= v"):
        y += 1
    with pytest.raises(oa.FailedPreconditionError, match="a copy, not a view"):
        x[0].add_(1)
    with pytest.raises(oa.FailedPreconditionError, match="a copy, not a view"):
        x[0][1] += 1  # the outer x[0] is a copy: the write would miss x
    np.testing.assert_array_equal(x.numpy(), X)


def numeric_gradient(f, a, eps=1e-3):
    """Central finite differences of the scalar f at the f64 array a."""
    g = np.zeros_like(a)
    for i in np.ndindex(a.shape):
        hi, lo = a.copy(), a.copy()
        hi[i] += eps
        lo[i] -= eps
        g[i] = (f(hi) - f(lo)) / (2 * eps)
    return g


@pytest.mark.parametrize("key", [1, (slice(None), 2), np.array([3, 0]), MASK], ids=["int", "column", "index", "mask"])
def test_gradients_through_augmented_assignment(key):
    """x = w * 2; x[key] *= v; x[key] += v; loss = sum(x * c), against finite differences."""
    w0 = values((4, 5), 2).astype(np.float64)
    c = values((4, 5), 3).astype(np.float64)
    v0 = values(np.zeros((4, 5))[key].shape, 4).astype(np.float64)

    def loss(w, v):
        x = w * 2
        x[key] *= v
        x[key] += v
        return float((x * c).sum())

    w = oa.tensor(w0.astype(np.float32), requires_grad=True)
    v = oa.tensor(v0.astype(np.float32), requires_grad=True)
    x = w * 2
    x[oa_key(key)] *= v
    x[oa_key(key)] += v
    got = (x * oa.tensor(c.astype(np.float32))).sum()
    got.backward()
    np.testing.assert_allclose(got.item(), loss(w0, v0), rtol=1e-5)
    np.testing.assert_allclose(w.grad.numpy(), numeric_gradient(lambda a: loss(a, v0), w0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(v.grad.numpy(), numeric_gradient(lambda a: loss(w0, a), v0), rtol=1e-4, atol=1e-4)


def test_in_place_ops_with_history_as_torch():
    w = oa.tensor([1.0, 2.0, 3.0], requires_grad=True)
    h = w * 2
    h += w  # h = 3 w
    h *= w  # h = 3 w^2
    h.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [6, 12, 18], rtol=1e-6)
    plain = oa.zeros(3)
    plain += w
    plain.sum().backward()
    np.testing.assert_allclose(w.grad.numpy(), [7, 13, 19], rtol=1e-6)
    # A view of h would keep h's old history: refused rather than wrong.
    h = w * 2
    flat = h.view(3, 1)
    with pytest.raises(oa.FailedPreconditionError, match="shares its storage"):
        h[0] += 1
    assert flat.shape == (3, 1)
