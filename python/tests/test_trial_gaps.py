"""torch behaviours that a new user's trial of the Python API found missing, or
misnamed in their errors."""
import pytest

import oa


def test_dtype_prints_as_oa_dtype():
    assert str(oa.float32) == repr(oa.float32) == "oa.float32"
    assert [repr(d) for d in (oa.float16, oa.bfloat16, oa.int32, oa.bool)] == [
        "oa.float16", "oa.bfloat16", "oa.int32", "oa.bool"]
    assert f"{oa.half}" == "oa.float16" and oa.float32.name == "float32" and oa.dtype.int32 is oa.int32
