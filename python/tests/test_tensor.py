"""oa.Tensor: conversion, creation, arithmetic and views against NumPy (f64)."""
import warnings

import numpy as np
import pytest

import oa
from reference import assert_close, check_gradients, values


@pytest.mark.parametrize(
    "array, dtype, numpy_dtype",
    [
        (np.arange(6, dtype=np.float64).reshape(2, 3) / 7, oa.float32, np.float32),
        (np.array([1.5, -2.25, 65504.0], dtype=np.float16), oa.float16, np.float16),
        (np.array([[1, -2], [2**31 - 1, -(2**31)]], dtype=np.int64), oa.int32, np.int32),
        (np.array([True, False, True]), oa.bool, np.bool_),
        (np.float32(3.5), oa.float32, np.float32),
    ],
)
def test_round_trip(array, dtype, numpy_dtype):
    t = oa.tensor(array)
    assert t.dtype == dtype
    assert t.shape == array.shape
    out = t.numpy()
    assert out.dtype == numpy_dtype
    np.testing.assert_array_equal(out, array.astype(numpy_dtype))
    np.testing.assert_array_equal(np.asarray(t), out)
    assert oa.from_numpy(np.asarray(array)).dtype == dtype


def test_explicit_dtypes():
    x = [0.1, 1.0 / 3.0, 300.7]
    np.testing.assert_array_equal(oa.tensor(x, dtype=oa.float16).numpy(), np.array(x, dtype=np.float16))
    # bfloat16 comes back widened to float32: the top half of the f32 bits, rounded to nearest even.
    bf = oa.tensor(x, dtype=oa.bfloat16).numpy()
    assert bf.dtype == np.float32
    bits = np.array(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16).astype(np.uint32).view(np.float32)
    np.testing.assert_array_equal(bf, rounded)
    np.testing.assert_array_equal(oa.tensor([1.7, -2.2], dtype=oa.int32).numpy(), [1, -2])
    np.testing.assert_array_equal(oa.tensor([0.5, 0.0], dtype=oa.bool).numpy(), [True, False])
    assert oa.tensor([1.0], dtype=oa.float16).float().dtype == oa.float32


def test_int32_from_floats_names_nan_inf_and_out_of_range_without_numpy_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # NumPy's "invalid value encountered in cast" would fail here
        for data, message in [([np.nan], "element 0 is NaN"), ([1.0, np.inf], "element 1 is inf"),
                              (np.array([-np.inf]), "element 0 is -inf"), ([0.0, 1e30], "element 1 is 1e\\+30, outside int32")]:
            with pytest.raises(oa.InvalidArgumentError, match=f"oa.tensor: {message}"):
                oa.tensor(data, dtype=oa.int32)
        np.testing.assert_array_equal(oa.tensor([2147483647.9, -2147483648.9], dtype=oa.int32).numpy(), [2**31 - 1, -2**31])


def test_item_and_lists():
    assert oa.tensor(2.5).item() == 2.5
    assert oa.tensor([7]).item() == 7
    assert oa.tensor([True]).item() is True
    assert float(oa.tensor([[0.25]])) == 0.25
    assert oa.tensor([[1, 2], [3, 4]]).tolist() == [[1, 2], [3, 4]]
    t = oa.zeros(4, 2)
    assert len(t) == 4 and t.ndim == 2 and t.dim() == 2 and t.numel() == 8 and t.size(-1) == 2 and t.size() == (4, 2)


