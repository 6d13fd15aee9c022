"""oa.optim: torch.optim's SGD and AdamW over oa's C++ optimizers (oa/ml/optim.hpp).

Each step is one fused kernel per parameter on the device (no host round trip).
The parameters must be oa.nn.Parameter objects (a module's parameters()).
warmup_cosine_lr(step, base_lr, warmup_steps, total_steps, min_lr) is the
schedule `oa train` uses; assign its value to optimizer.lr before each step.
"""
from ._oa.optim import SGD, AdamW, Optimizer, clip_grad_norm_, warmup_cosine_lr
