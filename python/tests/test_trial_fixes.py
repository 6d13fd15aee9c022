"""Wrong results and torch behaviours missing that a new user's trial found: copy_ across engines, the gradient of
binary_cross_entropy_with_logits at 0, arange's and full's dtypes, MultiheadAttention's is_causal hint,
format() of a 0-d tensor, the gradient-mode context managers, and NumPy integers as dims and sizes."""
import numpy as np
import pytest

import oa
import oa.nn.functional as F
from reference import assert_close, values


def test_copy_from_another_engine_is_refused():
    other = oa.Engine()
    dst = oa.ones(4)
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.Tensor.copy_: src \[4\] lives on another engine than x \[4\]"):
        dst.copy_(oa.full((4,), 5.0, engine=other))
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.Tensor.copy_: src \[1\] lives on another engine than x \[4\]"):
        dst.copy_(oa.full((1,), 5.0, engine=other))  # broadcast too
    np.testing.assert_array_equal(dst.numpy(), np.ones(4, np.float32))  # nothing written
    dst.copy_(oa.full((4,), 5.0))
    np.testing.assert_array_equal(dst.numpy(), np.full(4, 5, np.float32))