def test_creation():
    np.testing.assert_array_equal(oa.zeros(2, 3).numpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(oa.ones((3,)).numpy(), np.ones(3))
    np.testing.assert_array_equal(oa.full([2, 2], 1.5).numpy(), np.full((2, 2), 1.5))
    np.testing.assert_array_equal(oa.arange(5).numpy(), np.arange(5, dtype=np.int32))  # ints give int32, as torch int64
    assert_close(oa.arange(1, 2, 0.25).numpy(), np.arange(1, 2, 0.25))
    assert oa.zeros(2, dtype=oa.float16).dtype == oa.float16
    assert oa.ones(3, requires_grad=True).requires_grad


def test_random_is_seeded():
    a = oa.rand(64, 32, seed=5).numpy()
    np.testing.assert_array_equal(a, oa.rand(64, 32, seed=5).numpy())
    assert not np.array_equal(a, oa.rand(64, 32, seed=6).numpy())
    assert a.min() >= 0 and a.max() < 1 and abs(a.mean() - 0.5) < 0.05
    n = oa.randn(64, 64, seed=1).numpy()
    assert abs(n.mean()) < 0.05 and abs(n.std() - 1) < 0.05
    oa.manual_seed(3)
    first = [oa.rand(8).numpy(), oa.randn(8).numpy()]
    oa.manual_seed(3)
    np.testing.assert_array_equal(oa.rand(8).numpy(), first[0])
    np.testing.assert_array_equal(oa.randn(8).numpy(), first[1])


def test_arithmetic():
    a, b = values((3, 4), 1), values((3, 4), 2, 0.5, 2.0)
    ta, tb = oa.tensor(a), oa.tensor(b)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    assert_close((ta + tb).numpy(), a64 + b64)
    assert_close((ta - tb).numpy(), a64 - b64)
    assert_close((ta * tb).numpy(), a64 * b64)
    assert_close((ta / tb).numpy(), a64 / b64)
    assert_close((-ta).numpy(), -a64)
    assert_close(abs(ta).numpy(), np.abs(a64))
    assert_close((ta + 2).numpy(), a64 + 2)
    assert_close((3 - ta).numpy(), 3 - a64)
    assert_close((0.5 * ta).numpy(), 0.5 * a64)
    assert_close((ta / 4).numpy(), a64 / 4)
    assert_close((2 / tb).numpy(), 2 / b64)
    assert_close((ta @ tb.mT).numpy(), a64 @ b64.T)
    assert_close(oa.matmul(ta, oa.tensor(b.T)).numpy(), a64 @ b64.T)
    # A per-row vector broadcasts (NumPy's rules, one contiguous run of axes).
    row = values((4,), 3)
    assert_close((ta * oa.tensor(row)).numpy(), a64 * row)
    assert_close((np.float64(2.0) * ta).numpy(), 2 * a64)


def test_elementwise_functions():
    x = values((2, 5), 4, 0.1, 3.0)
    t, x64 = oa.tensor(x), x.astype(np.float64)
    for name, ref in [
        ("exp", np.exp),
        ("log", np.log),
        ("sqrt", np.sqrt),
        ("rsqrt", lambda v: 1 / np.sqrt(v)),
        ("reciprocal", lambda v: 1 / v),
        ("abs", np.abs),
        ("square", np.square),
        ("relu", lambda v: np.maximum(v, 0)),
        ("sigmoid", lambda v: 1 / (1 + np.exp(-v))),
        ("tanh", np.tanh),
        ("neg", np.negative),
    ]:
        assert_close(getattr(oa, name)(t).numpy(), ref(x64))
        assert_close(getattr(t, name)().numpy(), ref(x64))
    assert_close(t.clamp(min=1.0).numpy(), np.maximum(x64, 1.0))
    assert_close(t.clamp(0.5, 1.5).numpy(), np.clip(x64, 0.5, 1.5))
    assert_close(oa.maximum(t, oa.full([2, 5], 1.0)).numpy(), np.maximum(x64, 1.0))


def test_reductions():
    x = values((3, 5), 5)
    t, x64 = oa.tensor(x), x.astype(np.float64)
    assert_close(t.sum().numpy(), x64.sum())
    assert_close(t.sum(dim=-1).numpy(), x64.sum(-1))
    assert_close(t.sum(1, keepdim=True).numpy(), x64.sum(1, keepdims=True))
    assert_close(t.mean(dim=-1).numpy(), x64.mean(-1))
    assert_close(t.amax(dim=-1).numpy(), x64.max(-1))
    assert_close(t.amax().numpy(), x64.max())
    np.testing.assert_array_equal(t.argmax(dim=-1).numpy(), x.argmax(-1))
    with pytest.raises(oa.InvalidArgumentError, match="out of range"):
        t.sum(dim=2)
    with pytest.raises(oa.InvalidArgumentError, match="dim 1 appears multiple times"):
        t.sum(dim=(1, -1))


def bfloat16_round(a):
    """float32 values rounded to nearest even bfloat16, as float32."""
    bits = np.asarray(a, dtype=np.float32).reshape(-1).view(np.uint32).astype(np.int64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16).astype(np.uint32).view(np.float32).reshape(np.shape(a))


# float16 and bfloat16 reduce in float32 and round once to their own dtype,
# as torch: multiples of 1/8 sum exactly in float32 (a mean is within half a
# unit in the last place), and 4096 ones would stall at 2048 in a serial
# float16 sum.
@pytest.mark.parametrize("dtype, rounded, eps", [(oa.float16, lambda a: np.float16(a).astype(np.float32), 2.0**-11),
                                                 (oa.bfloat16, bfloat16_round, 2.0**-8)])
def test_half_reductions(dtype, rounded, eps):
    x = np.round(values((4, 3, 8), 9, -8, 8) * 8) / 8
    t, x64 = oa.tensor(x, dtype=dtype), x.astype(np.float64)
    for dim in [None, 0, -1, (0, 2)]:
        axis = dim if dim is None or isinstance(dim, int) else tuple(dim)
        for keepdim in [False, True]:
            s, m = t.sum(dim, keepdim=keepdim), oa.mean(t, dim=dim, keepdim=keepdim)
            assert s.dtype == m.dtype == dtype
            np.testing.assert_array_equal(s.float().numpy(), rounded(x64.sum(axis=axis, keepdims=keepdim)))
            assert_close(m.float().numpy(), x64.mean(axis=axis, keepdims=keepdim), rtol=eps, atol=0)
    assert oa.ones(4096, dtype=dtype).sum().item() == 4096
    # The other reductions round once too, and argmax reads 16-bit values.
    np.testing.assert_array_equal(t.amax(1).float().numpy(), x.max(1))
    np.testing.assert_array_equal(oa.amin(t, (0, 2)).float().numpy(), x.min((0, 2)))
    assert_close(t.logsumexp(-1).float().numpy(), np.log(np.exp(x64).sum(-1)), rtol=eps, atol=0)
    assert t.prod(0).dtype == t.var(1).dtype == t.std(1).dtype == t.norm(2, -1).dtype == dtype
    assert_close(t.var(1).float().numpy(), x64.var(1, ddof=1), rtol=eps, atol=0)
    assert_close(t.std((0, 2), correction=0).float().numpy(), x64.std((0, 2)), rtol=eps, atol=0)
    assert_close(t.norm(2, -1).float().numpy(), np.sqrt((x64 * x64).sum(-1)), rtol=eps, atol=0)
    np.testing.assert_array_equal(t.argmax(1).numpy(), x.argmax(1))
    np.testing.assert_array_equal(oa.argmin(t).item(), x.argmin())
    with oa.autocast(dtype):  # autocast's policy, as torch's: sum and mean give float32, amax keeps the dtype
        assert t.sum().dtype == t.mean(0).dtype == t.var(1).dtype == oa.float32
        assert t.amax(1).dtype == dtype
    # Gradients flow back through the casts (16-bit leaves cannot require grad).
    leaf = oa.tensor(x, requires_grad=True)
    w = np.round(values((4, 8), 10) * 8) / 8
    (leaf.to(dtype).sum(1) * oa.tensor(w, dtype=dtype)).sum().float().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), np.broadcast_to(w[:, None, :], x.shape))
    leaf.grad = None
    leaf.to(dtype).mean().float().backward()
    assert_close(leaf.grad.numpy(), np.full(x.shape, 1 / 96), rtol=eps, atol=0)
    leaf.grad = None
    leaf.to(dtype).var(1).sum().float().backward()
    assert_close(leaf.grad.numpy(), x64 - x64.mean(1, keepdims=True), rtol=2 * eps, atol=2 * eps)  # 2 (x - mean) / (3 - 1)


