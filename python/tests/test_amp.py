"""Mixed precision from Python: oa.autocast and oa.amp.GradScaler."""
import math

import pytest

import oa
from oa import nn
from oa.nn import functional as F
from reference import assert_close


def test_autocast_policy_nesting_and_gradients():
    x = oa.tensor([[1.0, 2.0], [3.0, -1.0]])
    lin = nn.Linear(2, 3)
    assert lin(x).dtype == oa.float32
    with oa.autocast(oa.float16):
        y = lin(x)
        assert y.dtype == oa.float16
        assert F.log_softmax(y, -1).dtype == oa.float32
        with oa.autocast(oa.bfloat16):
            assert lin(x).dtype == oa.bfloat16
        with oa.autocast(oa.float16, enabled=False):
            assert lin(x).dtype == oa.float32
        loss = (y * y).sum()
    assert loss.dtype == oa.float32
    loss.backward()
    assert lin.weight.grad.dtype == oa.float32
    with pytest.raises(ValueError, match="AutocastGuard"):
        with oa.autocast(oa.int32):
            pass


def test_autocast_takes_torchs_device_type_first():
    lin = nn.Linear(2, 3)
    x = oa.ones(1, 2)
    for args, kwargs, dtype in [(("cuda",), dict(dtype=oa.float16), oa.float16), (("cuda", oa.bfloat16), {}, oa.bfloat16),
                                ((), dict(device_type="cpu", dtype=oa.float16, cache_enabled=False), oa.float16),
                                (("cuda",), {}, oa.float16), (("cpu",), {}, oa.bfloat16),  # torch's default dtypes
                                (("vulkan",), {}, oa.float16), ((), dict(dtype=oa.bfloat16), oa.bfloat16),
                                (("cuda",), dict(dtype=oa.float16, enabled=False), oa.float32),
                                ((oa.float16, False), {}, oa.float32)]:  # oa's own (dtype, enabled) by position
        with oa.autocast(*args, **kwargs):
            assert lin(x).dtype == dtype, (args, kwargs)
    with pytest.raises(ValueError, match="device_type 'mps'.*'cuda', 'cpu' or 'vulkan'"):
        oa.autocast("mps")
    with pytest.raises(TypeError, match="dtype given twice"):
        oa.autocast(oa.float16, dtype=oa.float16)
    with pytest.raises(TypeError, match="device_type"):
        oa.autocast()


def test_grad_scaler_skips_inf_and_backs_off():
    p = nn.Parameter(oa.tensor([1.0, 2.0]))
    opt = oa.optim.SGD([p], lr=0.5)
    scaler = oa.amp.GradScaler(init_scale=8.0, growth_interval=2)
    for g, scale, value in [([1.0, 1.0], 8.0, [0.5, 1.5]), ([math.inf, 1.0], 4.0, [0.5, 1.5]), ([2.0, -2.0], 4.0, [-0.5, 2.5]),
                            ([0.0, 0.0], 8.0, [-0.5, 2.5])]:
        p.grad = None
        scaler.scale((p * oa.tensor(g)).sum()).backward()
        scaler.step(opt)
        scaler.update()
        assert scaler.get_scale() == scale
        assert_close(p.numpy(), value)
    assert scaler.state_dict() == {"scale": 8.0, "_growth_tracker": 0}
    other = oa.amp.GradScaler()
    other.load_state_dict(scaler.state_dict())
    assert other.get_scale() == 8.0
    assert not oa.amp.GradScaler(enabled=False).is_enabled()
