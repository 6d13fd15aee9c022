"""torch.sort / argsort, torch.einsum and torch.nn.functional.interpolate, composed in Python over oa's ops, against
NumPy float64 oracles with finite-difference gradients, and their errors."""
import itertools
import math

import numpy as np
import pytest

import oa
import oa.nn.functional as F
from oa import nn
from reference import assert_close, check_gradients, values


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


def interpolate(x, out, mode, align_corners=False, scales=None):
    """torch's interpolate of x [N, C, *spatial] (float64) to spatial extents `out`, one output element at a time:
    each axis gives its source taps (position, weight) by torch's rules, and the output is the sum over every
    combination of one tap per axis of the product of the weights times x there."""
    scales = scales or [None] * len(out)

    def taps(n, m, s, dst):
        r = np.float32(1.0 / s) if s else np.float32(n) / np.float32(m)  # torch computes the ratio in float32
        if mode in ("nearest", "nearest-exact"):
            shift = np.float32(0.5) if mode == "nearest-exact" else np.float32(0)
            return [(min(int(np.floor((np.float32(dst) + shift) * r)), n - 1), 1.0)]
        if align_corners:
            src = dst * (n - 1) / (m - 1) if m > 1 else 0.0
        else:
            src = max((dst + 0.5) * float(r) - 0.5, 0.0)
        i0 = min(math.floor(src), n - 1)
        return [(i0, 1.0 - (src - i0)), (min(i0 + 1, n - 1), src - i0)]

    y = np.zeros(x.shape[:2] + tuple(out))
    for pos in np.ndindex(*out):
        axes = [taps(n, m, s, d) for n, m, s, d in zip(x.shape[2:], out, scales, pos)]
        for combo in itertools.product(*axes):
            y[(Ellipsis,) + pos] += np.prod([w for _, w in combo]) * x[(Ellipsis,) + tuple(i for i, _ in combo)]
    return y


@pytest.mark.parametrize("shape, kwargs, out, scales", [
    ((2, 2, 3, 4), dict(scale_factor=2, mode="bilinear"), (6, 8), (2.0, 2.0)),
    ((2, 2, 3, 4), dict(size=(5, 3), mode="bilinear"), (5, 3), None),
    ((1, 2, 4, 5), dict(size=(7, 2), mode="bilinear", align_corners=True), (7, 2), None),
    ((1, 2, 4, 5), dict(scale_factor=(1.7, 0.6), mode="bilinear"), (6, 3), (1.7, 0.6)),
    ((1, 2, 4, 5), dict(scale_factor=(1.7, 0.6), mode="bilinear", recompute_scale_factor=True), (6, 3), None),
    ((1, 2, 4, 5), dict(size=1, mode="bilinear", align_corners=True), (1, 1), None),
    ((2, 2, 3, 4), dict(scale_factor=2), (6, 8), (2.0, 2.0)),
    ((1, 2, 5, 4), dict(scale_factor=1.7), (8, 6), (1.7, 1.7)),
    ((1, 2, 5, 4), dict(size=(3, 7)), (3, 7), None),
    ((1, 2, 5, 4), dict(size=(8, 3), mode="nearest-exact"), (8, 3), None),
    ((2, 3, 5), dict(scale_factor=1.5, mode="linear"), (7,), (1.5,)),
    ((2, 3, 5), dict(size=4, mode="linear", align_corners=True), (4,), None),
    ((2, 3, 5), dict(size=9), (9,), None),
    ((1, 1, 2, 3, 2), dict(size=(3, 2, 4), mode="trilinear"), (3, 2, 4), None),
    ((1, 1, 2, 3, 2), dict(scale_factor=2), (4, 6, 4), (2.0, 2.0, 2.0)),
])
def test_interpolate_matches_torchs_rules(shape, kwargs, out, scales):
    mode = kwargs.get("mode", "nearest")
    check_gradients(lambda x: F.interpolate(x, **kwargs),
                    lambda x: interpolate(x, out, mode, kwargs.get("align_corners", False), scales),
                    [values(shape, 5)])


