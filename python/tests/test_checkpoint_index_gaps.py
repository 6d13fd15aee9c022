"""torch gaps a user hit, against NumPy: oa.save / oa.load of nested checkpoints (torch.save's dicts, lists, tuples
and scalars), advanced indexing with several index tensors (reading with gradients, and writing), and torch
functions composed in Python."""
import io
import json
import math
import struct

import numpy as np
import pytest

import oa
from oa import nn
from reference import check_gradients, values


def test_save_load_nested_checkpoint(tmp_path):
    oa.manual_seed(5)
    model = nn.Linear(3, 2)
    opt = oa.optim.Adam(model.parameters(), lr=0.01)
    model(oa.tensor(values((4, 3), 1))).sum().backward()
    opt.step()
    shared = oa.tensor([1, 2, 3])
    checkpoint = {"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 3, "loss": 0.25,
                  "best": float("inf"), "name": "run", "done": False, "note": None, "ids": [shared, shared, (1, 2.5)],
                  (1, "a"): {7: "seven"}}
    path = tmp_path / "checkpoint.pt"
    oa.save(checkpoint, path, metadata={"who": "test"})
    loaded = oa.load(path)
    assert set(loaded) == set(checkpoint)
    assert loaded["epoch"] == 3 and type(loaded["epoch"]) is int and loaded["done"] is False and loaded["note"] is None
    assert loaded["loss"] == 0.25 and loaded["best"] == math.inf and loaded["name"] == "run"
    assert loaded[(1, "a")] == {7: "seven"}
    assert isinstance(loaded["ids"][2], tuple) and loaded["ids"][2] == (1, 2.5)
    assert loaded["ids"][0] is loaded["ids"][1]  # one tensor, shared as torch.load keeps it
    np.testing.assert_array_equal(loaded["ids"][0].numpy(), [1, 2, 3])
    for name, t in model.state_dict().items():
        np.testing.assert_array_equal(loaded["model"][name].numpy(), t.numpy())
    state = loaded["optimizer"]["state"]
    assert set(state) == {0, 1} and set(state[0]) == {"exp_avg", "exp_avg_sq", "step"}
    np.testing.assert_array_equal(state[1]["exp_avg"].numpy(), opt.state_dict()["state"][1]["exp_avg"].numpy())
    assert loaded["optimizer"]["param_groups"] == opt.state_dict()["param_groups"]
    assert isinstance(loaded["optimizer"]["param_groups"][0]["betas"], tuple)
    # The optimizer resumes from the loaded state as from its own.
    resumed = oa.optim.Adam(model.parameters(), lr=0.01)
    resumed.load_state_dict(loaded["optimizer"])
    assert resumed.state_dict()["param_groups"] == opt.state_dict()["param_groups"]
    assert oa.load_metadata(path)["who"] == "test"
    # The tensors are plain safetensors entries named by their path.
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    assert {"model.weight", "optimizer.state.0.exp_avg", "ids.0"} <= set(json.loads(raw[8:8 + n]))


def test_save_load_plain_and_errors(tmp_path):
    path = tmp_path / "flat.safetensors"
    oa.save({"w": oa.ones(2)}, path)  # a state_dict stays a plain safetensors file, loadable as before
    assert "oa.object" not in oa.load_metadata(path)
    assert list(oa.load(path)) == ["w"]
    oa.save(oa.tensor([1.5, 2.5]), path)
    np.testing.assert_array_equal(oa.load(path, map_location="cpu").numpy(), [1.5, 2.5])
    oa.save([], path)
    assert oa.load(path) == []
    buffer = io.BytesIO()  # a file object, as torch.save and torch.load take
    oa.save({"step": 7, "w": oa.tensor([1, 2])}, buffer)
    buffer.seek(0)
    loaded = oa.load(buffer)
    assert loaded["step"] == 7
    np.testing.assert_array_equal(loaded["w"].numpy(), [1, 2])
    with pytest.raises(TypeError, match=r"oa.save: obj\[a\]\[0\] is a ndarray"):
        oa.save({"a": [np.zeros(2)]}, path)
    with pytest.raises(oa.InvalidArgumentError, match="oa.object"):
        oa.save({"a": 1}, path, metadata={"oa.object": "x"})


