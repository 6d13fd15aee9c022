"""x[key] = value, Tensor.T and Tensor.clone against PyTorch 1.13 (CPU, f32).

Assignment is exact (values are copied, not computed), so results must equal
torch's bit for bit; T and clone are checked for values and gradients.
"""
import numpy as np
import pytest

import oa
from reference import assert_close, values

torch = pytest.importorskip("torch", reason="PyTorch is not installed (Debian: apt-get install python3-torch)")

X = values((3, 4, 5), 1)


def both(key):
    """(oa key, torch key): int32 oa tensors become int64 torch tensors, bool ones bool."""
    def convert(entry, lib):
        if isinstance(entry, np.ndarray):
            if lib is torch:
                return torch.tensor(entry.astype(np.int64) if entry.dtype != bool else entry)
            return oa.tensor(entry, dtype=oa.int32 if entry.dtype != bool else oa.bool)
        return entry
    if isinstance(key, tuple):
        return tuple(convert(e, oa) for e in key), tuple(convert(e, torch) for e in key)
    return convert(key, oa), convert(key, torch)


def assign(key, value):
    """x[key] = value on oa and on torch, from X; returns both results as arrays."""
    oa_key, torch_key = both(key)
    a, t = oa.tensor(X), torch.tensor(X)
    if isinstance(value, np.ndarray):
        a[oa_key] = oa.tensor(value)
        t[torch_key] = torch.tensor(value)
    else:
        a[oa_key] = value
        t[torch_key] = value
    return a.numpy(), t.numpy()


KEYS = [
    1, -1, (0, 2), (0, 2, 4), (-1, -2, -3),
    slice(1, None), slice(None, None, 2), (slice(None), slice(1, 4, 2)), (slice(None), slice(None), slice(None, None, 3)),
    slice(5, 9), slice(-2, None), (slice(None), slice(3, 1)),
    Ellipsis, (Ellipsis, 0), (1, Ellipsis, slice(0, 5, 4)), (Ellipsis, None), (None, 1), (slice(None), None, 2),
    np.array([2, 0]), np.array([-1, 1, 1]), (slice(None), np.array([[3, 0], [1, 1]])), (1, np.array([3])), (Ellipsis, np.array(2)),
    [0, 2], (slice(None), [1, -1]),
    np.array([True, False, True]), (np.random.default_rng(0).uniform(size=(3, 4)) > 0.5),
    np.random.default_rng(1).uniform(size=(3, 4, 5)) > 0.5, (np.array([False, True, False]), slice(1, 3)),
    (0, np.array([True, False, True, True])), [True, False, True],
]


@pytest.mark.parametrize("key", KEYS, ids=str)
def test_assign_scalar(key):
    got, want = assign(key, -7.5)
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("key", KEYS, ids=str)
def test_assign_tensor_broadcast(key):
    selected = torch.tensor(X)[both(key)[1]].shape
    full = values(tuple(selected), 2)
    got, want = assign(key, full)
    np.testing.assert_array_equal(got, want)
    if len(selected) >= 1:  # the last axis broadcast from 1, and a leading 1 dropped
        got, want = assign(key, values((1,) * len(selected), 3))
        np.testing.assert_array_equal(got, want)
        got, want = assign(key, values((1,) + tuple(selected), 4))
        np.testing.assert_array_equal(got, want)


def test_repeated_indices_last_wins():
    got, want = assign(np.array([1, 1, 1]), np.stack([np.full((4, 5), v, np.float32) for v in (1, 2, 3)]))
    np.testing.assert_array_equal(got, want)
    assert (got[1] == 3).all()


def test_assignment_writes_storage_views_and_version():
    x = oa.tensor(X)
    view, detached, flat = x.view(12, 5), x.detach(), x.reshape(-1)
    x[1, 2:, ::2] = 4.0
    want = X.copy()
    want[1, 2:, ::2] = 4.0
    for shared in (x, view, detached, flat):
        np.testing.assert_array_equal(shared.numpy().reshape(X.shape), want)
    view[0] = oa.zeros(5)  # through a view, back to x
    assert (x.numpy()[0, 0] == 0).all()
    # x[key] is a copy in oa: assignment into it raises instead of missing x.
    with pytest.raises(oa.FailedPreconditionError, match="copy"):
        x[0][1] = 2.0
    # A tensor saved for backward, then assigned, refuses backward (versions).
    w = oa.tensor(X, requires_grad=True)
    y = oa.tensor(X)
    loss = (w * y).sum()
    y[0] = 1.0
    with pytest.raises(oa.Error):
        loss.backward()


