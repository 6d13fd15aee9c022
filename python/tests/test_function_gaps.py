"""torch functions and Tensor methods that a trial found missing: dot, addmm, baddbmm, unflatten, nan_to_num and
movedim, against NumPy float64 references and finite differences."""
import math

import numpy as np
import pytest

import oa
from reference import assert_close, check_gradients, values


def test_dot():
    a, b = values((5,), 1), values((5,), 2)
    check_gradients(oa.dot, lambda x, y: np.array(np.dot(x, y)), [a, b])
    assert oa.tensor(a).dot(oa.tensor(b)).shape == ()
    assert oa.dot(oa.tensor([1, 2, 3]), oa.tensor([4, 5, 6])).item() == 32
    with pytest.raises(oa.InvalidArgumentError, match=r"1-d of one size, not of shapes \[5\] and \[4\]"):
        oa.dot(oa.tensor(a), oa.zeros(4))
    with pytest.raises(oa.InvalidArgumentError, match="same dtype"):
        oa.dot(oa.tensor(a), oa.tensor(b).half())


def test_addmm_and_baddbmm():
    m, a, b = values((3,), 3), values((2, 4), 4), values((4, 3), 5)
    check_gradients(lambda i, x, y: oa.addmm(i, x, y, beta=0.5, alpha=-2.0), lambda i, x, y: 0.5 * i - 2 * (x @ y),
                    [m, a, b])
    check_gradients(lambda i, x, y: i.addmm(x, y), lambda i, x, y: i + x @ y, [values((2, 3), 6), a, b])
    batch = [values((2, 1, 3), 7), values((2, 4, 5), 8), values((2, 5, 3), 9)]
    check_gradients(lambda i, x, y: oa.baddbmm(i, x, y, beta=2, alpha=0.5), lambda i, x, y: 2 * i + 0.5 * (x @ y),
                    batch)
    # beta 0 ignores input, NaN included, as torch.
    nan = oa.full((2, 3), math.nan)
    assert_close(oa.addmm(nan, oa.tensor(a), oa.tensor(b), beta=0).numpy(), a.astype(np.float64) @ b)
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.addmm: input \[4\] does not broadcast to the product's shape"):
        oa.addmm(oa.zeros(4), oa.tensor(a), oa.tensor(b))


def test_unflatten():
    x = values((2, 12), 10)
    check_gradients(lambda t: t.unflatten(1, (3, -1)), lambda a: a.reshape(2, 3, 4), [x])
    assert oa.unflatten(oa.tensor(x), -1, [2, 2, 3]).shape == (2, 2, 2, 3)
    t = oa.tensor(x)
    view = t.unflatten(0, (1, 2))
    t += 1  # a reshape shares the storage, as torch's view
    np.testing.assert_array_equal(view.numpy().reshape(2, 12), t.numpy())
    for bad in ((5, 3), (-1, -1), (5, -1), ()):
        with pytest.raises(oa.InvalidArgumentError, match="don't multiply up to the size of dim 1 \\(12\\)"):
            t.unflatten(1, bad)


def test_nan_to_num():
    raw = np.array([math.nan, math.inf, -math.inf, 1.5, -2.0], np.float32)
    expected = np.nan_to_num(raw.astype(np.float64), posinf=np.finfo(np.float32).max, neginf=np.finfo(np.float32).min)
    np.testing.assert_array_equal(oa.tensor(raw).nan_to_num().numpy(), expected)
    assert_close(oa.nan_to_num(oa.tensor(raw), nan=1.0, posinf=2.0, neginf=-3.0).numpy(), [1, 2, -3, 1.5, -2])
    np.testing.assert_array_equal(oa.tensor(raw, dtype=oa.float16).nan_to_num().numpy(), [0, 65504, -65504, 1.5, -2])
    np.testing.assert_array_equal(oa.tensor([1, 2]).nan_to_num().numpy(), [1, 2])
    # The gradient passes where the input is finite, 0 elsewhere, as torch.
    t = oa.tensor(raw, requires_grad=True)
    t.nan_to_num(posinf=5.0).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), [0, 0, 0, 1, 1])
    check_gradients(lambda a: a.nan_to_num(), lambda a: a, [values((3,), 11)])


def test_movedim():
    x = values((2, 3, 4), 12)
    check_gradients(lambda t: oa.movedim(t, 0, -1), lambda a: np.moveaxis(a, 0, -1), [x])
    for source, destination in (((0, 1), (2, 0)), ([2], [0]), (1, 1)):
        np.testing.assert_array_equal(oa.tensor(x).movedim(source, destination).numpy(),
                                      np.moveaxis(x, source, destination))
    np.testing.assert_array_equal(oa.moveaxis(oa.tensor(x), 2, 0).numpy(), np.moveaxis(x, 2, 0))
    with pytest.raises(oa.InvalidArgumentError, match="same number of dims"):
        oa.movedim(oa.tensor(x), (0, 1), 2)
    with pytest.raises(oa.InvalidArgumentError, match="repeated dim"):
        oa.movedim(oa.tensor(x), (0, 0), (1, 2))
    with pytest.raises(oa.InvalidArgumentError, match="out of range"):
        oa.movedim(oa.tensor(x), 3, 0)