def test_reductions_over_axes():
    x = values((2, 3, 4), 7)
    t, x64 = oa.tensor(x), x.astype(np.float64)
    for dim in [0, 1, (0, 2), (2, 0, 1), None]:
        axis = dim if dim is None or isinstance(dim, int) else tuple(dim)
        for keepdim in [False, True]:
            assert_close(t.sum(dim=dim, keepdim=keepdim).numpy(), x64.sum(axis=axis, keepdims=keepdim))
            assert_close(t.mean(dim, keepdim=keepdim).numpy(), x64.mean(axis=axis, keepdims=keepdim))
            assert_close(t.amax(dim, keepdim).numpy(), x64.max(axis=axis, keepdims=keepdim))
            assert_close(t.amin(dim, keepdim).numpy(), x64.min(axis=axis, keepdims=keepdim))
            assert_close(t.prod(dim, keepdim).numpy(), x64.prod(axis=axis, keepdims=keepdim))
            assert_close(t.var(dim, keepdim=keepdim).numpy(), x64.var(axis=axis, ddof=1, keepdims=keepdim))
            assert_close(t.std(dim, correction=0, keepdim=keepdim).numpy(), x64.std(axis=axis, keepdims=keepdim))
            m = x64.max(axis=axis, keepdims=True)
            lse = np.log(np.exp(x64 - m).sum(axis=axis, keepdims=True)) + m
            assert_close(t.logsumexp(dim, keepdim).numpy(), lse if keepdim else lse.reshape(np.sum(x64, axis=axis).shape))
            assert_close(t.norm(2, dim, keepdim).numpy(), np.sqrt((x64 * x64).sum(axis=axis, keepdims=keepdim)))
            assert_close(t.norm(1, dim, keepdim).numpy(), np.abs(x64).sum(axis=axis, keepdims=keepdim))
            assert_close(t.norm(float("inf"), dim, keepdim).numpy(), np.abs(x64).max(axis=axis, keepdims=keepdim))
    assert_close(oa.sum(t, (0, 2)).numpy(), x64.sum(axis=(0, 2)))
    for d in [0, 1, -1]:
        assert_close(t.cumsum(d).numpy(), np.cumsum(x64, axis=d))
        assert_close(oa.cumsum(t, d).numpy(), np.cumsum(x64, axis=d))
    check_gradients(lambda a: a.var((0, 2)), lambda a: a.var(axis=(0, 2), ddof=1), [x])
    check_gradients(lambda a: a.amax(1), lambda a: a.max(axis=1), [x])
    check_gradients(lambda a: a.cumsum(1), lambda a: np.cumsum(a, axis=1), [x])


def test_cumsum_of_every_dtype():
    # int32 and bool give exact int32 (torch: int64), wrapping past int32; 16-bit floats sum in float32 and round
    # once; dtype= converts first, as torch's.
    ints = np.random.default_rng(3).integers(-1000, 1000, size=(3, 37)).astype(np.int32)
    for d in (0, 1, -1):
        got = oa.tensor(ints).cumsum(d)
        assert got.dtype == oa.int32
        np.testing.assert_array_equal(got.numpy(), np.cumsum(ints, axis=d))
    big = np.full(5, 2**30, np.int32)
    np.testing.assert_array_equal(oa.cumsum(oa.tensor(big), 0).numpy(), np.cumsum(big, dtype=np.int32))
    mask = np.array([True, False, True, True])
    np.testing.assert_array_equal(oa.cumsum(oa.tensor(mask), 0).numpy(), [1, 1, 2, 3])
    x = values((2, 9), 5)
    for dtype, tolerance in ((oa.float16, 1e-3), (oa.bfloat16, 8e-3)):
        half = oa.tensor(x).to(dtype)
        got = half.cumsum(1)
        assert got.dtype == dtype
        assert_close(got.float().numpy(), np.cumsum(half.float().numpy().astype(np.float64), 1), rtol=tolerance,
                     atol=tolerance)
    as_float = oa.cumsum(oa.tensor(ints), 1, dtype=oa.float32)
    assert as_float.dtype == oa.float32
    assert_close(as_float.numpy(), np.cumsum(ints, axis=1))
    t, w = oa.tensor(x, requires_grad=True), values((2, 9), 6)
    t.half().cumsum(1).float().backward(oa.tensor(w))
    assert_close(t.grad.numpy(), np.cumsum(w[:, ::-1], 1)[:, ::-1], rtol=1e-2, atol=1e-2)
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.cumsum: dim 2 is out of range for x of shape \[3, 37\]"):
        oa.tensor(ints).cumsum(2)


