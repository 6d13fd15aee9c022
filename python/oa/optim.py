"""oa.optim: torch.optim's SGD, Adam and AdamW over oa's C++ optimizers (oa/ml/optim.hpp).

Each step is one fused kernel per parameter on the device (no host round trip).
The parameters are tensors (a module's parameters(), or any float32 leaf with
requires_grad=True, as torch takes), or one param group {'params': [...], 'lr': ..., ...} whose keys override the
keyword arguments (oa's optimizers hold one set of hyperparameters: several
groups raise TypeError; make one optimizer per group).
warmup_cosine_lr(step, base_lr, warmup_steps, total_steps, min_lr) is the
schedule `oa train` uses; assign its value to optimizer.lr before each step.
oa.optim.lr_scheduler has torch's schedulers (StepLR, CosineAnnealingLR, ...).
state_dict() and load_state_dict() take torch's structure
({'state': {i: {...}}, 'param_groups': [{...}]}), and load torch's own.
optimizer.param_groups is torch's list of one group: group['lr'] reads and
sets optimizer.lr (as torch's schedulers do); the other keys read the
hyperparameters, fixed at construction.
"""
from collections.abc import MutableMapping
import sys

import numpy as np

from ._oa import optim as _c
from ._oa.optim import Optimizer, clip_grad_norm_, warmup_cosine_lr
from .nn.modules import zero_grads
from . import _lr_scheduler as lr_scheduler

# `from oa.optim.lr_scheduler import StepLR` as from torch.optim.lr_scheduler.
sys.modules[__name__ + ".lr_scheduler"] = lr_scheduler

__all__ = ["Adam", "AdamW", "Optimizer", "SGD", "clip_grad_norm_", "lr_scheduler", "warmup_cosine_lr"]


def _one_group(name, params, options):
    """The parameters and options of torch's `params` argument: tensors, or one param group dict whose keys
    (besides 'params') override `options`. Raises TypeError for several groups, a group without 'params' or with
    a key that is no option, and a single tensor (as torch)."""
    if hasattr(params, "shape"):
        raise TypeError(f"{name}: params must be an iterable of tensors or one param group dict, not a tensor")
    params = list(params)
    if not any(isinstance(p, dict) for p in params):
        return params, options
    if len(params) != 1:
        raise TypeError(f"{name}: {len(params)} param groups given; oa's optimizers hold one set of hyperparameters: "
                        "pass the parameters, or one group {'params': [...], 'lr': ..., ...}, and make one optimizer "
                        "per group")
    group = dict(params[0])
    if "params" not in group:
        raise TypeError(f"{name}: a param group needs the key 'params'")
    unknown = sorted(set(group) - set(options) - {"params"})
    if unknown:
        raise TypeError(f"{name}: param group key(s) {unknown} are not options of {name} ({', '.join(options)})")
    tensors = group.pop("params")
    return ([tensors] if hasattr(tensors, "shape") else list(tensors)), {**options, **group}


class _ParamGroup(MutableMapping):
    """torch's param group dict over an oa optimizer. 'lr' is optimizer.lr (read and set); 'params' (the tensors as
    given) and the other hyperparameters are fixed at construction: setting one to another value raises ValueError,
    deleting one TypeError. Values read back as given (oa computes with their float32 roundings). Other keys (a
    scheduler's 'initial_lr', a user's own) are stored with the group, as in a torch group."""

    def __init__(self, optimizer):
        self._optimizer = optimizer
        self._given = optimizer._group_given  # 'params', the constructor's options as given, and added keys

    def _fixed(self):
        return self._optimizer._hyperparameters()

    def __getitem__(self, key):
        if key == "lr":
            lr = self._optimizer.lr
            return self._given["lr"] if np.float32(self._given["lr"]) == np.float32(lr) else lr
        if key in self._given:
            return self._given[key]
        return self._fixed()[key]

    def __setitem__(self, key, value):
        if key == "lr":
            if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
                raise TypeError(f"{type(self._optimizer).__name__}.param_groups: 'lr' must be a number, not "
                                f"{type(value).__name__}")
            self._optimizer.lr = value
            self._given["lr"] = value
            return
        if key not in self._fixed() and key != "params":
            self._given[key] = value
            return
        current = self[key]
        if key == "params":
            same = [id(p) for p in value] == [id(p) for p in current]
        elif isinstance(current, (bool, str)) or current is None:
            same = value == current
        else:  # oa keeps float32 hyperparameters
            same = np.array_equal(np.asarray(value, np.float32), np.asarray(current, np.float32))
        if not same:
            raise ValueError(f"{type(self._optimizer).__name__}.param_groups: '{key}' is fixed at construction in oa "
                             f"(only 'lr' changes); make a new optimizer with {key}={value!r}")

    def __delitem__(self, key):
        if key in ("lr", "params") or key in self._fixed():
            raise TypeError(f"{type(self._optimizer).__name__}.param_groups: '{key}' cannot be deleted")
        del self._given[key]

    def __iter__(self):
        return iter({"params": None, "lr": None, **self._fixed(), **self._given})

    def __len__(self):
        return sum(1 for _ in self)

    def __repr__(self):
        return repr(dict(self))


class SGD(_c.SGD):
    __doc__ = _c.SGD.__doc__ + " params: tensors or one param group (see oa.optim)."

    def __init__(self, params, lr=1e-3, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False):
        params, options = _one_group("oa.optim.SGD", params, dict(lr=lr, momentum=momentum, dampening=dampening,
                                                                  weight_decay=weight_decay, nesterov=nesterov))
        super().__init__(params, **options)
        self._group_given = {"params": params, **options}


class Adam(_c.Adam):
    __doc__ = _c.Adam.__doc__ + " params: tensors or one param group (see oa.optim)."

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False):
        params, options = _one_group("oa.optim.Adam", params, dict(lr=lr, betas=betas, eps=eps,
                                                                   weight_decay=weight_decay, amsgrad=amsgrad))
        super().__init__(params, **options)
        self._group_given = {"params": params, **options}


class AdamW(_c.AdamW):
    __doc__ = _c.AdamW.__doc__ + " params: tensors or one param group (see oa.optim)."

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, amsgrad=False):
        params, options = _one_group("oa.optim.AdamW", params, dict(lr=lr, betas=betas, eps=eps,
                                                                    weight_decay=weight_decay, amsgrad=amsgrad))
        super().__init__(params, **options)
        self._group_given = {"params": params, **options}


def _zero_grad(self, set_to_none=True):
    """Clears every parameter's gradient (None), or with set_to_none=False zeroes it in place, as torch."""
    zero_grads(self._group_given["params"], set_to_none)


for _cls in (SGD, Adam, AdamW):
    _cls.param_groups = property(lambda self: [_ParamGroup(self)],
                                 doc="torch's param_groups: one group; its 'lr' sets optimizer.lr (see oa.optim).")
    _cls.zero_grad = _zero_grad
del _cls
