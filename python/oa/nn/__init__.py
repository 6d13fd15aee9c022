"""oa.nn: modules (torch.nn's names and constructor arguments) and the functional ops (oa.nn.functional)."""
from . import functional
from .modules import (
    BatchNorm2d,
    Conv1d,
    Conv2d,
    ConvTranspose2d,
    Dropout,
    Embedding,
    GELU,
    GRU,
    LayerNorm,
    Linear,
    LSTM,
    Module,
    MultiheadAttention,
    Parameter,
    ReLU,
    Sequential,
    Sigmoid,
    SiLU,
    Tanh,
)
