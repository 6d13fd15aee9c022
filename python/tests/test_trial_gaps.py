"""torch behaviours that a new user's trial of the Python API found missing, or
misnamed in their errors."""
import pytest

import oa


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
