"""torch behaviours a new user missed, against NumPy: cat and stack of every
dtype with torch.cat's promotion, `v in t`, x[True] / x[False], var and std
with unbiased=, where and the binary functions with a Python number, where
and masked_fill in 16 bits and on bool values, where with two numbers,
nonzero and where with one argument, masked_fill_ and Tensor.where,
masked_fill with a 0-d tensor value (and its gradient) and oa.masked_fill,
int32 sign and clamp, bitwise_not_, and the errors' wording (TypeErrors naming
the op and the argument)."""
import os

import numpy as np
import pytest

import oa
from reference import assert_close, values

A = values((2, 3), 1)
B = values((2, 1), 2)


@pytest.mark.parametrize("dtype", [oa.float32, oa.float16, oa.bfloat16, oa.int32, oa.bool], ids=str)
def test_cat_stack_split_chunk_keep_every_dtype(dtype):
    a = oa.tensor(A * 10, dtype=dtype) if dtype != oa.bool else oa.tensor(A > 0)
    b = oa.tensor(B * 10, dtype=dtype) if dtype != oa.bool else oa.tensor(B > 0)
    got = oa.cat([a, b, a], dim=1)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got.numpy(), np.concatenate([a.numpy(), b.numpy(), a.numpy()], axis=1))
    s = oa.stack([a, a], dim=2)
    assert s.dtype == dtype
    np.testing.assert_array_equal(s.numpy(), np.stack([a.numpy(), a.numpy()], axis=2))
    parts = oa.split(got, [3, 1, 3], dim=1)
    assert [p.dtype for p in parts] == [dtype] * 3
    np.testing.assert_array_equal(parts[1].numpy(), b.numpy())
    halves = got.chunk(2, dim=1)
    np.testing.assert_array_equal(np.concatenate([h.numpy() for h in halves], axis=1), got.numpy())


def test_cat_promotes_as_torch():
    f, h = oa.tensor(A), oa.tensor(A, dtype=oa.float16)
    i, b = oa.tensor(np.arange(6, dtype=np.int32).reshape(2, 3)), oa.tensor(A > 0)
    bf = oa.tensor(A, dtype=oa.bfloat16)
    assert oa.cat([h, f]).dtype == oa.float32
    assert oa.cat([h, bf]).dtype == oa.float32
    assert oa.cat([i, h]).dtype == oa.float16
    assert oa.cat([b, i]).dtype == oa.int32
    assert oa.stack([b, f]).dtype == oa.float32
    got = oa.cat([b, i, f], dim=0)
    np.testing.assert_array_equal(got.numpy(), np.concatenate([A > 0, np.arange(6).reshape(2, 3), A]).astype(np.float32))
    # Gradients reach both float operands through the promotion.
    x = oa.tensor(A, requires_grad=True)
    y = oa.tensor(A, dtype=oa.float16)
    oa.cat([x, y]).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.ones((2, 3), np.float32))


def test_cat_and_stack_under_autocast_keep_16_bits():
    h = oa.tensor(A, dtype=oa.float16)
    with oa.autocast("cuda", dtype=oa.float16):
        assert oa.cat([h, h]).dtype == oa.float16
        assert oa.stack([h, h]).dtype == oa.float16
        assert oa.cat([h, oa.tensor(A)]).dtype == oa.float32


def test_contains():
    t = oa.tensor([1.0, 3.0, 5.0])
    assert 3.0 in t and 3 in t and 4.0 not in t
    assert oa.tensor(5.0) in t and oa.tensor([[9.0], [1.0]]) in t
    assert True in oa.tensor([False, True])
    assert 1.0 not in oa.zeros(0)
    with pytest.raises(TypeError):
        "a" in t


def test_python_bool_index():
    x = oa.tensor(A)
    assert x[True].shape == (1, 2, 3) and x[False].shape == (0, 2, 3)
    np.testing.assert_array_equal(x[True].numpy(), A[None])
    assert x[0, True].shape == (1, 3) and x[..., False].shape == (2, 3, 0)
    x[False] = 7.0
    np.testing.assert_array_equal(x.numpy(), A)
    x[True] = 7.0
    np.testing.assert_array_equal(x.numpy(), np.full((2, 3), 7.0, np.float32))