X4 = values((4, 5, 3, 2), 7)
ROWS, COLS = np.array([[0, 3, -1], [2, 2, 1]]), np.array([4, 0, 2])


@pytest.mark.parametrize("key", [
    (ROWS, COLS),  # broadcast [2, 3] with [3], at the front
    (slice(None), ROWS, np.array([0, 2, 1])),  # adjacent: the broadcast axes where the indexed ones were
    (ROWS, slice(1, 4), np.array([[1], [0]])),  # apart: the broadcast axes first
    (1, [0, 4], [2, 2], slice(None)),
    (Ellipsis, [1, 0], [0, 1]),
    (np.array([True, False, True, True]), [0, 4, 1]),  # a mask stands for its nonzero coordinates
], ids=str)
def test_several_index_tensors_read_as_numpy(key):
    def oa_key(k):
        return tuple(oa.tensor(e) if isinstance(e, np.ndarray) else e for e in k)

    np.testing.assert_array_equal(oa.tensor(X4)[oa_key(key)].numpy(), X4[key])
    np.testing.assert_array_equal(oa.tensor(X4 * 10, dtype=oa.int32)[oa_key(key)].numpy(), (X4 * 10).astype(np.int32)[key])
    np.testing.assert_array_equal(oa.tensor(X4 > 0)[oa_key(key)].numpy(), (X4 > 0)[key])


def test_several_index_tensors_follow_torch_where_numpy_differs():
    # torch applies ints first: [0, :, i, j] keeps i and j adjacent (NumPy puts their axes first).
    i, j = [1, 2, 2], [0, 1, 0]
    np.testing.assert_array_equal(oa.tensor(X4)[0, :, i, j].numpy(), X4[0][:, i, j])
    assert list(oa.tensor(X4)[0, :, i, j].shape) == [5, 3]


def test_several_index_tensors_gradient():
    rows, cols = np.array([0, 2, 0, 3]), np.array([[1, 1, 1, 0]])  # repeats add up in the gradient
    x = values((4, 2, 3), 8)
    check_gradients(lambda t: t[oa.tensor(rows), :, cols], lambda a: a[rows, :, cols], [x])
    check_gradients(lambda t: t[:, [1, 0], [2, 2]], lambda a: a[:, [1, 0], [2, 2]], [x])


def test_several_index_tensors_write():
    for value in (9.5, values((2,), 2), values((3, 3, 2), 3)):
        want = X4.copy()
        want[ROWS, COLS] = value
        got = oa.tensor(X4)
        got[oa.tensor(ROWS), oa.tensor(COLS)] = value if np.isscalar(value) else oa.tensor(value)
        np.testing.assert_array_equal(got.numpy(), want)
    want = (X4 * 10).astype(np.int32)
    got = oa.tensor(want)
    want[1, :, [0, 2], [1, 0]] = 7
    got[1, :, [0, 2], [1, 0]] = 7
    want[[0, 3], [1, 1]] += 2  # an augmented assignment reads, updates and writes back, as torch
    got[[0, 3], [1, 1]] += 2
    np.testing.assert_array_equal(got.numpy(), want)
    h = oa.tensor(X4, dtype=oa.float16)
    h[[0, 1], [2, 3]] = oa.tensor(values((3, 2), 4), dtype=oa.float16)
    np.testing.assert_array_equal(h.numpy()[[0, 1], [2, 3]], values((3, 2), 4).astype(np.float16)[None].repeat(2, 0))
    # With autograd history: the assigned values' gradient arrives, the overwritten positions' does not.
    v = oa.tensor(values((2,), 5), requires_grad=True)
    y = oa.tensor(values((3, 3), 6)) * 1.0
    y[[0, 2], [1, 1]] = v
    y.sum().backward()
    np.testing.assert_array_equal(v.grad.numpy(), [1, 1])


def test_several_index_tensors_errors():
    x = oa.tensor(X4)
    with pytest.raises(IndexError, match=r"shape mismatch: indexing tensors could not be broadcast together with "
                                         r"shapes \[2\], \[3\]"):
        x[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match="index 5 is out of bounds for axis 1 of extent 5"):
        x[[0, 1], [0, 5]]
    with pytest.raises(oa.InvalidArgumentError, match=r"value of shape \[4\] cannot be broadcast to .* shape \[2, 3, 2\]"):
        x[[0, 1], [0, 4]] = oa.zeros(4)


