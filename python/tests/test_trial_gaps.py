"""torch behaviours that a new user's trial of the Python API found missing, or
misnamed in their errors."""
import copy

import numpy as np
import pytest

import oa
from reference import values


def test_permute_and_reductions_name_a_repeated_axis():
    x = oa.tensor(values((2, 3), 1))
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.Tensor.permute: dims \(0, 0\) must be a permutation of the axes "
                       r"of x of shape \[2, 3\]: duplicate dims are not allowed"):
        x.permute(0, 0)
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.permute: .*len\(dims\) = 1 is not x.dim\(\) = 2"):
        oa.permute(x, (1,))
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.Tensor.permute: .*dim 2 is out of range \[-2, 1\]"):
        x.permute(2, 0)
    np.testing.assert_array_equal(x.permute(-1, 0).numpy(), values((2, 3), 1).T)
    for call, op in ((lambda: x.sum(axis=(0, 0)), "oa.Tensor.sum"), (lambda: oa.sum(x, dim=(0, -2)), "oa.sum"),
                     (lambda: x.mean(dim=[1, -1]), "oa.Tensor.mean"), (lambda: x.amax((1, 1)), "oa.Tensor.amax")):
        with pytest.raises(oa.InvalidArgumentError, match=rf"{op}: dim \d appears multiple times in the list of dims .*"
                           r"\(x of shape \[2, 3\]\)"):
            call()


def test_fill_of_a_float_into_int32_truncates():
    i = oa.zeros(3, dtype=oa.int32)
    assert i.fill_(2.5) is i and i.tolist() == [2, 2, 2]
    assert i.fill_(-2.9).tolist() == [-2, -2, -2]
    assert oa.full((2,), 7.9, dtype=oa.int32).tolist() == [7, 7]
    for value in (float("nan"), float("inf"), 2.0**31):
        with pytest.raises(oa.InvalidArgumentError, match="oa.Tensor.fill_: value .* cannot be converted to type int32 "
                           "without overflow"):
            i.fill_(value)


def test_dtype_prints_as_oa_dtype():
    assert str(oa.float32) == repr(oa.float32) == "oa.float32"
    assert [repr(d) for d in (oa.float16, oa.bfloat16, oa.int32, oa.bool)] == [
        "oa.float16", "oa.bfloat16", "oa.int32", "oa.bool"]
    assert f"{oa.half}" == "oa.float16" and oa.float32.name == "float32" and oa.dtype.int32 is oa.int32


def test_operands_on_another_engine_are_named():
    other = oa.Engine()
    x = oa.tensor(values((2, 3), 1), requires_grad=True)
    mask = x > 0
    for call, arg, op in (
            (lambda: oa.masked_fill(x, mask, oa.tensor(1.0, engine=other)), r"value \[\]", "oa.masked_fill"),
            (lambda: oa.masked_fill(x, mask, oa.tensor(1.0, engine=other, requires_grad=True)), r"value \[\]",
             "oa.masked_fill"),
            (lambda: x.masked_fill(oa.tensor(np.ones((2, 3), bool), engine=other), 1.0), r"mask \[2, 3\]",
             "oa.Tensor.masked_fill")):
        with pytest.raises(oa.InvalidArgumentError, match=rf"{op}: {arg} lives on another engine than input \[2, 3\]"):
            call()
    y = oa.zeros(4)
    index, there = oa.tensor([1, 2]), oa.tensor([1, 2], engine=other)
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.Tensor.__setitem__: index \[2\] lives on another engine than "
                       r"x \[4\]"):
        y[there] = 1.0
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.Tensor.__setitem__: value \[2\] lives on another engine"):
        y[index] = oa.tensor([1.0, 2.0], engine=other)
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.Tensor.__setitem__: mask \[4\] lives on another engine"):
        y[oa.tensor([True, False, True, False], engine=other)] = 1.0
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.Tensor.__getitem__: index \[2\] lives on another engine"):
        y[there]
    assert y.tolist() == [0.0] * 4
    y[index] = oa.tensor([1.0, 2.0])
    assert y.tolist() == [0.0, 1.0, 2.0, 0.0]


def test_embedding_shows_its_padding_idx_normalised():
    e = oa.nn.Embedding(10, 3, padding_idx=-1)
    assert e.padding_idx == 9 and (e.num_embeddings, e.embedding_dim) == (10, 3)
    assert repr(e) == "Embedding(10, 3, padding_idx=9)"
    assert repr(oa.nn.Embedding(4, 2)) == "Embedding(4, 2)"
    assert repr(copy.deepcopy(e)) == "Embedding(10, 3, padding_idx=9)"