def test_var_and_std_unbiased():
    x = oa.tensor(A)
    np.testing.assert_allclose(x.var(1, unbiased=False).numpy(), A.var(axis=1), rtol=1e-5)
    np.testing.assert_allclose(x.var(1, False).numpy(), A.var(axis=1), rtol=1e-5)
    np.testing.assert_allclose(x.std(unbiased=True).item(), A.std(ddof=1), rtol=1e-5)
    np.testing.assert_allclose(oa.std(x, 0, unbiased=False, keepdim=True).numpy(), A.std(axis=0, keepdims=True), rtol=1e-5)
    np.testing.assert_allclose(x.var(False).item(), A.var(), rtol=1e-5)
    np.testing.assert_allclose(x.var(1, correction=0).numpy(), A.var(axis=1), rtol=1e-5)
    with pytest.raises(TypeError, match="not both"):
        x.var(1, unbiased=True, correction=0)


def test_where_with_python_numbers():
    cond = oa.tensor(A > 0)
    x = oa.tensor(A)
    np.testing.assert_array_equal(oa.where(cond, x, 0).numpy(), np.where(A > 0, A, 0))
    np.testing.assert_array_equal(oa.where(cond, 0, x).numpy(), np.where(A > 0, 0, A))
    i = oa.tensor(np.arange(6, dtype=np.int32).reshape(2, 3))
    got = oa.where(cond, i, -1)
    assert got.dtype == oa.int32
    np.testing.assert_array_equal(got.numpy(), np.where(A > 0, np.arange(6).reshape(2, 3), -1))
    assert oa.where(cond, i, 0.5).dtype == oa.float32


@pytest.mark.parametrize("dtype", [oa.float16, oa.bfloat16], ids=str)
def test_where_and_masked_fill_keep_16_bit_with_gradients(dtype):
    cond = oa.tensor(np.array([[True, False, True], [False, False, True], [True, True, False]]))
    a, b = values((3, 3), 3), values((3, 1), 4)
    x = oa.tensor(a, dtype=dtype, requires_grad=True)
    y = oa.tensor(b, dtype=dtype, requires_grad=True)
    z = oa.where(cond, x, y)
    assert z.dtype == dtype
    want = np.where(cond.numpy(), x.float().numpy(), y.float().numpy())
    np.testing.assert_array_equal(z.float().numpy(), want)
    z.sum().backward()
    assert x.grad.dtype == dtype
    np.testing.assert_array_equal(x.grad.float().numpy(), cond.numpy().astype(np.float32))
    np.testing.assert_array_equal(y.grad.float().numpy(), (~cond.numpy()).sum(1, keepdims=True).astype(np.float32))
    filled = x.masked_fill(cond, 0.1)
    assert filled.dtype == dtype
    tenth = oa.tensor(np.float32([0.1]), dtype=dtype).float().numpy()[0]
    np.testing.assert_array_equal(filled.float().numpy(), np.where(cond.numpy(), tenth, x.float().numpy()))
    # A finite value past float16's range raises as torch's does; bfloat16 has float32's range.
    if dtype == oa.float16:
        with pytest.raises(oa.InvalidArgumentError, match="70000.*f16 without overflow"):
            x.masked_fill(cond, 70000.0)
    else:
        assert x.masked_fill(cond, 70000.0).float().numpy()[0, 0] == 70144.0


def test_masked_fill_on_int32_truncates_as_torch():
    ids = oa.tensor(np.int32([[5, -6, 7], [8, 9, 10]]))
    mask = oa.tensor(np.array([False, True, True]))
    got = ids.masked_fill(mask, 50257)
    assert got.dtype == oa.int32
    np.testing.assert_array_equal(got.numpy(), [[5, 50257, 50257], [8, 50257, 50257]])
    np.testing.assert_array_equal(ids.masked_fill(mask, -2.7).numpy(), [[5, -2, -2], [8, -2, -2]])
    assert ids.masked_fill_(mask, 0) is ids
    np.testing.assert_array_equal(ids.numpy(), [[5, 0, 0], [8, 0, 0]])
    np.testing.assert_array_equal(ids.masked_fill(mask, 2**31 - 1).numpy(), [[5, 2**31 - 1, 2**31 - 1], [8, 2**31 - 1, 2**31 - 1]])
    np.testing.assert_array_equal(ids.masked_fill(mask, 123456789).numpy()[0], [5, 123456789, 123456789])
    for bad in [2**31, -2**31 - 1, float("nan")]:
        with pytest.raises(oa.InvalidArgumentError, match="cannot be converted to i32 without overflow"):
            ids.masked_fill(mask, bad)


