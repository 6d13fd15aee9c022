"""torch.sort / argsort, torch.einsum and torch.nn.functional.interpolate, composed in Python over oa's ops, against
NumPy float64 oracles with finite-difference gradients, and their errors."""
import numpy as np
import pytest

import oa
from reference import check_gradients, values


def stable_order(x, axis, descending):
    """np's stable argsort, for descending by the negated values (exact for int64 and floats without NaN)."""
    return np.argsort(-x if descending else x, axis=axis, kind="stable")


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_orders_stably_along_dim(dim, descending):
    x = np.round(values((4, 7, 3), 1) * 3) / 3  # few distinct values: many ties
    order = stable_order(x.astype(np.float64), dim, descending)
    for r in (oa.sort(oa.tensor(x), dim, descending), oa.tensor(x).sort(dim=dim, descending=descending, stable=True)):
        assert type(r) is oa.return_types.sort
        np.testing.assert_array_equal(r.indices.numpy(), order)
        assert r.indices.dtype == oa.int32
        np.testing.assert_array_equal(r.values.numpy(), np.take_along_axis(x, order, dim))
    np.testing.assert_array_equal(oa.argsort(oa.tensor(x), dim, descending).numpy(), order)
    np.testing.assert_array_equal(oa.tensor(x).argsort(dim, descending=descending).numpy(), order)


def test_sort_nan_and_signed_zeros_as_torch():
    x = oa.tensor([1.0, float("nan"), -0.0, 0.0, 2.0, float("-inf")])
    up, down = x.sort(), x.sort(descending=True)
    np.testing.assert_array_equal(up.indices.numpy(), [5, 2, 3, 0, 4, 1])
    np.testing.assert_array_equal(down.indices.numpy(), [1, 4, 0, 2, 3, 5])
    assert np.signbit(up.values.numpy()[1]) and not np.signbit(up.values.numpy()[2])
    assert np.isnan(up.values.numpy()[-1]) and np.isnan(down.values.numpy()[0])


@pytest.mark.parametrize("descending", [False, True])
def test_sort_int32_exactly_beyond_float32(descending):
    x = np.array([[3, 1, 2, 2, -70000, 70000, 2**31 - 1, -2**31, 16777217, 16777216, -16777217, -16777216, 65536,
                   65535, -65536, -65537]], np.int32)
    x = np.concatenate([x, x[:, ::-1]])
    r = oa.sort(oa.tensor(x), descending=descending)
    order = stable_order(x.astype(np.int64), 1, descending)
    np.testing.assert_array_equal(r.indices.numpy(), order)
    assert r.values.dtype == oa.int32
    np.testing.assert_array_equal(r.values.numpy(), np.take_along_axis(x, order, 1))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "bool"])
def test_sort_other_dtypes(dtype):
    x = np.round(values((3, 6), 2) * 4) / 4
    t = oa.tensor(x).to(getattr(oa, dtype)) if dtype != "bool" else oa.tensor(x > 0)
    ref = t.float().numpy().astype(np.float64)
    r = t.sort(0, descending=True)
    assert r.values.dtype == t.dtype
    order = stable_order(ref, 0, True)
    np.testing.assert_array_equal(r.indices.numpy(), order)
    np.testing.assert_array_equal(r.values.float().numpy(), np.take_along_axis(ref, order, 0))


def test_sort_edge_shapes():
    r = oa.sort(oa.tensor(2.5))
    assert r.values.shape == () and r.values.item() == 2.5 and r.indices.item() == 0
    e = oa.zeros(2, 0).sort(1)
    assert e.values.shape == (2, 0) and e.indices.shape == (2, 0)


@pytest.mark.parametrize("descending", [False, True])
def test_sort_gradient_reaches_input(descending):
    x = values((3, 5), 3)  # distinct values: the order does not change under the finite differences
    check_gradients(lambda t: oa.sort(t, 1, descending).values,
                    lambda a: np.take_along_axis(a, stable_order(a, 1, descending), 1), [x])
    # Through float16: each value's gradient goes back to where the value came from (rounded to float16).
    t, w = oa.tensor(x, requires_grad=True), values((3, 5), 4)
    t.half().sort(0, descending).values.float().backward(oa.tensor(w))
    expected = np.zeros_like(w)
    np.put_along_axis(expected, stable_order(x.astype(np.float16).astype(np.float64), 0, descending), w, 0)
    np.testing.assert_allclose(t.grad.numpy(), expected, rtol=1e-3)


def test_sort_errors():
    x = oa.tensor(values((2, 3), 4))
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.sort: dim 2 is out of range for x of shape \[2, 3\]"):
        oa.sort(x, 2)
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.Tensor.argsort: dim -3 is out of range"):
        x.argsort(-3)
    with pytest.raises(TypeError, match=r"oa.sort: input must be an oa.Tensor, not ndarray"):
        oa.sort(np.zeros(3))
    with pytest.raises(TypeError, match=r"oa.argsort: descending must be a bool, not str"):
        oa.argsort(x, descending="yes")
    with pytest.raises(TypeError, match=r"oa.Tensor.sort: dim must be an int, not float"):
        x.sort(1.0)