SPECIAL = np.array([[1.0, np.nan, np.inf], [-np.inf, 0.0, -2.0]], np.float32)


def test_predicates_and_logical_ops():
    x = oa.tensor(SPECIAL)
    np.testing.assert_array_equal(oa.isnan(x).numpy(), np.isnan(SPECIAL))
    np.testing.assert_array_equal(x.isinf().numpy(), np.isinf(SPECIAL))
    np.testing.assert_array_equal(oa.isfinite(x).numpy(), np.isfinite(SPECIAL))
    np.testing.assert_array_equal(oa.isfinite(oa.tensor([1, 2])).numpy(), [True, True])
    np.testing.assert_array_equal(oa.isclose(x, x, equal_nan=True).numpy(), np.isclose(SPECIAL, SPECIAL, equal_nan=True))
    a = values((3, 4), 1)
    assert oa.allclose(oa.tensor(a), oa.tensor(a * (1 + 1e-6))) and not oa.allclose(oa.tensor(a), oa.tensor(a + 1e-3))
    assert not oa.allclose(x, x) and oa.allclose(x, x, equal_nan=True)
    assert oa.equal(oa.tensor(a), oa.tensor(a)) and not oa.equal(oa.tensor(a), oa.tensor(a[:2]))
    assert not oa.tensor(a).equal(oa.tensor(a) + 1)
    b = values((3, 4), 2)
    for name in ("and", "or", "xor"):
        got = getattr(oa, f"logical_{name}")(oa.tensor(a > 0), oa.tensor(b))
        np.testing.assert_array_equal(got.numpy(), getattr(np, f"logical_{name}")(a > 0, b))
    np.testing.assert_array_equal(oa.tensor(b).logical_not().numpy(), np.logical_not(b))
    assert oa.count_nonzero(oa.tensor(SPECIAL)).item() == 5
    np.testing.assert_array_equal(oa.tensor(SPECIAL).count_nonzero(1).numpy(), [3, 2])


def test_broadcasting_and_meshgrid():
    a = values((3, 1), 1)
    np.testing.assert_array_equal(oa.broadcast_to(oa.tensor(a), (2, 3, 4)).numpy(), np.broadcast_to(a, (2, 3, 4)))
    np.testing.assert_array_equal(oa.tensor(a).broadcast_to((-1, 2)).numpy(), np.broadcast_to(a, (3, 2)))
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.broadcast_to: input of shape \[3, 1\] cannot be broadcast "
                                                      r"to size \[2, 4\]"):
        oa.broadcast_to(oa.tensor(a), (2, 4))
    got = oa.broadcast_tensors(oa.tensor(a), oa.ones(4))
    assert [list(t.shape) for t in got] == [[3, 4], [3, 4]]
    with pytest.raises(oa.InvalidArgumentError, match=r"shapes \[3, 1\], \[2, 4\] cannot be broadcast"):
        oa.broadcast_tensors(oa.tensor(a), oa.ones(2, 4))
    u, v = values((2,), 3), values((3,), 4)
    for indexing in ("ij", "xy"):
        for got, want in zip(oa.meshgrid(oa.tensor(u), oa.tensor(v), indexing=indexing),
                             np.meshgrid(u, v, indexing=indexing)):
            np.testing.assert_array_equal(got.numpy(), want)
    check_gradients(lambda s, t: oa.meshgrid(s, t)[0] * oa.meshgrid(s, t)[1],
                    lambda s, t: np.multiply(*np.meshgrid(s, t, indexing="ij")), [u, v])