@pytest.mark.parametrize("name", ["max", "min"])
def test_max_and_min_forms(name):
    """torch.max / torch.min: the scalar, the (values, indices) named tuple along a dim, the elementwise form."""
    x = values((3, 4, 5), 11)
    x[1, 2, 3] = x[1, 2, 1]  # a tie: the first index is taken, and only it gets the gradient
    ref, arg = (np.max, np.argmax) if name == "max" else (np.min, np.argmin)
    t = oa.tensor(x)
    whole = getattr(t, name)()
    assert whole.shape == () and whole.item() == ref(x)
    assert getattr(oa, name)(t).item() == ref(x)
    for dim in [0, 1, -1]:
        for keepdim in [False, True]:
            for r in [getattr(t, name)(dim, keepdim), getattr(oa, name)(t, dim=dim, keepdim=keepdim)]:
                assert type(r).__name__ == name and type(r).__module__ == "oa.return_types"
                vals, idx = r
                assert r.values is vals and r.indices is idx and idx.dtype == oa.int32
                np.testing.assert_array_equal(vals.numpy(), ref(x, axis=dim, keepdims=keepdim))
                np.testing.assert_array_equal(idx.numpy(), np.expand_dims(arg(x, axis=dim), dim) if keepdim else arg(x, axis=dim))
    h = getattr(oa.tensor(x, dtype=oa.float16), name)(1)
    assert h.values.dtype == oa.float16
    np.testing.assert_array_equal(h.values.numpy(), ref(x.astype(np.float16), axis=1))
    other = values((4, 5), 12)
    np.testing.assert_array_equal(getattr(t, name)(oa.tensor(other)).numpy(), (np.maximum if name == "max" else np.minimum)(x, other))
    np.testing.assert_array_equal(getattr(oa, name)(t, oa.tensor(other)).numpy(), getattr(t, name)(oa.tensor(other)).numpy())
    # Gradients flow through the values, to the element at each index.
    leaf = oa.tensor(x, requires_grad=True)
    v, i = getattr(leaf, name)(2)
    w = values((3, 4), 13)
    (v * oa.tensor(w)).sum().backward()
    want = np.zeros_like(x)
    np.put_along_axis(want, arg(x, axis=2)[..., None], w[..., None], axis=2)
    np.testing.assert_array_equal(leaf.grad.numpy(), want)
    assert want[1, 2, 3] == 0 or arg(x, axis=2)[1, 2] == 3
    with pytest.raises(TypeError, match=f"oa.Tensor.{name}: dim must be an int"):
        getattr(t, name)((0, 1))
    with pytest.raises(TypeError, match="keepdim=True needs a dim"):
        getattr(t, name)(keepdim=True)
    ints = getattr(oa, name)(oa.tensor([[1, 2 ** 24 + 1, 2 ** 24 + 1]]), 1)
    assert ints.values.dtype == oa.int32 and ints.values.item() == (2**24 + 1 if name == "max" else 1)
    assert ints.indices.item() == (1 if name == "max" else 0)
    bools = getattr(oa, name)(oa.tensor([[True, False]]), 1)  # any / all, the first True / False (see the bool test)
    assert bools.values.dtype == oa.bool and bools.values.tolist() == [name == "max"]
    assert bools.indices.tolist() == [0 if name == "max" else 1]
    import pickle
    assert tuple(pickle.loads(pickle.dumps(getattr(t, name)(0)))[1].numpy().shape) == (4, 5)


def test_numpy_operands_give_tensors():
    """A NumPy array on either side of an operator is taken as a tensor on the tensor's engine: the result is an
    oa.Tensor and autograd reaches the tensor."""
    x = values((2, 3), 21)
    a = values((2, 3), 22).astype(np.float64)
    row = np.arange(3)  # int64: taken as the tensor's float dtype
    cases = [
        (lambda t: t + a, lambda v: v + a), (lambda t: a + t, lambda v: a + v),
        (lambda t: t - a, lambda v: v - a), (lambda t: a - t, lambda v: a - v),
        (lambda t: t * a, lambda v: v * a), (lambda t: a * t, lambda v: a * v),
        (lambda t: t / (a + 2), lambda v: v / (a + 2)), (lambda t: (a + 2) / t, lambda v: (a + 2) / v),
        (lambda t: t * row, lambda v: v * row), (lambda t: np.ones(3) + t, lambda v: 1 + v),
        (lambda t: t @ a.T, lambda v: v @ a.T), (lambda t: a.T @ t, lambda v: a.T @ v),
        (lambda t: t ** np.full(3, 2.0), lambda v: v ** 2),
    ]
    for oa_fn, ref_fn in cases:
        leaf = oa.tensor(x, requires_grad=True)
        got = oa_fn(leaf)
        assert isinstance(got, oa.Tensor) and got.dtype == oa.float32
        assert_close(got.numpy(), ref_fn(x.astype(np.float64)))
        got.sum().backward()
        assert leaf.grad is not None
    t = oa.tensor(x)
    for got, want in [(t > a, x > a), (a < t, a < x), (t == x, np.ones((2, 3), bool)), (a >= t, a >= x)]:
        assert isinstance(got, oa.Tensor) and got.dtype == oa.bool
        np.testing.assert_array_equal(got.numpy(), want)
    h = oa.tensor(x, dtype=oa.float16)
    assert (h + a).dtype == oa.float16 and (a * h).dtype == oa.float16
    i = oa.tensor([1, 2, 3])
    np.testing.assert_array_equal((i == np.array([1, 0, 3])).numpy(), [True, False, True])
    t += np.ones(3)  # in place, as with a tensor
    assert_close(t.numpy(), x + 1)
    with pytest.raises(TypeError, match="unsupported operand"):
        t + [1.0, 2.0, 3.0]  # lists are not operands (as torch's)
    with pytest.raises(TypeError):
        np.add(a, t)  # NumPy's ufuncs defer to (and refuse) tensors
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.Tensor.__add__: NumPy dtype"):
        i + np.array(["a", "b", "c"])


def test_broadcasting_and_pow():
    a, b = values((3, 1, 5), 8), values((4, 1), 9)
    ta, tb = oa.tensor(a), oa.tensor(b)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    assert_close((ta + tb).numpy(), a64 + b64)
    assert_close((ta - tb).numpy(), a64 - b64)
    assert_close((ta * tb).numpy(), a64 * b64)
    assert_close(oa.maximum(ta, tb).numpy(), np.maximum(a64, b64))
    assert_close(oa.minimum(ta, tb).numpy(), np.minimum(a64, b64))
    p = values((3, 1, 5), 10, 0.5, 2.0)
    tp, p64 = oa.tensor(p), p.astype(np.float64)
    assert_close((tp / tb).numpy(), p64 / b64)
    assert_close((tp ** tb).numpy(), p64**b64)
    assert_close(oa.pow(tp, tb).numpy(), p64**b64)
    assert_close((ta**3).numpy(), a64**3)
    assert_close((ta**2.0).numpy(), a64**2)
    assert_close((2.0**ta).numpy(), 2.0**a64)
    assert_close((ta**0).numpy(), np.ones_like(a64))
    check_gradients(lambda x, y: x * y, lambda x, y: x * y, [a, b])
    check_gradients(lambda x, y: x**y, lambda x, y: x**y, [p, b])
    with pytest.raises(oa.InvalidArgumentError, match="do not broadcast"):
        ta + oa.tensor(values((2, 3), 11))


