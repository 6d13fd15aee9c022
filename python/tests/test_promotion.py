"""torch's type promotion and the integer and bool ops of oa.Tensor: expected
values from NumPy (int64 / float64 references) and torch's documented
semantics (torch is not installed here)."""
import math

import numpy as np
import pytest

import oa


def wrap32(v):
    """int64 values wrapped to int32, as oa's int32 arithmetic wraps."""
    return ((np.asarray(v, np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)


A = np.array([7, -7, 0, 5, -5, 2**31 - 1, -(2**31), 123456789, -1, 1], np.int32)
B = np.array([2, 2, 3, -3, -3, 7, -1, -1000, 5, -4], np.int32)


def test_int32_floor_divide_and_remainder_are_pythons():
    a, b = oa.tensor(A), oa.tensor(B)
    want_q = wrap32(np.floor_divide(A.astype(np.int64), B.astype(np.int64)))
    want_r = np.remainder(A.astype(np.int64), B.astype(np.int64)).astype(np.int32)
    for q in (a // b, oa.floor_divide(a, b), a.floor_divide(b)):
        assert q.dtype == oa.int32
        np.testing.assert_array_equal(q.numpy(), want_q)
    for r in (a % b, oa.remainder(a, b), a.remainder(b)):
        assert r.dtype == oa.int32
        np.testing.assert_array_equal(r.numpy(), want_r)
    np.testing.assert_array_equal((a // 3).numpy(), A.astype(np.int64) // 3)
    np.testing.assert_array_equal((a % -3).numpy(), A.astype(np.int64) % -3)
    np.testing.assert_array_equal((100 // b).numpy(), 100 // B.astype(np.int64))
    np.testing.assert_array_equal((100 % b).numpy(), 100 % B.astype(np.int64))
    c = oa.tensor(A.copy())
    c //= 4
    np.testing.assert_array_equal(c.numpy(), A.astype(np.int64) // 4)
    c %= 3
    np.testing.assert_array_equal(c.numpy(), (A.astype(np.int64) // 4) % 3)


def test_integer_division_by_zero_raises_zero_division_error():
    a = oa.tensor(A)
    for f in (lambda: a // 0, lambda: a % 0, lambda: 5 // oa.tensor([1, 0]), lambda: a // oa.tensor(np.zeros(10, np.int32)),
              lambda: oa.remainder(a, oa.tensor(0))):
        with pytest.raises(ZeroDivisionError, match="by zero"):
            f()
    with pytest.raises(ZeroDivisionError, match=r"oa.Tensor.__ifloordiv__.*floor_divide by zero"):
        a //= 0


def test_float_floor_divide_and_remainder_are_ieee_at_zero():
    x = np.arange(-12, 13, dtype=np.float32) * 1.25
    y = np.array([0.5, -0.5, 1.5, -2.0, 3.0], np.float32)
    xs, ys = np.repeat(x, 5), np.tile(y, 25)
    for dtype in (oa.float32, oa.float16, oa.bfloat16):
        a, b = oa.tensor(xs, dtype=dtype), oa.tensor(ys, dtype=dtype)
        assert (a // b).dtype == dtype and (a % b).dtype == dtype
        np.testing.assert_array_equal((a // b).numpy(), np.floor_divide(xs.astype(np.float64), ys))
        np.testing.assert_array_equal((a % b).numpy(), np.remainder(xs.astype(np.float64), ys))
    f = oa.tensor([3.0, -3.0, 0.0])
    with np.errstate(divide="ignore", invalid="ignore"):
        np.testing.assert_array_equal((f // 0).numpy(), np.array([np.inf, -np.inf, np.nan]))
    assert np.isnan((f % 0).numpy()).all()
    np.testing.assert_array_equal((oa.tensor([7, -7]) // 2.0).numpy(), [3.0, -4.0])  # int32 with a float: float32
    assert (oa.tensor([7, -7]) // 2.0).dtype == oa.float32
    w = oa.tensor([7.0, -7.0], requires_grad=True)
    (w % 2.0).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), [1.0, 1.0])

def torch_remainder(a, b):
    """torch.remainder of float32 a, b: C's exact fmod, then the divisor's sign (ATen)."""
    a, b = float(a), float(b)
    if b == 0 or math.isinf(a) or math.isnan(a) or math.isnan(b):
        return math.nan
    m = math.fmod(a, b)
    if m != 0 and (b < 0) != (m < 0):
        m += b
    return float(np.float32(m)) if m != 0 else math.copysign(0.0, b)


def torch_floor_divide(a, b):
    """torch.floor_divide of float32 a, b (ATen's div_floor_floating), in float32 steps."""
    a, b = np.float32(a), np.float32(b)
    if b == 0:
        with np.errstate(divide="ignore", invalid="ignore"):
            return float(a / b)
    m = np.float32(math.fmod(a, b)) if not (math.isinf(a) or math.isnan(a) or math.isnan(b)) else np.float32(np.nan)
    with np.errstate(invalid="ignore", over="ignore"):
        d = np.float32(np.float32(a - m) / b)
        if m != 0 and (b < 0) != (m < 0):
            d = np.float32(d - 1)
        if d == 0:
            return math.copysign(0.0, float(np.float32(a / b)))
        f = np.float32(np.floor(d))
        if d - f > 0.5:
            f = np.float32(f + 1)
    return float(f)


def test_float_floor_divide_and_remainder_are_exact_at_any_magnitude():
    """Quotients past 2^24, divisors not exact in binary (0.1), tiny and infinite divisors."""
    rng = np.random.default_rng(9)
    x = np.concatenate([np.array([1e10, 123456789.0, 3e9, -1e10, 1e30, 5.0, -5.0, 7.5, -7.5, 0.0, 1e-30,
                                  np.inf, -np.inf, np.nan], np.float32),
                        (rng.standard_normal(300) * 10.0 ** rng.uniform(-3, 8, 300)).astype(np.float32)])
    for d in (3.0, 7.0, 0.1, -3.0, -0.1, 0.3, np.inf, -np.inf, 1e-38):
        got_r = (oa.tensor(x) % float(d)).numpy()
        got_q = (oa.tensor(x) // float(d)).numpy()
        want_r = np.array([torch_remainder(a, np.float32(d)) for a in x], np.float32)
        want_q = np.array([torch_floor_divide(a, d) for a in x], np.float32)
        np.testing.assert_array_equal(got_r, want_r, err_msg=f"x % {d}")
        np.testing.assert_array_equal(got_q, want_q, err_msg=f"x // {d}")



def test_int32_neg_abs_and_bitwise_ops():
    a, b = oa.tensor(A), oa.tensor(B)
    wide_a, wide_b = A.astype(np.int64), B.astype(np.int64)
    np.testing.assert_array_equal((-a).numpy(), wrap32(-wide_a))
    np.testing.assert_array_equal(abs(a).numpy(), wrap32(np.abs(wide_a)))
    np.testing.assert_array_equal(a.abs().numpy(), wrap32(np.abs(wide_a)))
    for got, want in (((a & b), wide_a & wide_b), ((a | b), wide_a | wide_b), ((a ^ b), wide_a ^ wide_b), ((~a), ~wide_a),
                      ((a & 6), wide_a & 6), ((6 | a), wide_a | 6), ((a ^ -1), wide_a ^ -1),
                      (oa.bitwise_and(a, b), wide_a & wide_b), (a.bitwise_not(), ~wide_a), (oa.bitwise_not(a), ~wide_a)):
        assert got.dtype == oa.int32
        np.testing.assert_array_equal(got.numpy(), wrap32(want))
    c = oa.tensor(A.copy())
    c &= 12
    c |= 1
    c ^= 3
    np.testing.assert_array_equal(c.numpy(), ((wide_a & 12) | 1) ^ 3)
    with pytest.raises(oa.InvalidArgumentError, match="oa.Tensor.__and__: bitwise_and takes int32 or bool"):
        oa.tensor([1.0]) & oa.tensor([1])
    with pytest.raises(oa.InvalidArgumentError, match="oa::matrix::bitwise_not"):
        ~oa.tensor([1.0])


def test_bool_logical_ops_and_arithmetic_stay_bool():
    p = np.array([True, False, True, False, True, True, False])
    q = np.array([True, True, False, False, True, False, False])
    bp, bq = oa.tensor(p), oa.tensor(q)
    for got, want in ((bp & bq, p & q), (bp | bq, p | q), (bp ^ bq, p ^ q), (~bp, ~p), (bp + bq, p | q), (bp * bq, p & q),
                      (bp + True, np.ones(7, bool)), (bp * False, np.zeros(7, bool)), (bp & True, p), (bp ^ True, ~p),
                      (oa.add(bp, bq), p | q), (bp.add(bq), p | q)):
        assert got.dtype == oa.bool
        np.testing.assert_array_equal(got.numpy(), want)
    # bool with an int, or an int32 tensor: int32 (torch: int64); with a float or a float tensor: float32.
    for got, want in ((bp + 1, p + 1), (bp + oa.tensor(B[:7]), p + B[:7]), (oa.tensor(B[:7]) + bp, B[:7] + p)):
        assert got.dtype == oa.int32
        np.testing.assert_array_equal(got.numpy(), want)
    assert (bp + 0.5).dtype == oa.float32 and (bp + oa.tensor([0.5])).dtype == oa.float32
    with pytest.raises(oa.InvalidArgumentError, match="oa::matrix::sub"):
        bp - bq


def test_tensor_promotion_follows_torch():
    i = oa.tensor([1, 2, 3])
    f = oa.tensor([0.5, 0.25, 2.0])
    h = oa.tensor([1.0, 2.0, 4.0], dtype=oa.float16)
    bf = oa.tensor([1.0, 2.0, 4.0], dtype=oa.bfloat16)
    for got, dtype, want in ((i + f, oa.float32, [1.5, 2.25, 5.0]), (f + i, oa.float32, [1.5, 2.25, 5.0]),
                             (i * f, oa.float32, [0.5, 0.5, 6.0]), (i - f, oa.float32, [0.5, 1.75, 1.0]),
                             (i / i, oa.float32, [1.0, 1.0, 1.0]), (h + f, oa.float32, [1.5, 2.25, 6.0]),
                             (h + bf, oa.float32, [2.0, 4.0, 8.0]), (h + i, oa.float16, [2.0, 4.0, 7.0]),
                             (h + oa.tensor(0.5), oa.float16, [1.5, 2.5, 4.5]),  # a 0-d float32 of the same category: h's dtype
                             (i + oa.tensor(0.5), oa.float32, [1.5, 2.5, 3.5]),  # a 0-d of a higher category counts
                             (oa.maximum(i, i), oa.int32, [1, 2, 3])):
        assert got.dtype == dtype
        np.testing.assert_array_equal(got.numpy().astype(np.float64), want)
    # alpha with int32 operands stays int32; a float alpha for integral tensors is refused as torch.
    for got in (i.add(i, alpha=2), oa.add(i, i, alpha=2), i.add(3, alpha=2)):
        assert got.dtype == oa.int32
    np.testing.assert_array_equal(i.add(i, alpha=2).numpy(), [3, 6, 9])
    np.testing.assert_array_equal(i.sub(i, alpha=-2).numpy(), [3, 6, 9])
    np.testing.assert_array_equal(i.add(3, alpha=2).numpy(), [7, 8, 9])
    np.testing.assert_array_equal(f.add(i, alpha=2).numpy(), [2.5, 4.25, 8.0])
    with pytest.raises(oa.InvalidArgumentError, match="alpha must not be a floating point number"):
        i.add(i, alpha=0.5)
    # Comparisons across dtypes compare in the promoted dtype.
    np.testing.assert_array_equal((i > f).numpy(), [True, True, True])
    np.testing.assert_array_equal((i == oa.tensor([1.0, 2.5, 3.0])).numpy(), [True, False, True])
    np.testing.assert_array_equal((h == 0.1).numpy(), [False, False, False])
    assert (oa.tensor([0.1], dtype=oa.float16) == 0.1).item()  # 0.1 rounded to float16, as torch


def test_python_ints_beyond_int64():
    i = oa.tensor([1, -2, 3])
    for expr, op in ((lambda: i + 2**64, "__add__"), (lambda: i > 2**70, "__gt__"), (lambda: 2**64 - i, "__rsub__"),
                     (lambda: i * -(2**100), "__mul__"), (lambda: i.add(2**64), "add"), (lambda: i == 2**40, "__eq__")):
        with pytest.raises(oa.InvalidArgumentError, match=rf"oa.Tensor.{op}: the Python int -?\d+ is outside int32"):
            expr()
    with pytest.raises(oa.InvalidArgumentError, match="18446744073709551616 is outside int32"):
        i += 2**64
    f = oa.tensor([1.0, 2.0**70, 2.0**71])
    np.testing.assert_array_equal((f > 2**70).numpy(), [False, False, True])
    np.testing.assert_array_equal((f >= 2**70).numpy(), [False, True, True])
    np.testing.assert_array_equal((f == 2**70).numpy(), [False, True, False])
    np.testing.assert_array_equal((f + 2**64).numpy(), np.float32([1.0, 2.0**70, 2.0**71]) + np.float32(2.0**64))
    np.testing.assert_array_equal((f < 2**200).numpy(), [True, True, True])  # inf in float32, as torch
    np.testing.assert_array_equal((oa.tensor([1.0]) * (2**2000)).numpy(), [np.inf])  # past double: inf


def test_int32_pow_stays_int32_and_wraps():
    a = oa.tensor([2, -3, 0, 1, -1, 3, 7])
    want = wrap32(np.array([2, -3, 0, 1, -1, 3, 7], np.int64) ** 5)
    for got in (a**5, oa.pow(a, 5), a.pow(5)):
        assert got.dtype == oa.int32
        np.testing.assert_array_equal(got.numpy(), want)
    np.testing.assert_array_equal((a**25).numpy(), wrap32([pow(v, 25, 2**32) for v in [2, -3, 0, 1, -1, 3, 7]]))
    np.testing.assert_array_equal((2**a).numpy(), wrap32([4, 0, 1, 2, 0, 8, 128]))  # 2 ** -k is 0, as torch's integer pow
    u = oa.tensor([3, -4])
    u **= 2
    assert u.dtype == oa.int32
    np.testing.assert_array_equal(u.numpy(), [9, 16])
    assert (a**0.5).dtype == oa.float32
    with pytest.raises(oa.InvalidArgumentError, match="negative integer powers"):
        a ** -1


def test_in_place_true_division_of_int32_names_the_op():
    t = oa.tensor([4, 6])
    with pytest.raises(oa.InvalidArgumentError, match=r"/= \(oa.Tensor.__itruediv__\): result type f32 can't be cast to the desired "
                       r"output type i32"):
        t /= 2
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.Tensor.div_: result type f32 can't be cast"):
        t.div_(oa.tensor([2, 2]))
    np.testing.assert_array_equal(t.numpy(), [4, 6])


def test_max_min_and_argmax_of_a_0d_tensor():
    x = oa.tensor(3.5)
    for dim in (0, -1):
        for f, name in ((x.max, "max"), (x.min, "min")):
            r = f(dim)
            assert r.values.item() == 3.5 and r.indices.item() == 0 and r.indices.dtype == oa.int32
            assert r.values.shape == () and r.indices.shape == ()
        assert oa.argmax(x, dim).item() == 0 and oa.argmin(x, dim).item() == 0
    assert oa.tensor(7).max(0, keepdim=True).values.item() == 7
    assert x.argmax().item() == 0
    with pytest.raises(oa.InvalidArgumentError, match="out of range"):
        x.max(1)
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.Tensor.max: expected reduction dim 1 to have non-zero size"):
        oa.zeros(2, 0).max(1)
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.min: expected reduction dim 0"):
        oa.min(oa.zeros(0, 3), 0)


def test_sixteen_bit_leaves_require_grad_and_backward_from_a_sixteen_bit_loss():
    for dtype in (oa.float16, oa.bfloat16):
        x = oa.tensor([1.0, -2.0, 0.5], dtype=dtype).requires_grad_()
        y = (x * x).sum()
        assert y.dtype == dtype
        y.backward()
        assert x.grad.dtype == dtype
        np.testing.assert_array_equal(x.grad.numpy().astype(np.float32), [2.0, -4.0, 1.0])
        w = oa.tensor([1.0, 2.0], dtype=dtype, requires_grad=True)
        (w * 3).backward(oa.tensor([1.0, -1.0]))  # a float32 gradient is cast to the output's dtype, as torch
        np.testing.assert_array_equal(w.grad.numpy().astype(np.float32), [3.0, -3.0])
    with pytest.raises(oa.InvalidArgumentError, match="only a floating-point"):
        oa.tensor([1, 2]).requires_grad_()


def test_full_of_an_int_outside_int32_prints_it_exactly():
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.full: value 1099511627776 cannot be converted to type int32 without overflow"):
        oa.full((2,), 2**40, dtype=oa.int32)
    with pytest.raises(oa.InvalidArgumentError, match=r"value 36893488147419103232 cannot be converted"):
        oa.full((2,), 2**65, dtype=oa.int32)
    np.testing.assert_array_equal(oa.full((2,), 2**31 - 1, dtype=oa.int32).numpy(), [2**31 - 1] * 2)
    # Without dtype an int fill infers int32 (torch: int64), so a value past it is refused, not rounded.
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.full: value 1099511627776 cannot be converted to type int32"):
        oa.full((2,), 2**40)
    np.testing.assert_array_equal(oa.full((2,), 2**40, dtype=oa.float32).numpy(), np.float32([2.0**40] * 2))
