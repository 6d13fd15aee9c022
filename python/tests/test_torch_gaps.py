"""torch behaviours a new user missed, against NumPy float64 and torch's documented output: the NumPy-style
aliases axis= and keepdims= of the reductions, permute(dims=...), fill_ with a 0-d tensor, and repr / str in
torch's printed form."""
import math

import numpy as np
import pytest

import oa
from reference import assert_close, values

A = values((2, 3, 4), 1)


@pytest.mark.parametrize("name, ref", [("sum", np.sum), ("mean", np.mean), ("amax", np.max), ("amin", np.min),
                                       ("prod", np.prod), ("var", lambda a, axis, keepdims: a.var(axis, ddof=1, keepdims=keepdims)),
                                       ("std", lambda a, axis, keepdims: a.std(axis, ddof=1, keepdims=keepdims)),
                                       ("norm", lambda a, axis, keepdims: np.sqrt((a * a).sum(axis, keepdims=keepdims))),
                                       ("logsumexp", lambda a, axis, keepdims: np.log(np.exp(a).sum(axis, keepdims=keepdims)))])
def test_reductions_take_numpy_aliases(name, ref):
    x, a = oa.tensor(A), A.astype(np.float64)
    for axis, keepdims in [(1, False), ((0, 2), True), (-1, True)]:
        want = ref(a, axis=axis, keepdims=keepdims)
        assert_close(getattr(x, name)(axis=axis, keepdims=keepdims).numpy(), want)
        assert_close(getattr(oa, name)(x, axis=axis, keepdims=keepdims).numpy(), want)
        assert_close(getattr(x, name)(dim=axis, keepdim=keepdims).numpy(), want)
    with pytest.raises(TypeError, match=rf"oa.Tensor.{name}: got dim and its alias axis"):
        getattr(x, name)(dim=0, axis=1)
    with pytest.raises(TypeError, match=rf"oa.{name}: got keepdim and its alias keepdims"):
        getattr(oa, name)(x, dim=0, keepdim=True, keepdims=True)


def test_max_min_argmax_all_any_take_numpy_aliases():
    x = oa.tensor(A)
    values_, indices = x.max(axis=1, keepdims=True)
    np.testing.assert_array_equal(values_.numpy(), A.max(1, keepdims=True))
    np.testing.assert_array_equal(indices.numpy(), A.argmax(1)[:, None])
    np.testing.assert_array_equal(oa.min(x, axis=2).values.numpy(), A.min(2))
    np.testing.assert_array_equal(x.argmax(axis=2).numpy(), A.argmax(2))
    np.testing.assert_array_equal(oa.argmin(x, axis=0, keepdims=True).numpy(), A.argmin(0)[None])
    np.testing.assert_array_equal(x.argmin(axis=-1).numpy(), A.argmin(-1))
    np.testing.assert_array_equal((x > 0).all(axis=1).numpy(), (A > 0).all(1))
    np.testing.assert_array_equal(oa.any(x > 0.9, axis=(0, 2), keepdims=True).numpy(), (A > 0.9).any((0, 2), keepdims=True))
    with pytest.raises(TypeError, match="oa.Tensor.argmax: got dim and its alias axis"):
        x.argmax(0, axis=0)
    with pytest.raises(TypeError, match="oa.argmin: dim must be None or an int, not float"):
        oa.argmin(x, axis=1.5)


def test_sum_gradient_through_axis():
    x = oa.tensor(A, requires_grad=True)
    (x.sum(axis=1, keepdims=True) * oa.tensor(values((2, 1, 4), 2))).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.broadcast_to(values((2, 1, 4), 2), A.shape))


def test_permute_takes_dims_by_keyword():
    x = oa.tensor(A)
    np.testing.assert_array_equal(x.permute(dims=(2, 0, 1)).numpy(), A.transpose(2, 0, 1))
    np.testing.assert_array_equal(x.permute(dims=[1, 2, 0]).numpy(), A.transpose(1, 2, 0))
    np.testing.assert_array_equal(oa.permute(x, (2, 1, 0)).numpy(), A.transpose(2, 1, 0))
    np.testing.assert_array_equal(oa.permute(x, dims=(0, 2, 1)).numpy(), A.transpose(0, 2, 1))
    with pytest.raises(TypeError, match="oa.Tensor.permute: unexpected keyword argument 'dim' \\(it takes dims\\)"):
        x.permute(dim=(2, 0, 1))
    with pytest.raises(TypeError, match="oa.Tensor.permute: dims given by position and as dims="):
        x.permute(2, 0, 1, dims=(2, 0, 1))
    with pytest.raises(oa.InvalidArgumentError):
        oa.permute(x, (0, 0, 1))


