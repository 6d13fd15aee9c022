"""oa.amp: torch.amp's GradScaler over oa::ml::amp::GradScaler (oa/ml/amp.hpp).

    scaler = oa.amp.GradScaler()
    with oa.autocast(oa.float16):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()

The scale, the inf/NaN check and the skip decision stay on the device (no
host read per step). bfloat16 needs no scaler.
"""
from ._oa import UnsupportedError
from ._oa.amp import GradScaler as _GradScaler
from .optim import Adam

__all__ = ["GradScaler"]


class GradScaler(_GradScaler):
    __doc__ = _GradScaler.__doc__

    def step(self, optimizer):
        """unscale_ unless done, then the optimizer's step, skipped after an inf or NaN. Raises
        oa.UnsupportedError for oa.optim.Adam with weight_decay > 0 (its L2 term is added in Python, which the
        fused step under the scaler does not run)."""
        if isinstance(optimizer, Adam) and optimizer.weight_decay:
            raise UnsupportedError("oa.amp.GradScaler.step: oa.optim.Adam with weight_decay > 0 is not supported "
                                   "under loss scaling; use oa.optim.AdamW or Adam(weight_decay=0)")
        return super().step(optimizer)
