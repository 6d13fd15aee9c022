"""oa.optim: torch.optim's SGD, Adam and AdamW over oa's C++ optimizers (oa/ml/optim.hpp).

Each step is one fused kernel per parameter on the device (no host round trip).
The parameters must be oa.nn.Parameter objects (a module's parameters()).
warmup_cosine_lr(step, base_lr, warmup_steps, total_steps, min_lr) is the
schedule `oa train` uses; assign its value to optimizer.lr before each step.
state_dict() and load_state_dict() take torch's structure
({'state': {i: {...}}, 'param_groups': [{...}]}).
"""
import numpy as _np

from ._oa import InvalidArgumentError, no_grad
from ._oa.optim import SGD, AdamW, Optimizer, clip_grad_norm_, warmup_cosine_lr

__all__ = ["Adam", "AdamW", "Optimizer", "SGD", "clip_grad_norm_", "warmup_cosine_lr"]


class Adam(AdamW):
    """torch.optim.Adam (amsgrad off): weight_decay is an L2 term added to the gradient before the moments
    (g + weight_decay * p, out of place: p.grad is left as it was), unlike AdamW's decoupled decay; the update
    itself is oa's fused AdamW step with its decay 0, so Adam(weight_decay=0) is AdamW(weight_decay=0) exactly.
    With weight_decay > 0, step() adds one elementwise op per parameter with a gradient. Constructor errors as
    AdamW's (oa.InvalidArgumentError); a negative weight_decay too. Under oa.amp.GradScaler, scaler.step(opt)
    runs the C++ step directly, so weight_decay > 0 is refused there (oa.amp.GradScaler raises)."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        if not weight_decay >= 0 or weight_decay == float("inf"):
            raise InvalidArgumentError(f"oa.optim.Adam: weight_decay = {weight_decay} must be finite and non-negative")
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=0.0)
        self.weight_decay = float(weight_decay)

    def step(self):
        """One update of every parameter that has a gradient (see the class)."""
        if not self.weight_decay:
            return super().step()
        saved = [(p, p.grad) for p in self.params if p.grad is not None]
        try:
            with no_grad():
                for p, g in saved:
                    p.grad = g + p * self.weight_decay
            super().step()
        finally:
            for p, g in saved:
                p.grad = g

    def state_dict(self):
        """torch's Adam.state_dict() (see oa.optim.AdamW.state_dict), with Adam's weight_decay and group keys."""
        state = super().state_dict()
        state["param_groups"][0].update(weight_decay=self.weight_decay, differentiable=False, fused=False)
        return state

    def load_state_dict(self, state_dict):
        """As oa.optim.AdamW.load_state_dict; weight_decay must equal this optimizer's (as float32)."""
        groups = [dict(g) for g in state_dict.get("param_groups", [])]
        for g in groups:
            wd = g.get("weight_decay", self.weight_decay)
            if _np.float32(wd) != _np.float32(self.weight_decay):
                raise InvalidArgumentError(f"oa.optim.Adam.load_state_dict: param group 'weight_decay' is {wd!r} in the "
                                           f"state_dict but {self.weight_decay!r} in this optimizer (oa's hyperparameters "
                                           "are fixed at construction; only lr is loaded)")
            g["weight_decay"] = 0.0
        super().load_state_dict({**state_dict, "param_groups": groups})