def test_where_promotes_its_operands_as_torch():
    cond = oa.tensor(np.array([True, False, True]))
    h = oa.tensor([1.5, 2.5, 3.5], dtype=oa.float16)
    b = oa.tensor([4.0, 5.0, 6.0], dtype=oa.bfloat16)
    f = oa.tensor([7.0, 8.0, 9.0])
    i = oa.tensor(np.int32([10, 11, 12]))
    zero_d = oa.tensor(np.float32(2.0))
    for y, dtype, other in [(b, oa.float32, [4, 5, 6]), (f, oa.float32, [7, 8, 9]), (i, oa.float16, [10, 11, 12]),
                            (zero_d, oa.float16, [2, 2, 2])]:
        got = oa.where(cond, h, y)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got.float().numpy(), np.where([True, False, True], [1.5, 2.5, 3.5], other))


@pytest.mark.parametrize("dtype", [oa.float32, oa.float16], ids=str)
def test_masked_fill_in_place_and_tensor_where(dtype):
    mask = np.array([[True, False, True], [False, False, True]])
    x = oa.tensor(A, dtype=dtype)
    before = x.float().numpy()
    view = x.view(6)
    assert x.masked_fill_(oa.tensor(mask), -2.0) is x
    np.testing.assert_array_equal(x.float().numpy(), np.where(mask, -2.0, before))
    np.testing.assert_array_equal(view.float().numpy(), np.where(mask, -2.0, before).reshape(6))
    with pytest.raises(oa.InvalidArgumentError, match="does not match the tensor's shape"):
        oa.tensor(A[0], dtype=dtype).masked_fill_(oa.tensor(mask), 1.0)
    w = oa.tensor(A, requires_grad=True)
    y = w * 2
    y.masked_fill_(oa.tensor(mask), 0.0)
    y.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.where(mask, 0.0, 2.0))
    other = oa.tensor(B, dtype=dtype)
    got = x.where(oa.tensor(mask), other)
    assert got.dtype == dtype
    np.testing.assert_array_equal(got.float().numpy(), np.where(mask, x.float().numpy(), other.float().numpy()))
    np.testing.assert_array_equal(x.where(oa.tensor(mask), 0).float().numpy(), np.where(mask, x.float().numpy(), 0))


def test_binary_functions_with_a_number_first():
    t = oa.tensor([2.0, -3.0, 4.0])
    np.testing.assert_array_equal(oa.remainder(-7, t).numpy(), np.remainder(-7, np.float32([2, -3, 4])))
    np.testing.assert_array_equal(oa.floor_divide(7, t).numpy(), np.floor_divide(7, np.float32([2, -3, 4])))
    i = oa.tensor(np.int32([2, -3, 4]))
    got = oa.remainder(-7, i)
    assert got.dtype == oa.int32
    np.testing.assert_array_equal(got.numpy(), np.remainder(-7, np.int32([2, -3, 4])))
    np.testing.assert_array_equal(oa.pow(2, i.abs()).numpy(), [4, 8, 16])


