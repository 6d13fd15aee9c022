"""torch's scatter reductions against float64 loops: Tensor.scatter / scatter_ with reduce='add' or 'multiply'
(torch's older form) and scatter_reduce / scatter_reduce_ ('sum', 'prod', 'mean', 'amax', 'amin', include_self),
with gradients by finite differences."""
import numpy as np
import pytest

import oa
from reference import assert_close, check_gradients, values

REDUCE = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "amax": np.max, "amin": np.min}


def scatter_reduce_reference(x, dim, index, src, reduce, include_self=True):
    """torch.scatter_reduce by loops: src[p] for each position p of index reduced into x at p with p[dim] =
    index[p]; float64 for floats, int64 with floor division for 'mean' of integers."""
    integer = x.dtype.kind in "iu"
    out = x.astype(np.int64 if integer else np.float64)
    groups = {}
    for p in np.ndindex(*index.shape):
        target = list(p)
        target[dim] = index[p]
        groups.setdefault(tuple(target), []).append(src[p])
    for target, reduced in groups.items():
        reduced = ([x[target]] if include_self else []) + reduced
        if integer and reduce == "mean":
            out[target] = np.sum(reduced, dtype=np.int64) // len(reduced)
        else:
            out[target] = REDUCE[reduce](np.asarray(reduced, out.dtype))
    return out


# index [2, 3] (no larger than src [2, 4], nor than x [3, 4] outside dim), with repeated targets.
INDEX = {0: np.array([[2, 0, 2], [2, 1, 0]]), 1: np.array([[3, 3, 0], [1, 3, 3]])}


@pytest.mark.parametrize("reduce", list(REDUCE))
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("dim", [0, 1])
def test_scatter_reduce_matches_torchs_definition(reduce, include_self, dim):
    x, src = values((3, 4), 1, 0.5, 2.0), values((2, 4), 2, -2.0, 2.0)
    index = INDEX[dim]
    want = scatter_reduce_reference(x, dim, index, src, reduce, include_self)
    check_gradients(lambda t, s: oa.scatter_reduce(t, dim, oa.tensor(index), s, reduce, include_self=include_self),
                    lambda t, s: scatter_reduce_reference(t, dim, index, s, reduce, include_self), [x, src])
    got = oa.tensor(x).scatter_reduce(dim, oa.tensor(index), oa.tensor(src), reduce, include_self=include_self)
    assert_close(got.numpy(), want)
    half = oa.tensor(x).bfloat16().scatter_reduce(dim, oa.tensor(index), oa.tensor(src).bfloat16(), reduce,
                                                  include_self=include_self)
    assert half.dtype == oa.bfloat16
    assert_close(half.float().numpy(), want, rtol=3e-2, atol=3e-2)
    in_place = oa.tensor(x)
    returned = in_place.scatter_reduce_(dim, oa.tensor(index), oa.tensor(src), reduce, include_self=include_self)
    assert returned is in_place
    assert_close(in_place.numpy(), got.numpy(), rtol=0, atol=0)
    # int32: exact, 'mean' rounding down.
    xi, si = np.arange(-6, 6, dtype=np.int32).reshape(3, 4), np.array([[7, -3, 5, 2], [-9, 4, 1, 3]], np.int32)
    got = oa.tensor(xi).scatter_reduce(dim, oa.tensor(index), oa.tensor(si), reduce, include_self=include_self)
    assert got.dtype == oa.int32
    np.testing.assert_array_equal(got.numpy(), scatter_reduce_reference(xi, dim, index, si, reduce, include_self))