def test_fill_takes_a_0d_tensor():
    x = oa.zeros(2, 3)
    assert x.fill_(oa.tensor(2.5)) is x
    np.testing.assert_array_equal(x.numpy(), np.full((2, 3), 2.5, np.float32))
    i = oa.zeros(3, dtype=oa.int32)
    np.testing.assert_array_equal(i.fill_(oa.tensor(-2)).numpy(), [-2, -2, -2])
    np.testing.assert_array_equal(i.fill_(oa.tensor(-2.5)).numpy(), [-2, -2, -2])  # truncated, as i.fill_(-2.5)
    b = oa.zeros(2, dtype=oa.bool)
    np.testing.assert_array_equal(b.fill_(oa.tensor(3)).numpy(), [True, True])
    h = oa.zeros(2, dtype=oa.float16)
    np.testing.assert_array_equal(h.fill_(oa.tensor(0.1)).numpy(), np.full(2, 0.1, np.float16))
    # A value that requires grad receives the sum of the filled tensor's gradient, as torch.
    v = oa.tensor(1.5, requires_grad=True)
    y = oa.zeros(2, 2)
    y.fill_(v)
    w = values((2, 2), 3)
    (y * oa.tensor(w)).sum().backward()
    np.testing.assert_array_equal(y.numpy(), np.full((2, 2), 1.5, np.float32))
    assert_close(v.grad.numpy(), w.astype(np.float64).sum())
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.Tensor.fill_: value must be a number or a 0-d tensor, got a "
                                                      r"tensor of shape \[2\]"):
        x.fill_(oa.ones(2))
    with pytest.raises(TypeError, match="oa.Tensor.fill_: value must be a number"):
        x.fill_("1")


def test_repr_is_torchs():
    # torch 2.x prints these (torch/_tensor_str.py, default print options), with oa's dtype names.
    assert repr(oa.tensor([[1.0, 2.0], [3.0, 4.0]])) == "tensor([[1., 2.],\n        [3., 4.]])"
    assert repr(oa.tensor([1.5, 2.25], dtype=oa.float16)) == "tensor([1.5000, 2.2500], dtype=oa.float16)"
    assert repr(oa.tensor([0.1, -2.0], dtype=oa.bfloat16)) == "tensor([ 0.1001, -2.0000], dtype=oa.bfloat16)"
    assert repr(oa.ones(2, requires_grad=True)) == "tensor([1., 1.], requires_grad=True)"
    assert repr(oa.ones(2, requires_grad=True) * 2) == "tensor([2., 2.], grad_fn=<oa::matrix::affine>)"
    assert repr(oa.tensor([1, -20, 3])) == "tensor([  1, -20,   3])"
    assert repr(oa.tensor([True, False])) == "tensor([ True, False])"
    assert repr(oa.tensor(3.5)) == "tensor(3.5000)"
    assert repr(oa.tensor(7)) == "tensor(7)"
    assert repr(oa.zeros(0, 3)) == "tensor([], size=(0, 3))"
    assert repr(oa.zeros(0, dtype=oa.int32)) == "tensor([], dtype=oa.int32)"
    assert repr(oa.tensor([1e-5, 1.0, 1e5])) == "tensor([1.0000e-05, 1.0000e+00, 1.0000e+05])"
    assert repr(oa.tensor([1.0, math.nan, -math.inf])) == "tensor([1., nan, -inf])"
    assert repr(oa.zeros(3)) == "tensor([0., 0., 0.])"
    assert repr(oa.full((2000,), 3.0)) == "tensor([3., 3., 3.,  ..., 3., 3., 3.])"
    assert repr(oa.arange(2000.0)) == ("tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n"
                                       "        1.9990e+03])")
    assert repr(oa.arange(10.0) / 3) == ("tensor([0.0000, 0.3333, 0.6667, 1.0000, 1.3333, 1.6667, 2.0000, 2.3333, "
                                         "2.6667,\n        3.0000])")
    assert repr(oa.arange(0.0, 2002.0, dtype=oa.int32).reshape(2, 1001)) == (
        "tensor([[   0,    1,    2,  ...,  998,  999, 1000],\n"
        "        [1001, 1002, 1003,  ..., 1999, 2000, 2001]])")
    assert repr(oa.ones(2, 1, 2)) == "tensor([[[1., 1.]],\n\n        [[1., 1.]]])"
    x = oa.tensor(values((3, 4), 5))
    assert str(x) == repr(x)
    # Every value printed is the tensor's (to the 4 decimals shown).
    shown = [float(v) for v in repr(x)[7:-1].replace("[", " ").replace("]", " ").replace(",", " ").split()]
    np.testing.assert_allclose(shown, x.numpy().reshape(-1), atol=5e-5)
