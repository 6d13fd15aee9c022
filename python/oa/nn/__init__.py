"""oa.nn: the functional ops (oa.nn.functional)."""
from . import functional