def test_views():
    x = values((2, 3, 4), 6)
    t = oa.tensor(x)
    np.testing.assert_array_equal(t.reshape(6, 4).numpy(), x.reshape(6, 4))
    np.testing.assert_array_equal(t.view(-1).numpy(), x.reshape(-1))
    np.testing.assert_array_equal(t.permute(2, 0, 1).numpy(), x.transpose(2, 0, 1))
    np.testing.assert_array_equal(t.transpose(0, 2).numpy(), x.swapaxes(0, 2))
    np.testing.assert_array_equal(t.unsqueeze(1).numpy(), x[:, None])
    np.testing.assert_array_equal(t.unsqueeze(0).squeeze(0).numpy(), x)
    np.testing.assert_array_equal(t.flatten(1).numpy(), x.reshape(2, 12))
    np.testing.assert_array_equal(oa.tensor(x[:, :1]).expand(2, 3, 4).numpy(), np.broadcast_to(x[:, :1], (2, 3, 4)))


def test_engines():
    devices = oa.devices()
    assert devices and devices[0].index == 0 and devices[0].name
    engine = oa.Engine(device=0)
    assert engine.device.name == devices[0].name
    assert engine != oa.default_engine() and oa.default_engine() == oa.default_engine()
    t = oa.ones(3, engine=engine)
    assert t.engine == engine
    np.testing.assert_array_equal((t + t).numpy(), [2, 2, 2])
    oa.synchronize(engine)
    oa.synchronize()
    assert engine.memory_stats()["live_storages"] >= 1
    with pytest.raises(oa.Error):
        t + oa.ones(3)


def test_comparisons_masks_and_triangles():
    a = np.array([[1.0, -2.0, 0.5, -0.0], [np.nan, 3.0, 2.0, 2.0]], dtype=np.float32)
    b = np.array([1.0, np.nan, 0.5, 2.0], dtype=np.float32)
    ta, tb = oa.tensor(a), oa.tensor(b)
    with np.errstate(invalid="ignore"):
        for got, want in [
            (ta == tb, a == b), (ta != tb, a != b), (ta < tb, a < b), (ta <= tb, a <= b),
            (ta > tb, a > b), (ta >= tb, a >= b), (ta > 0.5, a > 0.5), (0.5 < ta, a > 0.5), (ta == 2.0, a == 2.0),
        ]:
            assert got.dtype == oa.bool
            np.testing.assert_array_equal(got.numpy(), want)
    x, y = values((2, 4), 7), values((4,), 8)
    mask = ta > 0.0
    np.testing.assert_array_equal(oa.where(mask, oa.tensor(x), oa.tensor(y)).numpy(), np.where(a > 0, x, y))
    np.testing.assert_array_equal(oa.tensor(x).masked_fill(mask, -1.0).numpy(), np.where(a > 0, np.float32(-1), x))
    m = values((2, 3, 4), 9)
    np.testing.assert_array_equal(oa.tril(oa.tensor(m), 1).numpy(), np.tril(m, 1))
    np.testing.assert_array_equal(oa.tensor(m).triu(-1).numpy(), np.triu(m, -1))
    assert str(ta > 0.0) == "tensor([[ True, False,  True, False],\n        [False,  True,  True,  True]])"
    assert (ta == None) is False  # noqa: E711 (not a comparison of values: Python's identity fallback)
    assert len({ta, tb, ta}) == 2  # hashable by identity, as torch.Tensor


@pytest.mark.parametrize("value, dtype, expected", [
    ([0.0], None, False), ([-1.0], None, True), (2.5, None, True), (float("nan"), None, True),
    ([0.0], oa.float16, False), ([0.5], oa.bfloat16, True), ([0], None, False), ([[-3]], None, True),
    ([False], None, False), (True, None, True),
])
def test_truth_value_of_one_element(value, dtype, expected):
    assert bool(oa.tensor(value, dtype=dtype)) is expected
    assert bool(np.asarray(value, dtype=np.float64).ravel()[0]) is expected  # NumPy agrees


def test_truth_value_in_conditions():
    assert not bool(oa.tensor([-1.0]) > 0)
    assert bool(oa.tensor([1.0]) > 0)
    taken = "small" if oa.tensor(0.05) < 0.1 else "large"
    assert taken == "small"
    assert (oa.tensor(5.0) < 0.1) is not None and not (oa.tensor(5.0) < 0.1)


@pytest.mark.parametrize("shape", [(2,), (2, 3), (0,), (1, 0)])
def test_truth_value_of_other_counts_is_ambiguous(shape):
    x = oa.zeros(*shape)
    with pytest.raises(oa.FailedPreconditionError, match="ambiguous") as e:
        bool(x)
    assert isinstance(e.value, RuntimeError)
    with pytest.raises(RuntimeError, match="ambiguous"):
        if oa.tensor([0.0, 2.0]):
            pass


def test_list_index_compares_by_identity_first():
    ones, zeros = oa.ones(2), oa.zeros(2)
    items = [ones, zeros]
    assert items.index(ones) == 0
    assert ones in items
    with pytest.raises(RuntimeError, match="ambiguous"):  # ones == zeros is elementwise, as torch
        items.index(zeros)
    a, b = oa.tensor(1.0), oa.tensor(2.0)
    assert [a, b].index(b) == 1


def test_int_float_index():
    assert int(oa.tensor(-2.7)) == -2 and int(oa.tensor([[7]])) == 7 and int(oa.tensor(True)) == 1 and type(int(oa.tensor(True))) is int
    assert float(oa.tensor([3])) == 3.0 and isinstance(float(oa.tensor([3])), float)
    assert float(oa.tensor(0.25, dtype=oa.float16)) == 0.25
    assert [10, 20, 30][oa.tensor(2)] == 30 and [10, 20][oa.tensor(True)] == 20
    for conversion in (int, float):
        with pytest.raises(ValueError, match="one element"):
            conversion(oa.zeros(2))
    with pytest.raises(TypeError, match="index"):
        [1, 2][oa.tensor(1.0)]
    with pytest.raises(TypeError, match="index"):
        [1, 2][oa.tensor([1, 1])]


