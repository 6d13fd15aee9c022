"""torch names a user porting PyTorch code reached for, against NumPy: the
methods mul, div, eq..ge, t, all, any, view_as, expand_as, type_as,
is_floating_point, contiguous, clamp_, exp_, relu_ and .device; the functions
zeros_like, ones_like, full_like, eye, transpose, reshape, clamp, softmax,
log_softmax and bmm; and x.to with a device or a tensor."""
import numpy as np
import pytest

import oa
from reference import assert_close, check_gradients, log_softmax, softmax, values

A = values((3, 4), 1)
B = values((3, 4), 2)


def test_mul_and_div_match_the_operators_and_numpy():
    a, b = oa.tensor(A), oa.tensor(B + 2)
    for got in (a.mul(b), oa.mul(a, b)):
        assert_close(got.numpy(), A * (B + 2))
    assert_close(a.mul(3).numpy(), A * 3)
    for got in (a.div(b), oa.div(a, b), oa.div(a, b, rounding_mode=None)):
        assert_close(got.numpy(), A / (B + 2))
    assert_close(a.div(4).numpy(), A / 4)
    assert_close(oa.div(2, b).numpy(), 2 / (B + 2))
    # Integers divide truly, as torch: int32 / int32 gives float32.
    q = oa.tensor([7, -7]).div(oa.tensor([2, 2]))
    assert q.dtype == oa.float32 and q.tolist() == [3.5, -3.5]
    assert oa.tensor([2, 3]).mul(oa.tensor([4, 5])).dtype == oa.int32


def test_mul_and_div_gradients():
    check_gradients(lambda x, y: x.mul(y), lambda x, y: x * y, [A, B])
    check_gradients(lambda x, y: oa.div(x, y), lambda x, y: x / y, [A, B + 2])


def test_div_refuses_rounding_modes_and_two_numbers():
    for mode in ("floor", "trunc"):
        with pytest.raises(oa.UnsupportedError, match=f"oa.Tensor.div: rounding_mode='{mode}'.*floor_divide"):
            oa.tensor(A).div(2, rounding_mode=mode)
    with pytest.raises(TypeError, match="oa.div: input or other must be a tensor"):
        oa.div(1, 2)
    with pytest.raises(TypeError, match="oa.Tensor.div: other must be a tensor or a number"):
        oa.tensor(A).div("2")


@pytest.mark.parametrize("name,ref", [("eq", np.equal), ("ne", np.not_equal), ("lt", np.less), ("le", np.less_equal),
                                      ("gt", np.greater), ("ge", np.greater_equal)])
def test_comparison_methods_and_functions(name, ref):
    a = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32)
    b = np.array([[3], [4]], dtype=np.float32)
    for got in (getattr(oa.tensor(a), name)(oa.tensor(b)), getattr(oa, name)(oa.tensor(a), oa.tensor(b))):
        assert got.dtype == oa.bool
        np.testing.assert_array_equal(got.numpy(), ref(a, b))
    np.testing.assert_array_equal(getattr(oa.tensor(a), name)(3).numpy(), ref(a, 3))
    np.testing.assert_array_equal(getattr(oa.tensor(a, dtype=oa.int32), name)(4).numpy(), ref(a, 4))


def test_t_transposes_2d_and_keeps_fewer_axes():
    assert_close(oa.tensor(A).t().numpy(), A.T)
    v = oa.tensor([1.0, 2.0])
    assert v.t().tolist() == [1.0, 2.0] and oa.tensor(3.0).t().item() == 3.0
    with pytest.raises(oa.InvalidArgumentError, match="oa.Tensor.t: expects a tensor with <= 2 dimensions"):
        oa.zeros(2, 3, 4).t()
    check_gradients(lambda x: x.t(), lambda x: x.T, [A])


