"""Autograd from Python: backward, .grad, requires_grad_, detach, no_grad."""
import numpy as np
import pytest

import oa
from reference import assert_close, check_gradients, values


def test_backward_accumulates_into_leaves():
    x = oa.tensor([[1.0, 2.0], [3.0, -1.0]], requires_grad=True)
    w = oa.tensor([0.5, -2.0], requires_grad=True)
    assert x.is_leaf and x.grad is None and x.grad_fn is None
    y = (x * w).sum()
    assert y.requires_grad and not y.is_leaf and y.grad_fn == "oa::matrix::sum"
    y.backward()
    assert_close(x.grad.numpy(), np.broadcast_to([0.5, -2.0], (2, 2)))
    assert_close(w.grad.numpy(), [4.0, 1.0])
    (x * w).sum().backward()  # a second graph adds to the gradients
    assert_close(w.grad.numpy(), [8.0, 2.0])
    w.grad = None
    assert w.grad is None


def test_backward_with_gradient_and_retain_graph():
    x = oa.tensor([1.0, 2.0, 3.0], requires_grad=True)
    y = x * x
    y.backward(oa.tensor([1.0, 0.0, 2.0]), retain_graph=True)
    assert_close(x.grad.numpy(), [2.0, 0.0, 12.0])
    y.backward(oa.tensor([1.0, 1.0, 1.0]))
    assert_close(x.grad.numpy(), [4.0, 4.0, 18.0])
    with pytest.raises(oa.FailedPreconditionError) as e:
        y.backward(oa.tensor([1.0, 1.0, 1.0]))
    assert isinstance(e.value, RuntimeError)


def test_requires_grad_detach_no_grad():
    x = oa.ones(3)
    assert not x.requires_grad
    assert x.requires_grad_() is not None and x.requires_grad
    x.requires_grad = False
    assert not x.requires_grad
    x.requires_grad_(True)
    d = (x * 2).detach()
    assert not d.requires_grad and d.is_leaf
    with oa.no_grad():
        assert not oa.is_grad_enabled()
        with oa.no_grad():
            z = x * 2
        assert not oa.is_grad_enabled()
        assert not z.requires_grad
    assert oa.is_grad_enabled()
    assert (x * 2).requires_grad
    with pytest.raises(oa.InvalidArgumentError):
        oa.tensor([1, 2]).requires_grad_()
    with pytest.raises(oa.InvalidArgumentError):
        (x * 2).requires_grad = False


def test_saved_value_modified_in_place_is_refused():
    # A batch_norm in training updates its running statistics in place; using
    # one as an operand saved for backward afterwards is refused.
    x = oa.tensor(values((2, 2, 2, 2), 1), requires_grad=True)
    mean, var = oa.zeros(2), oa.ones(2)
    y = (x.reshape(8, 2) * mean).sum()
    oa.nn.functional.batch_norm(x, mean, var, training=True)
    with pytest.raises(oa.FailedPreconditionError, match="modified"):
        y.backward()


def test_gradients_of_arithmetic():
    a, b = values((3, 4), 1), values((3, 4), 2, 0.5, 2.0)
    check_gradients(lambda x, y: x * y + x / y - y, lambda x, y: x * y + x / y - y, [a, b])
    m = values((4, 2), 3)
    check_gradients(lambda x, y: x @ y, lambda x, y: x @ y, [a, m])
    check_gradients(lambda x: (x * x).sum(dim=-1), lambda x: (x * x).sum(-1), [a])