def test_int32_sign_clamp_and_bitwise_not_():
    v = np.int32([-5, 0, 3, 9])
    i = oa.tensor(v)
    assert i.sign().dtype == oa.int32 and oa.sign(i).dtype == oa.int32
    np.testing.assert_array_equal(i.sign().numpy(), np.sign(v))
    c = i.clamp(-2, 4)
    assert c.dtype == oa.int32
    np.testing.assert_array_equal(c.numpy(), np.clip(v, -2, 4))
    np.testing.assert_array_equal(i.clamp(min=0).numpy(), np.maximum(v, 0))
    f = i.clamp(-2.5, 4)
    assert f.dtype == oa.float32
    np.testing.assert_array_equal(f.numpy(), np.clip(v, -2.5, 4).astype(np.float32))
    np.testing.assert_array_equal(oa.tensor(A).clamp(-0.5, 0.5).numpy(), np.clip(A, -0.5, 0.5))
    j = oa.tensor(v)
    assert j.bitwise_not_() is j
    np.testing.assert_array_equal(j.numpy(), ~v)
    b = oa.tensor([True, False])
    b.bitwise_not_()
    np.testing.assert_array_equal(b.numpy(), [False, True])


def test_error_messages_say_what_was_written(tmp_path):
    f = oa.tensor(A)
    with pytest.raises(oa.InvalidArgumentError, match="found f32 and a Python int"):
        f & 1
    with pytest.raises(oa.InvalidArgumentError, match="found a Python int and f32"):
        1 | f
    with pytest.raises(oa.InvalidArgumentError, match=r"requested shape \[5, -1\]"):
        f.reshape(5, -1)
    with pytest.raises(oa.InvalidArgumentError, match=r"requested shape \[4, 4\]"):
        f.reshape(4, 4)
    with pytest.raises(oa.Error, match="^oa.zeros: "):
        oa.zeros(1 << 20, 1 << 20, 1 << 10)
    missing = os.path.join(tmp_path, "missing.safetensors")
    with pytest.raises(FileNotFoundError, match="oa.load: no such file") as e:
        oa.load(missing)
    assert e.value.filename == missing
    with pytest.raises(FileNotFoundError):
        oa.load_metadata(missing)


def test_where_and_masked_fill_take_bool_values():
    rng = np.random.default_rng(11)
    for n in (1, 3, 6, 13, 1027):  # partial last words of four bools, several workgroups
        c, a, b = rng.random(n) < 0.5, rng.random((2, n)) < 0.5, rng.random((2, n)) < 0.5
        got = oa.where(oa.tensor(c), oa.tensor(a), oa.tensor(b))
        assert got.dtype == oa.bool
        np.testing.assert_array_equal(got.numpy(), np.where(c, a, b))
        got = oa.where(oa.tensor(c), oa.tensor(a), False)  # a Python bool keeps bool, as torch
        assert got.dtype == oa.bool
        np.testing.assert_array_equal(got.numpy(), np.where(c, a, False))
        m = rng.random((2, 1)) < 0.5  # broadcast over the columns
        # torch converts any nonzero value (NaN too) to True, zero to False.
        for value, as_bool in ((True, True), (0, False), (-2.5, True), (float("nan"), True), (-0.0, False)):
            got = oa.tensor(a).masked_fill(oa.tensor(m), value)
            assert got.dtype == oa.bool
            np.testing.assert_array_equal(got.numpy(), np.where(m, as_bool, a))
    t = oa.tensor(np.array([False, True, False]))
    assert t.masked_fill_(oa.tensor(np.array([True, False, False])), True) is t
    np.testing.assert_array_equal(t.numpy(), [True, True, False])


def test_where_with_two_numbers_as_torch():
    c = A > 0
    cond = oa.tensor(c)
    got = oa.where(cond, 1.0, 0.0)
    assert got.dtype == oa.float32  # torch's default dtype
    np.testing.assert_array_equal(got.numpy(), np.where(c, 1.0, 0.0))
    got = oa.where(cond, 3, -4)
    assert got.dtype == oa.int32  # torch: int64
    np.testing.assert_array_equal(got.numpy(), np.where(c, 3, -4))
    got = oa.where(cond, True, False)
    assert got.dtype == oa.bool
    np.testing.assert_array_equal(got.numpy(), c)
    assert oa.where(cond, 1, 0.5).dtype == oa.float32
    # The gradient reaches the tensor operand, either side.
    x = oa.tensor(A, requires_grad=True)
    oa.where(cond, x, 0.0).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.where(c, 1.0, 0.0))
    y = oa.tensor(A, requires_grad=True)
    (oa.where(cond, 0.5, y) * 3).sum().backward()
    np.testing.assert_array_equal(y.grad.numpy(), np.where(c, 0.0, 3.0))


