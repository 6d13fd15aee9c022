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


def test_backward_refuses_create_graph():
    x = oa.tensor([1.0, 2.0], requires_grad=True)
    y = (x * x).sum()
    with pytest.raises(NotImplementedError, match="create_graph=True.*higher-order gradients"):
        y.backward(create_graph=True)
    y.backward(create_graph=False)
    assert_close(x.grad.numpy(), [2.0, 4.0])


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


@pytest.mark.parametrize("shapes", [
    ((2, 1, 3, 4), (5, 4, 6)), ((1, 3, 4), (2, 4, 5)), ((3, 1, 2, 3), (2, 3, 2)),
    ((4,), (4,)), ((3,), (2, 3, 5)), ((2, 3, 4), (4,)), ((3,), (3, 2)),
], ids=str)
def test_matmul_broadcasts_as_torch(shapes):
    # NumPy's matmul has torch.matmul's semantics: 1-D operands and broadcast batch extents.
    a, b = values(shapes[0], 5), values(shapes[1], 6)
    check_gradients(lambda x, y: x @ y, np.matmul, [a, b])
    assert oa.matmul(oa.tensor(a), oa.tensor(b)).shape == np.matmul(a, b).shape
    assert_close(oa.tensor(a).matmul(oa.tensor(b)).numpy(), np.matmul(a.astype(np.float64), b))


def test_matmul_errors_name_both_shapes():
    with pytest.raises(oa.InvalidArgumentError, match=r"batch extents of a \[2, 2, 3\].*b \[3, 3, 2\]"):
        oa.ones(2, 2, 3) @ oa.ones(3, 3, 2)
    with pytest.raises(oa.InvalidArgumentError, match=r"a \[4\] has K = 4 but b \[3\] has K = 3"):
        oa.ones(4) @ oa.ones(3)


