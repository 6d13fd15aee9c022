"""oa.set_float32_matmul_precision / get_float32_matmul_precision (torch's names and strings)."""
import numpy as np
import pytest

import oa


def test_set_get_and_matmul_under_high():
    assert oa.get_float32_matmul_precision() == "highest"
    a = np.random.default_rng(0).uniform(-1, 1, (3, 37, 70)).astype(np.float32)
    b = np.random.default_rng(1).uniform(-1, 1, (70, 29)).astype(np.float32)
    want = a.astype(np.float64) @ b.astype(np.float64)
    try:
        oa.set_float32_matmul_precision("high")
        assert oa.get_float32_matmul_precision() == "high"
        assert oa.get_float32_matmul_precision(oa.default_engine()) == "high"
        got = oa.matmul(oa.tensor(a), oa.tensor(b)).numpy()
        # FP32 accuracy: the split on tensor cores, the FP32 kernels elsewhere.
        bound = 4 * 2.0**-24 * 70 * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64))
        assert np.all(np.abs(got - want) <= bound)
    finally:
        oa.set_float32_matmul_precision("highest")
    assert oa.get_float32_matmul_precision() == "highest"


@pytest.mark.parametrize("precision", ["medium", "HIGH", ""])
def test_other_precisions_raise(precision):
    with pytest.raises(oa.InvalidArgumentError, match="set_float32_matmul_precision"):
        oa.set_float32_matmul_precision(precision)
    assert oa.get_float32_matmul_precision() == "highest"
