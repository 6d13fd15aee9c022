"""torch.nn.init: fill a tensor in place (without autograd history) and return it. The random ones draw from the
stream that oa.manual_seed restarts, as oa.rand and oa.randn without seed=."""
import math

from .. import _oa
from .._grad_mode import no_grad


def _fill(tensor, value):
    with no_grad():
        return tensor.copy_(value)


def _draw(tensor, draw):
    return draw(list(tensor.shape), dtype=tensor.dtype, engine=tensor.engine)


def uniform_(tensor, a=0.0, b=1.0):
    """U(a, b)."""
    return _fill(tensor, _draw(tensor, _oa.rand) * (b - a) + a)


def normal_(tensor, mean=0.0, std=1.0):
    """N(mean, std^2)."""
    return _fill(tensor, _draw(tensor, _oa.randn) * std + mean)


def constant_(tensor, val):
    with no_grad():
        return tensor.fill_(val)


def zeros_(tensor):
    return constant_(tensor, 0.0)


def ones_(tensor):
    return constant_(tensor, 1.0)


def _fans(tensor, op):
    """torch's (fan_in, fan_out) of a weight [out, in, *kernel]; ValueError for fewer than 2 dims, as torch."""
    if tensor.dim() < 2:
        raise ValueError(f"oa.nn.init.{op}: Fan in and fan out can not be computed for tensor with fewer than 2 "
                         f"dimensions (shape {list(tensor.shape)})")
    field = math.prod(tensor.shape[2:])
    return tensor.shape[1] * field, tensor.shape[0] * field


def calculate_gain(nonlinearity, param=None):
    """torch.nn.init.calculate_gain for linear / conv / sigmoid (1), tanh (5/3), relu (sqrt 2), leaky_relu
    (sqrt(2 / (1 + slope^2)), slope 0.01 by default) and selu (3/4)."""
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope ** 2))
    if nonlinearity == "selu":
        return 3.0 / 4
    if nonlinearity in ("linear", "sigmoid", "conv1d", "conv2d", "conv3d", "conv_transpose1d", "conv_transpose2d",
                        "conv_transpose3d"):
        return 1.0
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def xavier_uniform_(tensor, gain=1.0):
    fan_in, fan_out = _fans(tensor, "xavier_uniform_")
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out))
    return uniform_(tensor, -bound, bound)


def xavier_normal_(tensor, gain=1.0):
    fan_in, fan_out = _fans(tensor, "xavier_normal_")
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)))


def _kaiming_std(tensor, a, mode, nonlinearity, op):
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"oa.nn.init.{op}: Mode {mode} not supported, please use one of fan_in, fan_out")
    fan_in, fan_out = _fans(tensor, op)
    return calculate_gain(nonlinearity, a) / math.sqrt(fan_in if mode == "fan_in" else fan_out)


def kaiming_uniform_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity, "kaiming_uniform_")
    return uniform_(tensor, -bound, bound)


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity, "kaiming_normal_"))