@pytest.mark.parametrize("shape", [(), (0,), (7,), (1025,), (3, 0, 2), (33, 65), (2, 3, 4, 5)], ids=str)
def test_nonzero_and_where_with_one_argument(shape):
    rng = np.random.default_rng(len(shape) + int(np.prod(shape)))
    for a in (np.zeros(shape, bool), np.ones(shape, bool), rng.random(shape) < 0.3):
        expected = np.argwhere(a)  # [K, ndim], row-major
        for x in (oa.tensor(a), oa.tensor(a.astype(np.float32))):
            got = oa.nonzero(x)
            assert got.dtype == oa.int32
            assert tuple(got.shape) == expected.shape
            np.testing.assert_array_equal(got.numpy(), expected)
            np.testing.assert_array_equal(x.nonzero().numpy(), expected)
            # as_tuple and where(c): one [K] tensor per axis (a 0-d input counts as 1-d, as torch).
            columns = np.nonzero(np.atleast_1d(a))
            for form in (oa.nonzero(x, as_tuple=True), x.nonzero(as_tuple=True), oa.where(x)):
                assert isinstance(form, tuple) and len(form) == len(columns)
                for axis, want in zip(form, columns):
                    assert axis.dtype == oa.int32
                    np.testing.assert_array_equal(axis.numpy(), want)


def test_nonzero_of_floats_counts_nan_not_negative_zero():
    v = np.float32([[0.0, -0.0, 1.5], [np.nan, 0.0, -3.0]])
    for dtype in (oa.float32, oa.float16, oa.bfloat16):
        np.testing.assert_array_equal(oa.nonzero(oa.tensor(v, dtype=dtype)).numpy(), [[0, 2], [1, 0], [1, 2]])
    np.testing.assert_array_equal(oa.nonzero(oa.tensor(np.int32([0, 5, -1, 0]))).numpy(), [[1], [2]])
    assert not oa.nonzero(oa.tensor(v, requires_grad=True)).requires_grad


@pytest.mark.parametrize("bad", ["a", None, [1.0], b"1"], ids=repr)
def test_scalar_arguments_of_other_types_raise_type_errors_naming_them(bad):
    x = oa.tensor(A)
    mask = oa.tensor(A > 0)
    kind = type(bad).__name__
    number = r"must be a number \(bool, int or float\), got "
    number_or_tensor = r"must be a number \(bool, int or float\) or a 0-d tensor, got "
    with pytest.raises(TypeError, match=r"oa\.Tensor\.masked_fill_: value " + number_or_tensor + kind):
        x.masked_fill_(mask, bad)
    with pytest.raises(TypeError, match=r"oa\.Tensor\.masked_fill: value " + number_or_tensor + kind):
        x.masked_fill(mask, bad)
    with pytest.raises(TypeError, match=r"oa\.masked_fill: value " + number_or_tensor + kind):
        oa.masked_fill(x, mask, bad)
    with pytest.raises(TypeError, match=r"oa\.Tensor\.fill_: value " + number + kind):
        x.fill_(bad)
    with pytest.raises(TypeError, match=r"oa\.full: fill_value " + number + kind):
        oa.full((2, 3), bad)
    either = r"must be a tensor or a number \(bool, int or float\), got "
    with pytest.raises(TypeError, match=r"oa\.where: input " + either + kind):
        oa.where(mask, bad, x)
    with pytest.raises(TypeError, match=r"oa\.where: other " + either + kind):
        oa.where(mask, x, bad)
    with pytest.raises(TypeError, match=r"oa\.where: input " + either + kind):
        oa.where(mask, bad, 1.0)
    with pytest.raises(TypeError, match=r"oa\.Tensor\.where: other " + either + kind):
        x.where(mask, bad)
    with pytest.raises(TypeError, match=r"oa\.where: condition must be a bool tensor, got " + kind):
        oa.where(bad, x, x)
    np.testing.assert_array_equal(x.numpy(), A.astype(np.float32))  # nothing was written