def test_rearrangements_match_numpy_with_gradients():
    x = values((3, 4), 5)
    check_gradients(lambda t: oa.roll(t, 2), lambda a: np.roll(a, 2), [x])
    check_gradients(lambda t: t.roll((1, -1), (0, 1)), lambda a: np.roll(a, (1, -1), (0, 1)), [x])
    for k in (0, 1, -2):
        check_gradients(lambda t: oa.diag(t, k), lambda a: np.diag(a, k), [x])
        check_gradients(lambda t: t.diag(k), lambda a: np.diag(a, k), [x[0]])
    check_gradients(lambda s, t: oa.outer(s, t), np.outer, [x[0], x[1]])
    check_gradients(lambda t: oa.repeat_interleave(t, 2), lambda a: np.repeat(a, 2), [x])
    check_gradients(lambda t: t.repeat_interleave(oa.tensor([0, 2, 1]), dim=0), lambda a: np.repeat(a, [0, 2, 1], 0),
                    [x])
    with pytest.raises(oa.InvalidArgumentError, match="2 repeats for input of shape \\[3, 4\\] along dim 0"):
        oa.repeat_interleave(oa.tensor(x), [1, 2], dim=0)
    check_gradients(lambda t: oa.cumprod(t, 1), lambda a: np.cumprod(a, 1), [x])
    z = np.array([[2.0, 0.0, 3.0, -1.5, 0.5]], np.float32)  # a zero: its gradient as torch's, not NaN
    check_gradients(lambda t: t.cumprod(-1), lambda a: np.cumprod(a, -1), [z])
    np.testing.assert_array_equal(oa.cumprod(oa.tensor([[1, 2, 3], [-1, 4, 0]]), 1).numpy(), [[1, 2, 6], [-1, -4, 0]])
    check_gradients(lambda s, t: oa.lerp(s, t, 0.25), lambda a, b: a + 0.25 * (b - a), [x, x[::-1].copy()])
    check_gradients(lambda s, t: oa.mm(s, t), np.matmul, [x, x.T.copy()])
    check_gradients(lambda t: t.trace().reshape([1]), lambda a: np.trace(a).reshape(1), [x])
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.mm: input \[3, 4\] and mat2 \[3, 4\] cannot be multiplied"):
        oa.mm(oa.tensor(x), oa.tensor(x))
    np.testing.assert_array_equal(oa.hstack([oa.tensor(x), oa.tensor(x)]).numpy(), np.hstack([x, x]))
    np.testing.assert_array_equal(oa.vstack([oa.tensor(x[0]), oa.tensor(x)]).numpy(), np.vstack([x[0], x]))
    np.testing.assert_array_equal(oa.concat([oa.tensor(x), oa.tensor(x)], 1).numpy(), np.concatenate([x, x], 1))
    np.testing.assert_array_equal(oa.tensor(x).clip(-0.5, 0.5).numpy(), np.clip(x, -0.5, 0.5))
    clipped = oa.tensor(x)
    clipped.clip_(max=0.25)
    np.testing.assert_array_equal(clipped.numpy(), np.minimum(x, np.float32(0.25)))
    np.testing.assert_array_equal(oa.clamp_min(oa.tensor(x), 0.1).numpy(), np.maximum(x, np.float32(0.1)))
    np.testing.assert_array_equal(oa.tensor(x).clamp_max(0.1).numpy(), np.minimum(x, np.float32(0.1)))