def test_all_and_any_over_dims():
    x = np.array([[0.0, 1.0, 2.0], [3.0, 4.0, 5.0], [0.0, 0.0, 0.0]], dtype=np.float32)
    t = oa.tensor(x)
    assert t.all().dtype == oa.bool and t.all().item() is False and t.any().item() is True
    assert oa.ones(2, 2).all().item() is True and oa.zeros(2, 2).any().item() is False
    for dim in (0, 1, -1, (0, 1)):
        for keepdim in (False, True):
            np.testing.assert_array_equal(t.all(dim, keepdim).numpy(), np.all(x, axis=dim, keepdims=keepdim))
            np.testing.assert_array_equal(oa.any(t, dim=dim, keepdim=keepdim).numpy(), np.any(x, axis=dim, keepdims=keepdim))
    b = oa.tensor(x > 0)
    np.testing.assert_array_equal(b.all(1).numpy(), np.all(x > 0, axis=1))
    np.testing.assert_array_equal(oa.tensor([[1, 0], [2, 3]]).any(0).numpy(), [True, True])
    # An empty reduction: all is True, any False, as torch.
    e = oa.zeros(0, 3)
    assert e.all().item() is True and e.any().item() is False
    np.testing.assert_array_equal(e.all(0).numpy(), [True] * 3)
    with pytest.raises(oa.InvalidArgumentError, match="oa.Tensor.any: dim 2 is out of range"):
        t.any(2)


def test_view_as_expand_as_type_as():
    a = oa.tensor(A)
    v = a.view_as(oa.zeros(4, 3))
    assert v.shape == (4, 3)
    assert_close(v.numpy(), A.reshape(4, 3))
    row = values((1, 4), 3)
    e = oa.tensor(row).expand_as(a)
    assert_close(e.numpy(), np.broadcast_to(row, (3, 4)))
    check_gradients(lambda r: r.expand_as(oa.zeros(3, 4)), lambda r: np.broadcast_to(r, (3, 4)), [row])
    with pytest.raises(oa.FailedPreconditionError, match="oa.Tensor.expand_as"):
        e.add_(1)
    i = oa.tensor([1, 2]).type_as(a)
    assert i.dtype == oa.float32 and i.tolist() == [1.0, 2.0]
    assert a.type_as(oa.zeros(1, dtype=oa.float16)).dtype == oa.float16


def test_is_floating_point_contiguous_and_device():
    assert oa.zeros(1).is_floating_point() and oa.zeros(1, dtype=oa.bfloat16).is_floating_point()
    assert not oa.tensor([1]).is_floating_point() and not oa.tensor([True]).is_floating_point()
    a = oa.tensor(A)
    assert a.contiguous() is a
    assert a.device == a.engine == oa.default_engine()


def test_in_place_clamp_exp_relu():
    a = oa.tensor(A)
    assert a.clamp_(-0.5, 0.25) is a
    assert_close(a.numpy(), np.clip(A, -0.5, 0.25))
    b = oa.tensor(A)
    b.exp_()
    assert_close(b.numpy(), np.exp(A), rtol=1e-5)
    c = oa.tensor(A)
    c.relu_()
    assert_close(c.numpy(), np.maximum(A, 0))
    i = oa.tensor([-3, 5])
    i.clamp_(max=2)
    assert i.dtype == oa.int32 and i.tolist() == [-3, 2]
    with pytest.raises(oa.InvalidArgumentError, match="oa.Tensor.clamp_: result type f32"):
        i.clamp_(0.5)
    leaf = oa.tensor(A, requires_grad=True)
    with pytest.raises(oa.FailedPreconditionError, match="leaf Variable"):
        leaf.exp_()
    # On a non-leaf the op is recorded: d/dx sum(exp(2x) * w) = 2 exp(2x) w.
    w = values(A.shape, 4)
    y = leaf * 2
    y.exp_()
    y.backward(oa.tensor(w))
    assert_close(leaf.grad.numpy(), 2 * np.exp(2 * A) * w, rtol=1e-4)
    leaf.grad = None
    z = leaf * 1
    z.clamp_(-0.5, 0.25).relu_()
    z.backward(oa.tensor(w))
    assert_close(leaf.grad.numpy(), np.where((A > 0) & (A < 0.25), w, 0))