def test_conversions_between_dtypes():
    pred = oa.tensor([1, 2, 3, 0])
    target = oa.tensor([1, 0, 3, 3])
    correct = (pred == target).float()
    assert correct.dtype == oa.float32
    np.testing.assert_array_equal(correct.numpy(), [1, 0, 1, 0])
    assert correct.mean().item() == 0.5  # accuracy
    mask = oa.tensor([True, False])
    for dtype, numpy_dtype in ((oa.float16, np.float16), (oa.bfloat16, np.float32), (oa.float32, np.float32)):
        np.testing.assert_array_equal(mask.to(dtype).numpy(), np.array([1, 0], numpy_dtype))
    np.testing.assert_array_equal(oa.tensor([0.0, -0.5, 2.0]).bool().numpy(), [False, True, True])
    np.testing.assert_array_equal(oa.tensor([0, 3]).to(oa.bool).numpy(), [False, True])
    np.testing.assert_array_equal(oa.tensor([0.0, 1.5], dtype=oa.float16).to(oa.bool).numpy(), [False, True])
    assert mask.to(oa.bool) is not None and mask.bool().dtype == oa.bool
    # int32 to the float dtypes (nearest even past 2^24, as torch's), bool to int32.
    big = np.array([1, -2, 2**24 + 1, 2**24 + 3, 2**31 - 1, -(2**31)], np.int32)
    for dtype, numpy_dtype in ((oa.float32, np.float32), (oa.float16, np.float16)):
        converted = oa.tensor(big).to(dtype)
        assert converted.dtype == dtype
        with np.errstate(over="ignore"):  # float16 overflows to inf past 65504, on both sides
            np.testing.assert_array_equal(converted.numpy(), big.astype(np.float32).astype(numpy_dtype))
    assert pred.float().dtype == oa.float32 and (pred == target).float().sum().item() == 2.0
    assert mask.to(oa.int32).dtype == oa.int32
    np.testing.assert_array_equal(mask.to(oa.int32).numpy(), [1, 0])
    # The float dtypes to int32: truncated toward zero, as torch's.
    for dtype in (oa.float32, oa.float16, oa.bfloat16):
        np.testing.assert_array_equal(oa.tensor([1.75, -1.75, 0.0, 100.5], dtype=dtype).to(oa.int32).numpy(), [1, -1, 0, 100])


def test_creation_with_int32_and_bool_dtypes():
    z = oa.zeros(2, dtype=oa.int32)
    assert z.dtype == oa.int32
    np.testing.assert_array_equal(z.numpy(), np.zeros(2, np.int32))
    np.testing.assert_array_equal(oa.ones(2, 3, dtype=oa.int32).numpy(), np.ones((2, 3), np.int32))
    np.testing.assert_array_equal(oa.full((2,), -7, dtype=oa.int32).numpy(), [-7, -7])
    np.testing.assert_array_equal(oa.ones(3, dtype=oa.bool).numpy(), [True] * 3)
    np.testing.assert_array_equal(oa.zeros(3, dtype=oa.bool).numpy(), [False] * 3)
    np.testing.assert_array_equal(oa.full((2,), 2.5, dtype=oa.float16).numpy(), np.full(2, 2.5, np.float16))
    np.testing.assert_array_equal(oa.full((2,), -2.5, dtype=oa.int32).numpy(), [-2, -2])  # truncated, as torch
    with pytest.raises(oa.InvalidArgumentError, match="int32"):
        oa.full((2,), 1e10, dtype=oa.int32)
    i = oa.tensor([1, 2, 3])
    i.fill_(4)
    np.testing.assert_array_equal(i.numpy(), [4, 4, 4])
    i.zero_()
    np.testing.assert_array_equal(i.numpy(), [0, 0, 0])
    f = oa.zeros(2)
    f.copy_(oa.tensor([True, False]))
    np.testing.assert_array_equal(f.numpy(), [1, 0])


@pytest.mark.parametrize("dtype", [oa.float32, oa.float16, oa.bfloat16, oa.int32, oa.bool])
def test_pickle_and_deepcopy_keep_values_dtype_and_leaf_requires_grad(dtype):
    import copy
    import pickle

    values = np.arange(-3, 9).reshape(3, 4)
    t = oa.tensor(values, dtype=dtype) if dtype in (oa.int32, oa.bool) else oa.tensor(values / 2).to(dtype)
    for back in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t)):
        assert back.dtype == dtype and back.shape == t.shape and not back.requires_grad
        np.testing.assert_array_equal(back.numpy(), t.numpy())
    leaf = oa.tensor(np.ones((2, 2), dtype=np.float32), requires_grad=True)
    assert pickle.loads(pickle.dumps(leaf)).requires_grad
    derived = pickle.loads(pickle.dumps(leaf * 2))  # a result: its values, without history
    assert not derived.requires_grad and derived.grad_fn is None
    np.testing.assert_array_equal(derived.numpy(), np.full((2, 2), 2, np.float32))
    with pytest.raises(ValueError, match="unknown dtype code"):
        oa.Tensor.__new__(oa.Tensor).__setstate__((np.zeros(1, np.float32), 99, False))


def test_an_optimizer_state_dict_pickles_and_loads():
    import pickle

    w = oa.tensor(np.ones((3, 4), dtype=np.float32), requires_grad=True)
    opt = oa.optim.AdamW([w], lr=0.1)
    (w * w).sum().backward()
    opt.step()
    state = pickle.loads(pickle.dumps(opt.state_dict()))
    w2 = oa.tensor(w.numpy(), requires_grad=True)
    opt2 = oa.optim.AdamW([w2], lr=0.1)
    opt2.load_state_dict(state)
    for o, p in ((opt, w), (opt2, w2)):
        o.zero_grad()
        (p * p).sum().backward()
        o.step()
    np.testing.assert_array_equal(w2.numpy(), w.numpy())


