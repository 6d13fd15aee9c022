"""torch.nn.utils: clip_grad_norm_ and clip_grad_value_ over oa's gradients."""
import math

from .. import _oa
from .._grad_mode import no_grad
from ..optim import clip_grad_norm_ as _clip_grad_norm


def _parameters(parameters):
    return [parameters] if isinstance(parameters, _oa.Tensor) else list(parameters)


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """torch.nn.utils.clip_grad_norm_: scales the gradients of parameters (a tensor or an iterable of them) in place
    to a global L2 norm <= max_norm (oa.optim.clip_grad_norm_); returns the norm before clipping, a float32 0-d
    tensor. foreach is accepted and selects nothing. error_if_nonfinite reads the norm back (a synchronization)
    and raises RuntimeError, as torch, when it is NaN or infinite. Errors: oa.InvalidArgumentError for a norm_type
    other than 2 (not supported)."""
    if norm_type != 2:
        raise _oa.InvalidArgumentError(f"oa.nn.utils.clip_grad_norm_: norm_type {norm_type!r}: only 2.0 (L2) is "
                                       "supported")
    norm = _clip_grad_norm(_parameters(parameters), max_norm)
    if error_if_nonfinite and not math.isfinite(norm.item()):
        raise RuntimeError(f"The total norm of order {float(norm_type)} for gradients from `parameters` is "
                           "non-finite, so it cannot be clipped. To disable this error and scale the gradients by "
                           "the non-finite norm anyway, set `error_if_nonfinite=False`")
    return norm


def clip_grad_value_(parameters, clip_value, foreach=None):
    """torch.nn.utils.clip_grad_value_: clamps each gradient of parameters (a tensor or an iterable of them) to
    [-clip_value, clip_value] in place; foreach is accepted and selects nothing."""
    with no_grad():
        for p in _parameters(parameters):
            if p.grad is not None:
                p.grad.clamp_(-clip_value, clip_value)