def test_scatter_and_index_add():
    x, src = values((3, 4), 6), values((2, 4), 7)
    index = np.array([[2, 0, 1, 2], [0, 1, 2, 1]])
    want = x.copy()
    for i in range(2):
        for j in range(4):
            want[index[i, j], j] = src[i, j]
    check_gradients(lambda t, s: oa.scatter(t, 0, oa.tensor(index), s), lambda t, s: np.where(
        np.isin(np.arange(12).reshape(3, 4), index * 4 + np.arange(4)), 0, t) + scatter_reference(t, s, index),
        [x, src])
    got = oa.tensor(x)
    got.scatter_(0, oa.tensor(index), oa.tensor(src))
    np.testing.assert_array_equal(got.numpy(), want)
    filled = oa.tensor(x).scatter(1, oa.tensor([[0], [3], [1]]), value=5.0).numpy()
    np.testing.assert_array_equal(filled[[0, 1, 2], [0, 3, 1]], [5, 5, 5])
    with pytest.raises(IndexError, match="oa.scatter: index 4 is out of bounds for dimension 1 with size 4"):
        oa.scatter(oa.tensor(x), 1, oa.tensor([[4]]), value=1.0)
    # Negative indices are refused, as torch's scatter does (gather and scatter_add too), not counted from the end.
    with pytest.raises(IndexError, match="oa.scatter: index -1 is out of bounds for dimension 0 with size 3"):
        oa.tensor(x).scatter(0, oa.tensor([[-1, 0, 0, 0]]), -oa.ones(3, 4))
    with pytest.raises(IndexError, match="oa.scatter_reduce: index -1 is out of bounds for dimension 0 with size 3"):
        oa.tensor(x).scatter(0, oa.tensor([[-1, 0, 0, 0]]), -oa.ones(3, 4), reduce="add")
    with pytest.raises(oa.InvalidArgumentError, match="oa.scatter: index must be int32 .* not float32"):
        oa.tensor(x).scatter(0, oa.tensor([[0.0]]), value=1.0)
    added = oa.tensor(x)
    added.scatter_add_(0, oa.tensor(index), oa.tensor(src))
    want = x.copy()
    np.add.at(want, (index, np.arange(4)[None].repeat(2, 0)), src)
    np.testing.assert_allclose(added.numpy(), want, rtol=1e-6)
    rows = values((3, 4), 8)
    want = x.copy()
    np.add.at(want, [2, 0, 2], 2 * rows)
    check_gradients(lambda t, r: oa.index_add(t, 0, oa.tensor([2, 0, 2]), r, alpha=2),
                    lambda t, r: t + np.stack([2 * r[1], 0 * r[0], 2 * (r[0] + r[2])]), [x, rows])
    got = oa.tensor(x)
    got.index_add_(0, oa.tensor([2, 0, 2]), oa.tensor(rows), alpha=2)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)


def scatter_reference(t, s, index):
    """oa.scatter's written values along dim 0 (no repeated targets), zeros elsewhere."""
    out = np.zeros_like(t)
    for i in range(index.shape[0]):
        for j in range(index.shape[1]):
            out[index[i, j], j] = s[i, j]
    return out


def test_creation_and_tensor_methods():
    x = oa.tensor(values((2, 3), 9))
    assert list(oa.rand_like(x).shape) == [2, 3] and oa.randn_like(x, dtype=oa.float16).dtype == oa.float16
    assert list(oa.empty(2, 3).shape) == [2, 3] and oa.empty((4,), dtype=oa.int32).dtype == oa.int32
    assert oa.as_tensor(x) is x and oa.as_tensor(x, dtype=oa.float16).dtype == oa.float16
    np.testing.assert_array_equal(oa.as_tensor([1, 2]).numpy(), [1, 2])
    h = oa.ones(2, dtype=oa.float16)
    assert h.new_zeros(3).dtype == oa.float16 and list(h.new_ones((2, 2)).shape) == [2, 2]
    np.testing.assert_array_equal(h.new_full((2,), 3).numpy(), [3, 3])
    assert h.new_tensor([1, 2]).dtype == oa.float16 and h.new_empty(1, dtype=oa.int32).dtype == oa.int32
    assert x.type() == "oa.FloatTensor" and oa.tensor([1]).type() == "oa.IntTensor"
    assert x.type(oa.float16).dtype == oa.float16 and x.type("torch.BFloat16Tensor").dtype == oa.bfloat16
    with pytest.raises(TypeError, match="'torch.DoubleTensor' is not a tensor type of oa"):
        x.type("torch.DoubleTensor")
    with pytest.raises(oa.UnsupportedError, match="oa.Tensor.double: oa has no float64 dtype"):
        x.double()
    with pytest.raises(oa.UnsupportedError, match="oa.Tensor.cpu: oa has no CPU device"):
        x.cpu()
    assert x.is_contiguous() and x.t().is_contiguous()
    p = nn.Parameter(oa.ones(3))
    d = p.data
    assert d.grad_fn is None and not d.requires_grad
    d.mul_(2)  # shares p's storage, as torch's .data
    np.testing.assert_array_equal(p.numpy(), [2, 2, 2])
    p.data = oa.tensor([1.0, 2.0, 3.0])  # copied in, no autograd (p is a leaf that requires grad)
    np.testing.assert_array_equal(p.numpy(), [1, 2, 3])
    with pytest.raises(oa.UnsupportedError, match=r"oa.Tensor.data: assigning float32 \[2\] to a tensor of float32 \[3\]"):
        p.data = oa.ones(2)