def test_an_optimizer_over_two_modules_parameters():
    """torch.optim.AdamW(list(a.parameters()) + list(b.parameters())): the names repeat ('weight', 'bias'); the
    updates equal those of one optimizer a module, and the state_dict round-trips by position."""
    def modules(seed):
        oa.manual_seed(seed)
        return oa.nn.Linear(3, 4), oa.nn.Linear(4, 2)
    a, b = modules(5)
    joint = oa.optim.AdamW(list(a.parameters()) + list(b.parameters()), lr=0.05)
    a2, b2 = modules(5)
    apart = [oa.optim.AdamW(m.parameters(), lr=0.05) for m in (a2, b2)]
    x = oa.tensor(np.random.default_rng(1).standard_normal((5, 3)).astype(np.float32))
    for _ in range(3):
        joint.zero_grad()
        (b(a(x)) ** 2).sum().backward()
        joint.step()
        for o in apart:
            o.zero_grad()
        (b2(a2(x)) ** 2).sum().backward()
        for o in apart:
            o.step()
    for p, q in zip(list(a.parameters()) + list(b.parameters()), list(a2.parameters()) + list(b2.parameters())):
        np.testing.assert_array_equal(p.numpy(), q.numpy())
    saved = joint.state_dict()
    assert sorted(saved["state"]) == [0, 1, 2, 3]
    copies = [oa.nn.Parameter(oa.tensor(p.numpy())) for p in list(a.parameters()) + list(b.parameters())]
    resumed = oa.optim.AdamW(copies, lr=0.05)
    resumed.load_state_dict(saved)
    for i in range(4):
        np.testing.assert_array_equal(resumed.state_dict()["state"][i]["exp_avg"].numpy(), saved["state"][i]["exp_avg"].numpy())


def test_extremes_of_int32_are_exact_and_of_bool_are_any_and_all():
    """torch.amax, amin, argmax, argmin and max(dim) of integer tensors: exact int32 (past 2^24, the int32 ends, ties
    at the first index); amax and amin of bool: bool any and all; argmax of bool is refused, as torch's."""
    m = np.array([[2**24 + 1, -5, 2**31 - 1, 7, 2**31 - 1], [3, 3, -(2**31), 2**24 + 3, -(2**31)]], np.int32)
    t = oa.tensor(m)
    for dim in [None, 0, 1, (0, 1)]:
        for keepdim in [False, True]:
            assert t.amax(dim, keepdim=keepdim).dtype == oa.int32
            np.testing.assert_array_equal(t.amax(dim, keepdim=keepdim).numpy(), m.max(axis=dim, keepdims=keepdim))
            np.testing.assert_array_equal(t.amin(dim, keepdim=keepdim).numpy(), m.min(axis=dim, keepdims=keepdim))
    for dim in [0, 1]:
        np.testing.assert_array_equal(t.argmax(dim).numpy(), m.argmax(dim))
        np.testing.assert_array_equal(t.argmin(dim).numpy(), m.argmin(dim))
        values, indices = t.max(dim)
        np.testing.assert_array_equal(values.numpy(), m.max(dim))
        np.testing.assert_array_equal(indices.numpy(), m.argmax(dim))
    b = m > 3
    assert oa.tensor(b).amax(1).dtype == oa.bool
    np.testing.assert_array_equal(oa.tensor(b).amax(1).numpy(), b.any(1))
    np.testing.assert_array_equal(oa.tensor(b).amin(0).numpy(), b.all(0))
    with pytest.raises(oa.InvalidArgumentError, match="oa::matrix::argmax: x must be"):
        oa.tensor(b).argmax(1)


def test_sums_of_bool_and_int32_are_int32():
    """torch sums bool and integer tensors to int64; oa to int32 (exact); mean of them is refused, as torch's."""
    pred, y = oa.tensor([1, 2, 0, 2]), oa.tensor([1, 0, 0, 2])
    correct = (pred == y).sum()
    assert correct.dtype == oa.int32 and correct.item() == 3 and isinstance(correct.item(), int)
    m = np.arange(-6, 6, dtype=np.int64).reshape(3, 4) * 1000003
    t = oa.tensor(m)
    for dim in [None, 0, 1, (0, 1)]:
        for keepdim in [False, True]:
            got = t.sum(dim, keepdim=keepdim)
            assert got.dtype == oa.int32
            np.testing.assert_array_equal(got.numpy(), m.sum(axis=dim, keepdims=keepdim))
    np.testing.assert_array_equal(oa.sum(oa.tensor(m > 0), 0).numpy(), (m > 0).sum(0))
    big = oa.tensor(np.array([2**24, 1, 1], np.int32))
    assert big.sum().item() == 2**24 + 2  # exact past float32's 2^24
    for x in (t, pred == y):
        with pytest.raises(oa.InvalidArgumentError, match="oa::matrix::mean: x must be"):
            x.mean()