def test_assignment_refusals_as_torch():
    leaf = oa.tensor(X, requires_grad=True)
    with pytest.raises(oa.FailedPreconditionError, match="leaf"):
        leaf[0] = 1.0
    with pytest.raises(RuntimeError):
        t = torch.tensor(X, requires_grad=True)
        t[0] = 1.0
    with oa.no_grad():
        leaf[0] = 1.0  # as an optimizer does
    assert (leaf.numpy()[0] == 1).all() and leaf.requires_grad
    # Assignment of a value with history records it, as torch.
    a, t = oa.tensor(X), torch.tensor(X)
    a[0] = leaf[1] * 2
    t_leaf = torch.tensor(X, requires_grad=True)
    t[0] = t_leaf[1] * 2
    a.sum().backward()
    t.sum().backward()
    np.testing.assert_array_equal(leaf.grad.numpy(), t_leaf.grad.numpy())


@pytest.mark.parametrize("key", [3, -4, (0, 5), (0, 0, -6), np.array([0, 3]), np.array([-4]), [5], (slice(None), [4])], ids=str)
def test_out_of_range_raises_index_error(key):
    oa_key, torch_key = both(key)
    with pytest.raises(IndexError):
        torch.tensor(X)[torch_key] = 1.0
    x = oa.tensor(X)
    with pytest.raises(IndexError, match="out of bounds"):
        x[oa_key] = 1.0
    np.testing.assert_array_equal(x.numpy(), X)  # nothing written


def test_bad_assignments():
    x = oa.tensor(X)
    with pytest.raises(RuntimeError):
        torch.tensor(X)[0] = torch.zeros(3)
    with pytest.raises(oa.InvalidArgumentError, match=r"cannot be broadcast"):
        x[0] = oa.zeros(3)
    with pytest.raises(oa.InvalidArgumentError, match=r"cannot be broadcast"):
        x[0] = oa.zeros(2, 4, 5)
    with pytest.raises(IndexError, match="leading extents"):
        x[oa.tensor([True, False])] = 1.0
    with pytest.raises(IndexError):
        x[0, 0, 0, 0] = 1.0
    with pytest.raises(ValueError):
        x[::-1] = 1.0
    with pytest.raises(TypeError):
        x["a"] = 1.0
    with pytest.raises(TypeError):
        x[0] = "a"
    with pytest.raises(TypeError, match="int32 or bool"):
        x[oa.zeros(2)] = 1.0
    z = oa.tensor([1, 2], dtype=oa.int32)
    z[0] = oa.tensor([-2.7])  # a float into int32 truncates toward zero, as torch's
    assert z.tolist() == [-2, 2]
    y = oa.tensor(X)
    y[0] = oa.tensor(np.arange(5, dtype=np.int32))  # int32 into float32 converts, as torch's
    np.testing.assert_array_equal(y.numpy()[0], np.broadcast_to(np.arange(5, dtype=np.float32), (4, 5)))
    with pytest.raises(TypeError, match="NoneType"):
        x[0] = None
    with pytest.raises(oa.InvalidArgumentError, match="outside int32"):
        oa.tensor([1, 2], dtype=oa.int32)[0] = 2**40
    for bad in (float("nan"), float("-inf"), [1.0, float("inf")]):
        with pytest.raises(oa.InvalidArgumentError, match="NaN or infinity"):
            oa.tensor([1, 2], dtype=oa.int32)[:] = bad
    np.testing.assert_array_equal(x.numpy(), X)


@pytest.mark.parametrize("key, axis", [((0, 5), 1), ((Ellipsis, 7), 2), ((1, slice(None), [0, 9]), 2),
                                       ((None, 0, 0, -6), 2), ((np.array([True, False, True]), 4), 1)], ids=str)
def test_out_of_range_names_the_axis_of_x(key, axis):
    with pytest.raises(IndexError, match=f"for axis {axis} of extent"):
        oa.tensor(X)[key] = 1.0