def test_masked_fill_refuses_an_int_past_doubles_range():
    mask = oa.tensor([True, False])
    for x in (oa.tensor([5.0, 5.0]), oa.tensor([5.0, 5.0], dtype=oa.float16), oa.tensor([5, 5])):
        for big in (2**1024, -(2**2000)):
            with pytest.raises(oa.InvalidArgumentError, match=r"oa\.Tensor\.masked_fill: value -?\d+ cannot be converted"):
                x.masked_fill(mask, big)
            with pytest.raises(oa.InvalidArgumentError, match=r"oa\.Tensor\.masked_fill_: value -?\d+ cannot be converted"):
                x.masked_fill_(mask, big)
        np.testing.assert_array_equal(x.numpy(), [5, 5])  # nothing was written
    with pytest.raises(oa.InvalidArgumentError, match="cannot be converted to f32 without overflow"):
        oa.tensor([5.0, 5.0]).masked_fill(mask, 2**1023)


MASK = np.array([[True, False, True], [False, False, True]])


@pytest.mark.parametrize("dtype", [oa.float32, oa.float16, oa.bfloat16, oa.int32, oa.bool], ids=str)
def test_masked_fill_takes_a_0d_tensor_value(dtype):
    mask = oa.tensor(MASK)
    x = oa.tensor(A * 10, dtype=dtype) if dtype != oa.bool else oa.tensor(A > 0)
    for value in (oa.tensor(2.5), oa.tensor(-3), oa.tensor(True), oa.tensor(0.0), oa.tensor(1.5, dtype=oa.bfloat16)):
        want = x.masked_fill(mask, value.item()).numpy()  # a Python number's fill, checked against NumPy above
        got = x.masked_fill(mask, value)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got.numpy(), want)
        np.testing.assert_array_equal(oa.masked_fill(x, mask, value).numpy(), want)
        y = oa.tensor(x.numpy(), dtype=dtype)
        assert y.masked_fill_(mask, value) is y
        np.testing.assert_array_equal(y.numpy(), want)
    # torch's own example: a float value truncated toward zero into int32, and True / 2.5 into float32.
    ids = oa.tensor(np.int32([[5, -6, 7], [8, 9, 10]]))
    np.testing.assert_array_equal(ids.masked_fill(mask, oa.tensor(-2.7)).numpy(), [[-2, -6, -2], [8, 9, -2]])
    np.testing.assert_array_equal(oa.tensor(A).masked_fill(mask, oa.tensor(2.5)).numpy(), np.where(MASK, 2.5, A))


def test_masked_fill_refuses_a_value_tensor_that_is_not_0d():
    x = oa.tensor(A)
    mask = oa.tensor(MASK)
    for shape in ((1,), (2, 3), (0,)):
        value = oa.zeros(shape)
        shown = r"\[" + ", ".join(map(str, shape)) + r"\]"
        with pytest.raises(oa.InvalidArgumentError, match=r"oa\.Tensor\.masked_fill: value must be a number or a 0-d tensor, got a "
                           r"tensor of shape " + shown):
            x.masked_fill(mask, value)
        with pytest.raises(oa.InvalidArgumentError, match=r"oa\.Tensor\.masked_fill_: .* of shape " + shown):
            x.masked_fill_(mask, value)
        with pytest.raises(oa.InvalidArgumentError, match=r"oa\.masked_fill: .* of shape " + shown):
            oa.masked_fill(x, mask, value)
    np.testing.assert_array_equal(x.numpy(), A)  # nothing was written
    # A value tensor x's dtype cannot hold raises as the same number does, with or without a gradient.
    half = oa.tensor(A, dtype=oa.float16)
    for value in (oa.tensor(70000.0), oa.tensor(70000.0, requires_grad=True)):
        with pytest.raises(oa.InvalidArgumentError, match="70000.*f16 without overflow"):
            half.masked_fill(mask, value)