def test_scatter_reduce_gradients_at_zeros_and_ties():
    # 'prod': each factor gets the product of the others, zeros included (one zero, and two in one place).
    x, src = np.array([2.0, 0.0, 3.0], np.float32), np.array([0.0, 4.0, 0.0, 5.0, -1.0], np.float32)
    index = np.array([0, 0, 1, 1, 2])
    check_gradients(lambda t, s: oa.scatter_reduce(t, 0, oa.tensor(index), s, "prod"),
                    lambda t, s: scatter_reduce_reference(t, 0, index, s, "prod"), [x, src])
    # 'amax' / 'amin': shared evenly among the elements equal to the result, input's own included.
    for reduce, src in (("amax", [5.0, 1.0, 5.0, 3.0]), ("amin", [5.0, 9.0, 5.0, 3.0])):
        t, s = oa.tensor([1.0, 5.0, 7.0], requires_grad=True), oa.tensor(src, requires_grad=True)
        out = oa.scatter_reduce(t, 0, oa.tensor([1, 1, 1, 0]), s, reduce)
        assert out.tolist() == ([3.0, 5.0, 7.0] if reduce == "amax" else [1.0, 5.0, 7.0])
        out.backward(oa.tensor([1.0, 3.0, 2.0]))
        if reduce == "amax":
            assert_close(t.grad.numpy(), [0.0, 1.0, 2.0])
            assert_close(s.grad.numpy(), [1.0, 0.0, 1.0, 1.0])
        else:
            assert_close(t.grad.numpy(), [1.0, 1.0, 2.0])
            assert_close(s.grad.numpy(), [1.0, 0.0, 1.0, 0.0])
    # 16-bit: the same sharing.
    t = oa.tensor([1.0, 5.0, 7.0], requires_grad=True)
    out = oa.scatter_reduce(t.half(), 0, oa.tensor([1, 1, 1, 0]), oa.tensor([5.0, 1.0, 5.0, 3.0]).half(), "amax")
    assert out.dtype == oa.float16 and out.tolist() == [3.0, 5.0, 7.0]
    out.float().backward(oa.tensor([1.0, 3.0, 2.0]))
    assert_close(t.grad.numpy(), [0.0, 1.0, 2.0])
    # An infinite maximum keeps its value (its gradient is not shared: it gets none).
    out = oa.scatter_reduce(oa.tensor([0.0], requires_grad=True), 0, oa.tensor([0, 0]),
                            oa.tensor([-np.inf, np.inf], requires_grad=True), "amax")
    assert out.tolist() == [np.inf]


def test_scatter_with_torchs_older_reduce():
    x, src = values((3, 4), 3), values((2, 4), 4)
    index = np.array([[2, 0, 2, 1], [2, 1, 0, 1]])
    for reduce, name in (("add", "sum"), ("multiply", "prod")):
        want = scatter_reduce_reference(x, 0, index, src, name)
        check_gradients(lambda t, s: oa.scatter(t, 0, oa.tensor(index), s, reduce=reduce),
                        lambda t, s: scatter_reduce_reference(t, 0, index, s, name), [x, src])
        got = oa.tensor(x)
        got.scatter_(0, oa.tensor(index), oa.tensor(src), reduce=reduce)
        assert_close(got.numpy(), want)
        by_value = oa.tensor(x).scatter(1, oa.tensor(index), 2.0, reduce=reduce)
        assert_close(by_value.numpy(), scatter_reduce_reference(x, 1, index, np.full((2, 4), 2.0), name))
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.scatter: reduce must be 'add' or 'multiply', not 'sum'"):
        oa.tensor(x).scatter(0, oa.tensor(index), oa.tensor(src), reduce="sum")
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.scatter_reduce: reduce must be 'sum', 'prod', 'mean', "
                       r"'amax' or 'amin', not 'add'"):
        oa.tensor(x).scatter_reduce(0, oa.tensor(index), oa.tensor(src), "add")
    with pytest.raises(IndexError, match="oa.scatter_reduce: index 3 is out of bounds for dimension 0 with size 3"):
        oa.tensor(x).scatter_reduce(0, oa.tensor([[3]]), oa.tensor(src), "sum")
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.scatter_reduce: index \[3, 4\] is larger than src \[2, 4\]"):
        oa.tensor(x).scatter_reduce(0, oa.tensor(np.zeros((3, 4), np.int32)), oa.tensor(src), "sum")
