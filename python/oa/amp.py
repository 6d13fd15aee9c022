"""oa.amp: torch.amp's GradScaler over oa::ml::amp::GradScaler (oa/ml/amp.hpp).

    scaler = oa.amp.GradScaler()
    with oa.autocast(oa.float16):
        loss = loss_fn(model(x), y)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()

The scale, the inf/NaN check and the skip decision stay on the device (no
host read per step); every oa.optim optimizer takes the skip flag in its fused
step. bfloat16 needs no scaler.
"""
from ._oa.amp import GradScaler

__all__ = ["GradScaler"]