def test_in_place_ops_write_the_tensor_itself():
    x = oa.tensor([1.0, 2.0, 3.0])
    alias, view = x, x.reshape(3, 1)
    x += 1
    assert x is alias
    x -= oa.tensor([0.5, 0.5, 0.5])
    x *= 2
    x /= oa.tensor(4.0)
    want = ((np.array([1.0, 2.0, 3.0]) + 1 - 0.5) * 2) / 4
    np.testing.assert_allclose(x.numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(view.numpy().ravel(), want, rtol=1e-6)  # views share the storage
    assert x.add_(1) is x and x.mul_(oa.tensor([1.0, 0.0, 2.0])) is x and x.sub_(0.5) is x and x.div_(2) is x
    want = ((want + 1) * [1, 0, 2] - 0.5) / 2
    np.testing.assert_allclose(x.numpy(), want, rtol=1e-6)
    assert x.fill_(7) is x
    np.testing.assert_array_equal(x.numpy(), [7, 7, 7])
    x.zero_()
    np.testing.assert_array_equal(x.numpy(), [0, 0, 0])
    y = oa.zeros(2, 3)
    y.copy_(oa.tensor([1.0, 2.0, 3.0]))  # broadcast, as torch
    np.testing.assert_array_equal(y.numpy(), [[1, 2, 3], [1, 2, 3]])
    h = oa.zeros(2, dtype=oa.float16)
    h.copy_(oa.tensor([0.1, 65504.0]))  # cast to the tensor's dtype
    np.testing.assert_array_equal(h.numpy(), np.array([0.1, 65504.0], dtype=np.float16))
    with pytest.raises(oa.InvalidArgumentError, match="shape"):
        x += oa.zeros(2, 3)
    with pytest.raises(TypeError):
        x += "a"


# oa's slicing/indexing, transpose, permute, mT, T, expand, split and chunk
# return copies, not torch's views: an in-place op on one would silently miss
# the tensor it was taken from, so it raises, naming the op and the way out.
COPIES = {
    "x[1:3]": lambda x: x[1:3],
    "x[0]": lambda x: x[0],
    "x[::2]": lambda x: x[::2],
    "x[idx]": lambda x: x[oa.tensor([0, 2])],
    "x[list]": lambda x: x[[1, 0]],
    "x[mask]": lambda x: x[oa.tensor([True, False, True, False])],
    "x[:, 1]": lambda x: x[:, 1],
    "transpose": lambda x: x.transpose(0, 1),
    "permute": lambda x: x.permute(1, 0),
    "mT": lambda x: x.mT,
    "T": lambda x: x.T,
    "expand": lambda x: x[None].expand(2, 4, 3),
    "chunk": lambda x: x.chunk(2)[0],
    "oa.chunk": lambda x: oa.chunk(x, 2)[1],
    "split": lambda x: x.split(1)[0],
    "oa.split": lambda x: oa.split(x, [1, 3])[1],
    "reshape of a copy": lambda x: x[1:3].reshape(-1),
    "x[:] of a copy": lambda x: x.mT[:],
}
IN_PLACE = {
    "add_": lambda t: t.add_(1),
    "sub_": lambda t: t.sub_(oa.ones(1)),
    "mul_": lambda t: t.mul_(2),
    "div_": lambda t: t.div_(2),
    "pow_": lambda t: t.pow_(2),
    "fill_": lambda t: t.fill_(5),
    "zero_": lambda t: t.zero_(),
    "copy_": lambda t: t.copy_(oa.ones(1)),
    "x[key] = v": lambda t: t.__setitem__(0, 1.0),
}


@pytest.mark.parametrize("make", COPIES.values(), ids=COPIES.keys())
@pytest.mark.parametrize("write", IN_PLACE.values(), ids=IN_PLACE.keys())
def test_in_place_on_a_copy_made_by_a_torch_view_op_raises(make, write):
    x = oa.tensor(np.arange(12, dtype=np.float32).reshape(4, 3))
    t = make(x)
    with pytest.raises(oa.FailedPreconditionError, match="a copy, not a view") as e:
        write(t)
    assert isinstance(e.value, RuntimeError) and "oa.Tensor." in str(e.value) and "x[i, j] = v" in str(e.value)
    np.testing.assert_array_equal(x.numpy(), np.arange(12).reshape(4, 3))


def test_augmented_assignment_on_a_copy_raises_naming_the_operator():
    x = oa.zeros(5)
    s = x[1:3]
    for op, dunder in (("+=", "iadd"), ("-=", "isub"), ("*=", "imul"), ("/=", "itruediv"), ("**=", "ipow")):
        with pytest.raises(oa.FailedPreconditionError) as e:
            exec(f"s {op} 1", {}, {"s": s})
        assert str(e.value).startswith(f"{op} (oa.Tensor.__{dunder}__): this tensor was made by oa.Tensor.__getitem__")
    np.testing.assert_array_equal(x.numpy(), np.zeros(5))


@pytest.mark.parametrize("make", COPIES.values(), ids=COPIES.keys())
def test_a_copy_keeps_refusing_in_place_ops_after_a_parameter_is_made_from_it(make):
    start = np.arange(12, dtype=np.float32).reshape(4, 3)
    x = oa.tensor(start)
    t = make(x)
    before = t.numpy()
    p = oa.nn.Parameter(t)
    with pytest.raises(oa.FailedPreconditionError, match="a copy, not a view"):
        t.add_(100)
    # The Parameter owns a copy of t, which optimizers may update in place.
    with oa.no_grad():
        p.add_(1)
    np.testing.assert_array_equal(p.numpy(), before + 1)
    np.testing.assert_array_equal(t.numpy(), before)
    np.testing.assert_array_equal(x.numpy(), start)


def test_a_parameter_of_a_reshaped_copy_leaves_the_copy_refusing():
    x = oa.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    s = x.mT
    p = oa.nn.Parameter(s.reshape(6))
    with pytest.raises(oa.FailedPreconditionError, match="oa.Tensor.mul_: this tensor was made by oa.Tensor.mT"):
        s.mul_(0)
    np.testing.assert_array_equal(s.numpy(), np.arange(6).reshape(2, 3).T)
    np.testing.assert_array_equal(p.numpy(), np.arange(6).reshape(2, 3).T.reshape(6))
    # A Parameter of a tensor that is not such a copy shares its storage, as in torch.
    t = oa.zeros(3)
    q = oa.nn.Parameter(t)
    with oa.no_grad():
        q.add_(1)
    np.testing.assert_array_equal(t.numpy(), [1, 1, 1])


def test_pow_in_place_is_seen_by_views_and_keeps_parameters():
    x = oa.tensor([[1.0, 2.0], [3.0, 4.0]])
    alias, flat = x, x.view(4)
    x **= 2
    assert x is alias
    np.testing.assert_array_equal(flat.numpy(), [1, 4, 9, 16])
    x.pow_(oa.tensor([0.5, 1.0]))
    assert_close(flat.numpy(), [1, 4, 3, 16])
    m = oa.nn.Linear(2, 2)
    w, before = m.weight, m.weight.numpy()
    with oa.no_grad():
        m.weight **= 2
    assert m.weight is w and list(m.state_dict()) == ["weight", "bias"] and any(p is w for p in m.parameters())
    assert_close(m.weight.numpy(), before**2)
    with pytest.raises(oa.FailedPreconditionError, match=r"\*\*= \(oa.Tensor.__ipow__\): a leaf Variable"):
        m.weight **= 2


def test_augmented_assignments_without_an_oa_op_raise_type_error():
    x = oa.ones(2)
    for op in ("<<=", ">>="):
        with pytest.raises(TypeError):
            exec(f"x {op} 1", {}, {"x": x})
    for op in ("&=", "|=", "^="):  # bitwise ops take int32 or bool, as torch's
        with pytest.raises(oa.InvalidArgumentError, match="takes int32 or bool operands"):
            exec(f"x {op} 1", {}, {"x": x})
    np.testing.assert_array_equal(x.numpy(), [1, 1])


def test_add_and_sub_with_alpha():
    x, y = oa.tensor([1.0, 2.0]), oa.tensor([10.0, 20.0])
    np.testing.assert_array_equal(x.add(y, alpha=2).numpy(), [21, 42])
    np.testing.assert_array_equal(oa.sub(x, y, alpha=0.5).numpy(), [-4, -8])
    np.testing.assert_array_equal(oa.add(x, 3.0, alpha=2).numpy(), [7, 8])
    x.sub_(y, alpha=0.1).add_(1.0, alpha=-2)
    assert_close(x.numpy(), [-2.0, -2.0])
    p = oa.nn.Parameter(oa.tensor([1.0, 2.0]))
    (p * p).sum().backward()
    with oa.no_grad():
        p.add_(p.grad, alpha=-0.25)  # torch's optimizer step
    assert_close(p.numpy(), [0.5, 1.0])


def test_assigning_grad():
    p = oa.nn.Parameter(oa.ones(2))
    (p * 3).sum().backward()
    g = p.grad
    p.grad += 1  # in place; Python then assigns the same gradient back
    np.testing.assert_array_equal(p.grad.numpy(), [4, 4])
    np.testing.assert_array_equal(g.numpy(), [4, 4])
    p.grad = oa.full((2,), 7.0)
    np.testing.assert_array_equal(p.grad.numpy(), [7, 7])
    (p * 3).sum().backward()
    np.testing.assert_array_equal(p.grad.numpy(), [10, 10])
    with pytest.raises(ValueError, match="does not match"):
        p.grad = oa.ones(3)
    with pytest.raises(ValueError, match="does not match"):
        p.grad += oa.ones(3, 2)  # broadcast to [3, 2]: refused before any write
    with pytest.raises(TypeError, match="Tensor or None"):
        p.grad = 5
    np.testing.assert_array_equal(p.grad.numpy(), [10, 10])
    p.grad = None
    assert p.grad is None


def test_in_place_on_storage_sharing_views_is_seen_by_both():
    x = oa.zeros(2, 3)
    for view in (x.reshape(6), x.view(3, 2), x.flatten(), x[None].squeeze(0), x.unsqueeze(0), x[:], x[...], x.detach()):
        view.add_(1)
    np.testing.assert_array_equal(x.numpy(), np.full((2, 3), 8.0))
    v = x.reshape(6)
    x.mul_(2)
    np.testing.assert_array_equal(v.numpy(), np.full(6, 16.0))
    y = x[1:2] + 0  # out of place: a tensor of its own, free to write
    y.add_(1)
    np.testing.assert_array_equal(y.numpy(), np.full((1, 3), 17.0))
    p = oa.nn.Parameter(oa.ones(3, 2).mT)  # a Parameter of a copy owns a copy of it
    with oa.no_grad():
        p.zero_()
    np.testing.assert_array_equal(p.numpy(), np.zeros((2, 3)))


def test_zeroing_a_row_of_a_parameter_through_an_index_raises():
    m = oa.nn.Linear(3, 2)
    before = m.weight.numpy()
    with oa.no_grad():
        with pytest.raises(oa.FailedPreconditionError, match="oa.Tensor.zero_.*__getitem__"):
            m.weight[0].zero_()
        with pytest.raises(oa.FailedPreconditionError, match="oa.Tensor.fill_"):
            m.bias[0:1].fill_(5.0)
        # The way that works: rebuild the whole value and write it in place.
        row0 = oa.tensor([[True], [False]])
        m.weight.copy_(oa.where(row0, oa.zeros(2, 3), m.weight))
    np.testing.assert_array_equal(m.weight.numpy()[0], np.zeros(3))
    np.testing.assert_array_equal(m.weight.numpy()[1], before[1])


def test_in_place_on_parameter_under_no_grad():
    m = oa.nn.Linear(2, 3)
    w = m.weight
    before = w.numpy()
    with oa.no_grad():
        w += 1
        m.bias.zero_()
    assert m.weight is w and isinstance(m.weight, oa.nn.Parameter) and "weight" in dict(m.named_parameters())
    np.testing.assert_allclose(m.weight.numpy(), before + 1, rtol=1e-6)
    np.testing.assert_array_equal(m.bias.numpy(), np.zeros(3, np.float32))
    assert w.is_leaf and w.requires_grad
    with oa.no_grad():
        m.weight += 1  # sets m.weight again: the same Parameter, in its place
    assert m.weight is w and list(m.state_dict()) == ["weight", "bias"]
    np.testing.assert_allclose(m.weight.numpy(), before + 2, rtol=1e-6)
    with pytest.raises(RuntimeError, match="leaf Variable"):
        m.weight *= 2


def test_in_place_refusals_with_grad():
    w = oa.ones(3, requires_grad=True)
    with pytest.raises(oa.FailedPreconditionError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        w += 1
    with pytest.raises(RuntimeError, match="leaf Variable"):
        w.mul_(2)
    assert w.is_leaf
    np.testing.assert_array_equal(w.numpy(), [1, 1, 1])
    # With history the op is recorded, as torch (tests/test_augmented_assignment.py),
    # unless a view shares the storage: it would keep the old history.
    h = w * 2
    view = h.view(1, 3)
    with pytest.raises(oa.FailedPreconditionError, match="x = x \\+ y"):
        h += 1
    np.testing.assert_array_equal(view.numpy(), [[2, 2, 2]])


def test_in_place_after_save_for_backward_is_refused():
    x = oa.tensor([1.0, 2.0])
    w = oa.tensor([3.0, 4.0], requires_grad=True)
    y = (x * w).sum()  # mul saves x for w's gradient
    x += 1
    with pytest.raises(oa.FailedPreconditionError, match="version|modified"):
        y.backward()
