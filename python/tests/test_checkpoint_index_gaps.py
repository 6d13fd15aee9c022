"""torch gaps a user hit, against NumPy: oa.save / oa.load of nested checkpoints (torch.save's dicts, lists, tuples
and scalars), advanced indexing with several index tensors (reading with gradients, and writing), and torch
functions composed in Python."""
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