def test_like_functions_and_eye():
    a = oa.tensor(A)
    for got, value in ((oa.zeros_like(a), 0.0), (oa.ones_like(a), 1.0), (oa.full_like(a, 2.5), 2.5)):
        assert got.shape == (3, 4) and got.dtype == oa.float32 and got.engine == a.engine
        np.testing.assert_array_equal(got.numpy(), np.full((3, 4), value, np.float32))
    i = oa.full_like(oa.tensor([1, 2]), 7)
    assert i.dtype == oa.int32 and i.tolist() == [7, 7]
    assert oa.ones_like(a, dtype=oa.bool).dtype == oa.bool and oa.zeros_like(a, dtype=oa.float16).dtype == oa.float16
    g = oa.zeros_like(a, requires_grad=True)
    assert g.requires_grad and g.is_leaf
    assert oa.full_like(oa.tensor([1]), 0.5).tolist() == [0]  # truncated, as torch
    with pytest.raises(oa.InvalidArgumentError, match="oa.full_like: value inf cannot be converted to type int32"):
        oa.full_like(oa.tensor([1]), float("inf"))
    with pytest.raises(TypeError, match="oa.full_like: fill_value must be a number"):
        oa.full_like(a, "1")
    for n, m in ((3, None), (2, 4), (4, 2), (1, 1), (0, 3)):
        e = oa.eye(n, m)
        assert e.dtype == oa.float32
        np.testing.assert_array_equal(e.numpy(), np.eye(n, m, dtype=np.float32))
    assert oa.eye(2, dtype=oa.int32).tolist() == [[1, 0], [0, 1]]
    assert oa.eye(2, dtype=oa.bool).tolist() == [[True, False], [False, True]]
    with pytest.raises(oa.InvalidArgumentError, match="oa.eye: n and m must be >= 0"):
        oa.eye(-1)


def test_transpose_reshape_clamp_functions():
    x = values((2, 3, 4), 5)
    t = oa.tensor(x)
    assert_close(oa.transpose(t, 0, 2).numpy(), x.transpose(2, 1, 0))
    with pytest.raises(oa.FailedPreconditionError, match="oa.transpose"):
        oa.transpose(t, 0, 1).add_(1)
    r = oa.reshape(t, (4, -1))
    assert r.shape == (4, 6)
    assert_close(r.numpy(), x.reshape(4, 6))
    assert_close(oa.clamp(t, min=-0.3).numpy(), np.maximum(x, -0.3))
    assert_close(oa.clamp(t, -0.3, 0.2).numpy(), np.clip(x, -0.3, 0.2))
    assert oa.clamp(oa.tensor([-4, 4]), -1, 1).tolist() == [-1, 1]
    check_gradients(lambda y: oa.clamp(y, -0.3, 0.2), lambda y: np.clip(y, -0.3, 0.2), [x])


def test_softmax_log_softmax_bmm_are_the_functional_ones():
    assert oa.softmax is oa.nn.functional.softmax and oa.log_softmax is oa.nn.functional.log_softmax
    assert oa.bmm is oa.nn.functional.bmm
    assert_close(oa.softmax(oa.tensor(A), -1).numpy(), softmax(A.astype(np.float64)))
    assert_close(oa.log_softmax(oa.tensor(A), dim=-1).numpy(), log_softmax(A.astype(np.float64)))
    p, q = values((2, 3, 4), 6), values((2, 4, 5), 7)
    assert_close(oa.bmm(oa.tensor(p), oa.tensor(q)).numpy(), p @ q)


def test_to_takes_devices_and_tensors():
    a = oa.tensor(A)
    e = oa.default_engine()
    for device in ("cuda", "cuda:0", "vulkan", e, a.device):
        assert a.to(device) is a
    h = a.to("cuda", oa.float16)
    assert h.dtype == oa.float16
    assert a.to(h).dtype == oa.float16
    assert oa.tensor([1, 2]).to(a).dtype == oa.float32
    assert a.to(device=e, dtype=oa.bfloat16, non_blocking=True).dtype == oa.bfloat16
    assert a.to(oa.float32) is a
    c = a.to(oa.float32, copy=True)
    assert c is not a
    assert_close(c.numpy(), A)
    leaf = oa.tensor(A, requires_grad=True)
    leaf.to("cuda", oa.float16).float().sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), np.ones_like(A))
    with pytest.raises(oa.UnsupportedError, match=r"oa.Tensor.to\('cpu'\): oa has no CPU device"):
        a.to("cpu")
    with pytest.raises(oa.UnsupportedError, match="not an oa device"):
        a.to("mps")
    with pytest.raises(TypeError, match="oa.Tensor.to: expected a dtype, an oa.Engine, a device string or a tensor, not int"):
        a.to(3)
    with pytest.raises(TypeError, match="oa.Tensor.to: unexpected keyword arguments"):
        a.to(oa.float16, layout=1)
    assert a.to(oa.int32).dtype == oa.int32