def test_interpolate_known_values():
    row = oa.tensor(np.arange(4, dtype=np.float32).reshape(1, 1, 1, 4))
    assert_close(F.interpolate(row, scale_factor=2, mode="bilinear").numpy()[0, 0, 1],
                 [0, 0.25, 0.75, 1.25, 1.75, 2.25, 2.75, 3])
    assert_close(F.interpolate(row, size=(1, 7), mode="bilinear", align_corners=True).numpy().ravel(),
                 [0, 0.5, 1, 1.5, 2, 2.5, 3])
    line = oa.tensor(np.arange(5, dtype=np.float32).reshape(1, 1, 5))
    # scale_factor 1.7: 8 outputs at r = 1 / 1.7 (not 5 / 8), unless the scale factor is recomputed.
    np.testing.assert_array_equal(F.interpolate(line, scale_factor=1.7).numpy().ravel(), [0, 0, 1, 1, 2, 2, 3, 4])
    np.testing.assert_array_equal(F.interpolate(line, scale_factor=1.7, recompute_scale_factor=True).numpy().ravel(),
                                  [0, 0, 1, 1, 2, 3, 3, 4])
    np.testing.assert_array_equal(F.interpolate(line, size=3).numpy().ravel(), [0, 1, 3])
    # An output of twice the input halves the index (torch's CPU kernel), not floor(dst / 2.1).
    np.testing.assert_array_equal(F.interpolate(line, scale_factor=2.1).numpy().ravel(), np.arange(10) // 2)
    np.testing.assert_array_equal(F.interpolate(line, size=3, mode="nearest-exact").numpy().ravel(), [0, 2, 4])


def test_interpolate_dtypes():
    x = values((1, 2, 3, 4), 6)
    half = F.interpolate(oa.tensor(x).half(), scale_factor=2, mode="bilinear")
    assert half.dtype == oa.float16
    assert_close(half.float().numpy(), interpolate(x.astype(np.float16).astype(np.float64), (6, 8), "bilinear",
                                                   scales=(2.0, 2.0)), rtol=2e-3, atol=2e-3)
    ints = F.interpolate(oa.tensor(np.arange(6, dtype=np.int32).reshape(1, 1, 2, 3)), size=(4, 6))
    assert ints.dtype == oa.int32
    np.testing.assert_array_equal(ints.numpy()[0, 0], np.arange(6).reshape(2, 3).repeat(2, 0).repeat(2, 1))


def test_upsample_modules():
    x = values((1, 2, 3, 4), 7)
    up = nn.Upsample(scale_factor=2, mode="bilinear")
    assert repr(up) == "Upsample(scale_factor=2.0, mode='bilinear')"
    assert_close(up(oa.tensor(x)).numpy(), interpolate(x.astype(np.float64), (6, 8), "bilinear", scales=(2.0, 2.0)))
    assert repr(nn.Upsample(size=(5, 5))) == "Upsample(size=(5, 5), mode='nearest')"
    assert_close(nn.UpsamplingNearest2d(size=(5, 7))(oa.tensor(x)).numpy(),
                 interpolate(x.astype(np.float64), (5, 7), "nearest"))
    assert_close(nn.UpsamplingBilinear2d(scale_factor=2)(oa.tensor(x)).numpy(),
                 interpolate(x.astype(np.float64), (6, 8), "bilinear", align_corners=True))


def test_interpolate_errors():
    x = oa.tensor(values((1, 2, 3, 4), 8))
    op = "oa.nn.functional.interpolate"
    cases = [
        (dict(), oa.InvalidArgumentError, f"{op}: give exactly one of size and scale_factor \\(input \\[1, 2, 3, 4\\]\\)"),
        (dict(size=4, scale_factor=2), oa.InvalidArgumentError, "exactly one of size and scale_factor"),
        (dict(size=(4, 4, 4)), oa.InvalidArgumentError,
         r"input \[1, 2, 3, 4\] has 2 spatial axes but size \[4, 4, 4\] has 3"),
        (dict(scale_factor=[2.0]), oa.InvalidArgumentError, r"has 2 spatial axes but scale_factor \[2.0\] has 1"),
        (dict(size=2.5), TypeError, f"{op}: size must be an int or a sequence of them, not 2.5"),
        (dict(scale_factor="2"), TypeError, "scale_factor must be a float or a sequence of them"),
        (dict(scale_factor=0.2), oa.InvalidArgumentError, r"output spatial extents \[0, 0\] must be >= 1"),
        (dict(size=2, mode="bicubic"), oa.InvalidArgumentError, "mode 'bicubic' is not supported"),
        (dict(size=2, mode="linear"), oa.InvalidArgumentError,
         r"mode 'linear' needs a 3-D input \(\[N, C, d1, ...\]\), got input \[1, 2, 3, 4\]"),
        (dict(size=2, align_corners=False), oa.InvalidArgumentError,
         "align_corners can only be set with the interpolating modes"),
        (dict(size=2, mode="bilinear", antialias=True), oa.InvalidArgumentError, "antialias=True is not supported"),
    ]
    for kwargs, error, message in cases:
        with pytest.raises(error, match=message):
            F.interpolate(x, **kwargs)
    with pytest.raises(oa.InvalidArgumentError, match=r"mode 'nearest' needs a 3-D, 4-D or 5-D input .*got input \[3, 4\]"):
        F.interpolate(oa.zeros(3, 4), size=2)
    with pytest.raises(oa.InvalidArgumentError, match="mode 'bilinear' needs a floating input, not int32"):
        F.interpolate(oa.zeros(1, 1, 2, 2, dtype=oa.int32), size=3, mode="bilinear")
    with pytest.raises(TypeError, match=f"{op}: input must be an oa.Tensor, not ndarray"):
        F.interpolate(np.zeros((1, 1, 2, 2)), size=3)


@pytest.mark.parametrize("equation, shapes", [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("bhqd,bhkd->bhqk", [(2, 2, 3, 4), (2, 2, 5, 4)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (4, 5)]),
    ("a...c,c->a...", [(2, 3, 2, 4), (4,)]),
    ("...,...->...", [(2, 1, 4), (3, 1)]),
    ("ij,ij->ij", [(3, 4), (1, 4)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,i->", [(4,), (4,)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("ab,bA", [(2, 3), (3, 4)]),
    ("ijk,ikj->i", [(2, 3, 4), (2, 4, 3)]),
    ("ij->ji", [(3, 4)]),
    ("ij->", [(3, 4)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("iij,jk->ki", [(3, 3, 4), (4, 2)]),
    ("ijk,jl->lik", [(2, 3, 2), (3, 4)]),
])
def test_einsum_matches_numpy(equation, shapes):
    inputs = [values(s, 10 + i) for i, s in enumerate(shapes)]
    check_gradients(lambda *ts: oa.einsum(equation, *ts), lambda *xs: np.einsum(equation, *xs), inputs)


def test_einsum_forms():
    a, b = values((2, 3, 4), 20), values((2, 4, 5), 21)
    want = np.einsum("bij,bjk->bik", a.astype(np.float64), b)
    assert_close(oa.einsum(" b i j , b j k -> b i k ", [oa.tensor(a), oa.tensor(b)]).numpy(), want)
    half = oa.einsum("bij,bjk->bik", oa.tensor(a).half(), oa.tensor(b).half())
    assert half.dtype == oa.float16
    assert_close(half.float().numpy(), want, rtol=1e-2, atol=1e-2)
    # An explicit output without '...' sums the ellipsis's axes, as torch.
    assert_close(oa.einsum("...ij->ij", oa.tensor(a)).numpy(), a.astype(np.float64).sum(0))
    x = oa.tensor(a)
    y = oa.einsum("bij->bij", x)
    assert y is not x and np.array_equal(y.numpy(), a)


def test_einsum_errors():
    a, b = oa.tensor(values((2, 3), 22)), oa.tensor(values((3, 4), 23))
    cases = [
        (("ij,jk->ik", a), oa.InvalidArgumentError, r"oa.einsum: equation 'ij,jk->ik' has 2 input terms but 1 operands"),
        (("ij",), oa.InvalidArgumentError, "oa.einsum: must provide at least one operand"),
        (("i1,jk", a, b), oa.InvalidArgumentError, r"invalid subscript '1' in the term of operand 0 'i1'"),
        (("...i...,jk", a, b), oa.InvalidArgumentError, "more than one ellipsis"),
        (("ijk,jk", a, b), oa.InvalidArgumentError, r"term 'ijk' of equation 'ijk,jk' names 3 axes but operand 0 has "
                                                    r"shape \[2, 3\]"),
        (("i,jk", a, b), oa.InvalidArgumentError, r"term 'i' .* names 1 axes but operand 0 has shape \[2, 3\]"),
        (("ij,jk->ii", a, b), oa.InvalidArgumentError, "output subscript 'i' appears more than once"),
        (("ij,jk->iz", a, b), oa.InvalidArgumentError, "output subscript 'z' .* does not appear in the input terms"),
        (("ij,ik->jk", a, b), oa.InvalidArgumentError, r"subscript 'i' .* do not broadcast: operand shapes \[\[2, 3\], "
                                                       r"\[3, 4\]\]"),
        (("ii->i", a), oa.InvalidArgumentError, r"subscript 'i' is repeated .* shape \[2, 3\] .* extents 2 != 3"),
        (("ij,jk", a, b.half()), oa.InvalidArgumentError, "one floating dtype .* not float16, float32"),
        (("ij", oa.ones(2, 2, dtype=oa.int32)), oa.InvalidArgumentError, "not int32"),
        ((a, [0, 1]), TypeError, "equation must be a str .* sublist form is not supported"),
        (("ij,jk", a, np.ones((3, 4))), TypeError, "operand 1 must be an oa.Tensor, not ndarray"),
    ]
    for args, error, message in cases:
        with pytest.raises(error, match=message):
            oa.einsum(*args)