@pytest.mark.parametrize("dtype", [oa.float32, oa.float16], ids=str)
def test_masked_fill_value_tensor_gets_its_gradient_as_torch(dtype):
    # torch: value's gradient is the sum of the result's gradient over the positions mask fills (mask broadcast).
    a, w = values((2, 3), 5), values((4, 2, 3), 6)
    mask = np.array([[True], [False]]) & np.array([True, False, True])  # [2, 3]
    big = np.broadcast_to(np.array([True, False, True, False]).reshape(4, 1, 1), (4, 2, 3)) | mask
    x = oa.tensor(a, dtype=dtype, requires_grad=True)
    value = oa.tensor(0.75, dtype=dtype, requires_grad=True)
    y = x.masked_fill(oa.tensor(big), value)
    assert y.shape == (4, 2, 3) and y.dtype == dtype
    np.testing.assert_array_equal(y.float().numpy(), np.where(big, 0.75, x.float().numpy()))
    (y.float() * oa.tensor(w)).sum().backward()
    assert value.grad.dtype == dtype and value.grad.shape == ()
    assert_close(value.grad.float().numpy(), w[big].sum(), rtol=2e-3)
    assert_close(x.grad.float().numpy(), np.where(big, 0.0, w).sum(0), rtol=2e-3)
    # In place: x takes the history, and value its gradient.
    value = oa.tensor(-1.0, requires_grad=True)
    z = oa.tensor(a)
    z.masked_fill_(oa.tensor(mask), value)
    assert z.requires_grad
    (z * oa.tensor(w[0])).sum().backward()
    assert_close(value.grad.numpy(), w[0][mask].sum())
    with oa.no_grad():
        assert not oa.masked_fill(oa.tensor(a), oa.tensor(mask), value).requires_grad


@pytest.mark.parametrize("bad", [[True, False, True], np.array([True, False, True]), (1, 0, 1), None], ids=lambda b: type(b).__name__)
def test_tensor_arguments_of_other_types_raise_type_errors_naming_them(bad):
    # torch raises TypeError for a mask, a nonzero input or a where condition that is not a tensor.
    x = oa.tensor(A)
    mask = oa.tensor(MASK)
    kind = type(bad).__name__
    with pytest.raises(TypeError, match=r"oa\.Tensor\.masked_fill: mask must be a bool tensor, got " + kind):
        x.masked_fill(bad, 1.0)
    with pytest.raises(TypeError, match=r"oa\.Tensor\.masked_fill_: mask must be a bool tensor, got " + kind):
        x.masked_fill_(bad, 1.0)
    with pytest.raises(TypeError, match=r"oa\.masked_fill: mask must be a bool tensor, got " + kind):
        oa.masked_fill(x, bad, 1.0)
    with pytest.raises(TypeError, match=r"oa\.masked_fill: input must be a tensor, got " + kind):
        oa.masked_fill(bad, mask, 1.0)
    with pytest.raises(TypeError, match=r"oa\.nonzero: input must be a tensor, got " + kind):
        oa.nonzero(bad)
    with pytest.raises(TypeError, match=r"oa\.nonzero: input must be a tensor, got " + kind):
        oa.nonzero(bad, as_tuple=True)
    with pytest.raises(TypeError, match=r"oa\.where: condition must be a bool tensor, got " + kind):
        oa.where(bad)
    np.testing.assert_array_equal(x.numpy(), A)  # nothing was written


@pytest.mark.parametrize("bad", [None, 1, 0, "yes", 1.0], ids=repr)
def test_nonzero_as_tuple_must_be_a_bool(bad):
    x = oa.tensor(MASK)
    with pytest.raises(TypeError, match=r"oa\.nonzero: as_tuple must be a bool, got " + type(bad).__name__):
        oa.nonzero(x, as_tuple=bad)
    with pytest.raises(TypeError, match=r"oa\.Tensor\.nonzero: as_tuple must be a bool, got " + type(bad).__name__):
        x.nonzero(as_tuple=bad)
    # A NumPy bool counts, as torch's.
    rows, cols = oa.nonzero(x, as_tuple=np.bool_(True))
    np.testing.assert_array_equal(rows.numpy(), [0, 0, 1])
    np.testing.assert_array_equal(cols.numpy(), [0, 2, 2])
    np.testing.assert_array_equal(x.nonzero(as_tuple=np.bool_(False)).numpy(), [[0, 0], [0, 2], [1, 2]])
