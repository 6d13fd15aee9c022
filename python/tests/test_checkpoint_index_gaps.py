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