def _int32(a):
    """int64 values wrapped to int32, as int32 arithmetic wraps."""
    return (np.asarray(a, np.int64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def test_prod_of_int32_and_bool_is_an_exact_int32_product():
    """torch.prod of integer tensors is an integer product (int64 in torch; oa's int32, wrapping modulo 2^32 on
    overflow), of bool ones the count of rows where all hold (torch: int64)."""
    m = np.array([[3, -2, 5, -1], [0, 7, -7, 9], [65536, 65536, 1, 1], [-3, -3, -3, 1]], np.int64)
    t = oa.tensor(m)
    for dim in [None, 0, 1, (0, 1)]:
        for keepdim in [False, True]:
            got = t.prod(dim, keepdim=keepdim)
            assert got.dtype == oa.int32
            np.testing.assert_array_equal(got.numpy(), _int32(np.prod(m, axis=dim, keepdims=keepdim)))
    np.testing.assert_array_equal(oa.prod(t, 1).numpy(), [30, 0, 0, -27])  # 2^32 wraps to 0
    b = np.array([[True, True], [True, False]])
    assert oa.tensor(b).prod(1).dtype == oa.int32
    np.testing.assert_array_equal(oa.tensor(b).prod(1).numpy(), [1, 0])


def test_max_and_min_along_a_dim_of_bool():
    """torch.max(dim) / min(dim) of bool: values bool (any / all along dim), indices int32: the first True (max) or
    False (min), 0 where the dim holds none."""
    b = np.array([[False, True, True], [False, False, False], [True, True, True], [True, False, True]])
    t = oa.tensor(b)
    for dim in (0, 1, -1):
        for keepdim in (False, True):
            values, indices = t.max(dim, keepdim=keepdim)
            assert values.dtype == oa.bool and indices.dtype == oa.int32
            np.testing.assert_array_equal(values.numpy(), b.any(dim, keepdims=keepdim))
            np.testing.assert_array_equal(indices.numpy(), np.expand_dims(b.argmax(dim), dim) if keepdim else b.argmax(dim))
            values, indices = oa.min(t, dim, keepdim=keepdim)
            assert values.dtype == oa.bool and indices.dtype == oa.int32
            np.testing.assert_array_equal(values.numpy(), b.all(dim, keepdims=keepdim))
            np.testing.assert_array_equal(indices.numpy(), np.expand_dims(b.argmin(dim), dim) if keepdim else b.argmin(dim))
    assert isinstance(t.max(1), oa.return_types.max)
    assert t.max().dtype == oa.bool and t.max().item() is True and t.min().item() is False


def test_python_numbers_promote_as_torch():
    """torch.result_type of a tensor and a Python number: a float tensor keeps its dtype; an int32 tensor with an int
    stays int32 (torch: int64; here add, sub and mul wrap past int32), with a float becomes float32; true division
    gives float32; bool counts as 1 and 0; comparisons compare in that dtype."""
    v = np.array([[3, -2, 0], [7, 2**24 + 1, 2**31 - 1]], np.int32)
    t, w = oa.tensor(v), v.astype(np.int64)
    for got, want in ((t + 5, w + 5), (5 + t, w + 5), (t - 5, w - 5), (5 - t, 5 - w), (t * -3, w * -3), (-3 * t, w * -3),
                      (t + True, w + 1), (t + np.int32(4), w + 4), (t.add(2, alpha=3), w + 6), (oa.sub(t, 1, alpha=2), w - 2)):
        assert got.dtype == oa.int32
        np.testing.assert_array_equal(got.numpy(), _int32(want))
    f = v.astype(np.float32)
    with np.errstate(divide="ignore"):
        for got, want in ((t + 1.5, f + np.float32(1.5)), (1.5 + t, f + np.float32(1.5)), (t * 0.5, f * np.float32(0.5)),
                          (0.5 * t, f * np.float32(0.5)), (t - 0.25, f - np.float32(0.25)), (1.5 - t, np.float32(1.5) - f),
                          (t / 2, f / np.float32(2)), (t / 0.5, f / np.float32(0.5)), (6 / t, np.float32(6) / f),
                          (t + np.float32(0.5), f + np.float32(0.5)), (t.add(1.5, alpha=2), f + np.float32(3))):
            assert got.dtype == oa.float32
            np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    np.testing.assert_array_equal((t == 7).numpy(), v == 7)
    np.testing.assert_array_equal((t < 2.5).numpy(), f < 2.5)
    np.testing.assert_array_equal((3 <= t).numpy(), v >= 3)
    np.testing.assert_array_equal((t != 2**24 + 1).numpy(), v != 2**24 + 1)  # exact: 2^24 + 1 is no float32
    b = np.array([True, False])
    for got, want, dtype in ((oa.tensor(b) + 1, [2, 1], oa.int32), (oa.tensor(b) * 2.5, [2.5, 0], oa.float32),
                             (1 - oa.tensor(b), [0, 1], oa.int32), (oa.tensor(b) == 1, [True, False], oa.bool)):
        assert got.dtype == dtype
        np.testing.assert_array_equal(got.numpy(), want)
    for half in (oa.float16, oa.bfloat16):  # a float tensor keeps its dtype
        h = oa.tensor([1.5, -2.0]).to(half)
        assert (h + 1).dtype == half and (h * 2.5).dtype == half and (3 - h).dtype == half
    # In place: an int32 tensor stays int32; a float result cannot be written into it (torch refuses it too).
    u = oa.tensor(v)
    u += 3
    u *= 2
    u -= 1
    np.testing.assert_array_equal(u.numpy(), _int32((w + 3) * 2 - 1))
    u.add_(1, alpha=2)
    np.testing.assert_array_equal(u.numpy(), _int32((w + 3) * 2 + 1))
    with pytest.raises(oa.InvalidArgumentError, match="result type f32 can't be cast to the desired output type i32"):
        u += 0.5
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.Tensor.__add__: the Python int 1099511627776 is outside int32"):
        t + 2**40
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.Tensor.add: for integral input tensors, argument alpha must not be a floating point number"):
        t.add(1, alpha=0.5)
    assert (t ** 2).dtype == oa.int32  # torch's integer pow (test_promotion.py)
    assert (t ** 0.5).dtype == oa.float32 and (2.0 ** t).dtype == oa.float32


def test_in_place_ops_keep_the_tensor_dtype_as_torch():
    t = oa.tensor(np.array([1, 2, 3], dtype=np.int32))
    t += 1
    t *= 2
    assert t.dtype == oa.int32 and t.numpy().tolist() == [4, 6, 8]
    for update in (lambda: t.__iadd__(1.5), lambda: t.__imul__(2.5), lambda: t.add_(0.5)):
        with pytest.raises(oa.InvalidArgumentError, match="can't be cast to the desired output type i32"):
            update()
    assert t.numpy().tolist() == [4, 6, 8]
    b = oa.tensor(np.array([True, False]))
    with pytest.raises(oa.InvalidArgumentError, match="result type i32 can't be cast to the desired output type bool"):
        b += 1
    assert b.numpy().tolist() == [True, False]
    h = oa.tensor(np.array([1.0, 2.0], dtype=np.float32)).to(oa.float16)
    h += 0.5
    assert h.dtype == oa.float16 and h.float().numpy().tolist() == [1.5, 2.5]
    t.fill_(7)
    t.zero_()
    assert t.dtype == oa.int32 and t.numpy().tolist() == [0, 0, 0]