@pytest.mark.parametrize("value", [[1.5, 2.5, 3.5, 4.5, 5.5], [[1, 2, 3, 4, 5]], np.arange(5, dtype=np.float64),
                                   np.arange(5, dtype=np.int64), [True, False, True, False, True], 3, True, 1e30])
def test_assign_lists_numpy_and_numbers(value):
    a, t = oa.tensor(X), torch.tensor(X)
    a[1, 2] = value
    t[1, 2] = torch.tensor(value, dtype=torch.float32) if isinstance(value, (list, np.ndarray)) else value
    np.testing.assert_array_equal(a.numpy(), t.numpy())


def test_assign_into_int32_and_bool():
    base = np.arange(24, dtype=np.int32).reshape(4, 6)
    a, t = oa.tensor(base), torch.tensor(base)
    for key, value in [(1, 100), ((0, slice(None, None, 2)), -5), ((2, [1, 3]), np.array([7, 8], np.int32)),
                       ((3, 0), 2.9), ((3, 1), -2.9), (np.array([True, False, False, True]), [[9] * 6])]:
        oa_key, torch_key = both(key)
        a[oa_key] = oa.tensor(value) if isinstance(value, np.ndarray) else value
        t[torch_key] = torch.tensor(value, dtype=torch.int32) if isinstance(value, (list, np.ndarray)) else value
    assert a.dtype == oa.int32
    np.testing.assert_array_equal(a.numpy(), t.numpy())

    mask = np.zeros((3, 4), bool)
    a, t = oa.tensor(mask), torch.tensor(mask)
    for key, value in [((0, 1), True), (1, [1, 0, 2.5, 0]), ((2, slice(1, 3)), oa.tensor([True, False])),
                       ((2, 3), oa.tensor(-0.5)), ((0, 1), 0)]:
        a[key] = value
        t[key] = torch.tensor(value.numpy()) if isinstance(value, oa.Tensor) else (
            torch.tensor(value) if isinstance(value, list) else value)
    assert a.dtype == oa.bool
    np.testing.assert_array_equal(a.numpy(), t.numpy())


def test_assign_half_and_rank0():
    h = oa.tensor(X, dtype=oa.float16)
    h[:, 1] = 0.5
    want = X.astype(np.float16)
    want[:, 1] = 0.5
    np.testing.assert_array_equal(h.numpy(), want)
    s = oa.tensor(2.0)
    s[...] = 3.0
    assert s.item() == 3.0
    s[()] = oa.tensor([4.0])
    assert s.item() == 4.0


@pytest.mark.parametrize("shape", [(), (4,), (3, 4), (2, 3, 4)])
def test_T(shape):
    x = values(shape, 5)
    a, t = oa.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    got, want = a.T, t.T
    np.testing.assert_array_equal(got.numpy(), want.detach().numpy())
    w = values(tuple(want.shape), 6)
    (got * oa.tensor(w)).sum().backward()
    (want * torch.tensor(w)).sum().backward()
    assert_close(a.grad.numpy(), t.grad.numpy())
    if len(shape) >= 2:
        with pytest.raises(oa.FailedPreconditionError, match="copy"):
            oa.tensor(x).T.add_(1.0)


def test_clone():
    a, t = oa.tensor(X, requires_grad=True), torch.tensor(X, requires_grad=True)
    got, want = a.clone(), t.clone()
    np.testing.assert_array_equal(got.numpy(), want.detach().numpy())
    w = values(X.shape, 7)
    (got * got * oa.tensor(w)).sum().backward()
    (want * want * torch.tensor(w)).sum().backward()
    assert_close(a.grad.numpy(), t.grad.numpy())
    # A new storage that in-place ops may write, also of a marked copy.
    x = oa.tensor(X)
    c = x.clone()
    c[0] = 0.0
    np.testing.assert_array_equal(x.numpy(), X)
    part = x[1].clone()
    part += 1.0
    np.testing.assert_array_equal(part.numpy(), X[1] + 1)
    i = oa.tensor([1, 2], dtype=oa.int32).clone()
    assert i.dtype == oa.int32 and i.tolist() == [1, 2]
