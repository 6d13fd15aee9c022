"""oa: a GPU machine-learning engine on Vulkan compute, shaped like PyTorch.

Tensors (oa.Tensor) live on an oa.Engine (one Vulkan device; oa.default_engine()
unless created with engine=...). Work is recorded lazily and runs on the GPU
while Python records the next ops; .numpy(), .item() and oa.synchronize() wait
for it. Errors of the engine are oa.Error subclasses that also derive from
ValueError, RuntimeError or MemoryError by kind (oa.CommunicationError: a
collective of data-parallel training over MPI failed or timed out).

A one-element Tensor converts as torch's: bool() (so `if x < 0.1:` works),
int(), float(), and as a list index when int32 or bool; bool() of more or
fewer elements raises (RuntimeError: ambiguous). `x += y` (and -=, *=, /=,
**=, //=, %=, &=, |=, ^=), item assignment `x[key] = value` and the methods add_, sub_, mul_,
div_, pow_, copy_, fill_, zero_ write x's own storage (see
oa.Tensor.add_ and oa.Tensor.__setitem__), which reshape, view, flatten,
squeeze, unsqueeze, x[:], x[...] and detach() share; clone() makes a new
one. Unlike torch's views, x[key], transpose, permute, mT, T, expand, split
and chunk return copies: an in-place op on one (y = x[0]; y += 1, and
x[0][1] = v) raises oa.FailedPreconditionError, since it would not reach x
(write x[0, 1] = v or x[0] += 1 on the source instead: an augmented
assignment through one subscript, x[key] op= v, updates x as in torch), and
a copy does not see later writes to its source. With autograd history in x
or the operand, an in-place op records it and x takes the new history, as
torch (a leaf that requires grad is refused outside oa.no_grad(), and so is
x whose storage a view or a saved value shares). A child forked (os.fork, multiprocessing's 'fork' start
method) after the parent used oa raises oa.FailedPreconditionError on its
first use of oa: use the 'spawn' or 'forkserver' start method instead.
"""
import sys

from . import _oa
from ._oa import (
    CommunicationError,
    DeviceError,
    DeviceInfo,
    Engine,
    Error,
    FailedPreconditionError,
    InternalError,
    InvalidArgumentError,
    OutOfRangeError,
    ResourceExhaustedError,
    Tensor,
    UnsupportedError,
    abs,
    add,
    all,
    any,
    clamp,
    div,
    eq,
    eye,
    full_like,
    ge,
    gt,
    le,
    lt,
    mul,
    ne,
    ones_like,
    permute,
    reshape,
    transpose,
    zeros_like,
    argmax,
    argmin,
    autocast,
    bitwise_and,
    bitwise_not,
    bitwise_or,
    bitwise_xor,
    cat,
    chunk,
    gather,
    index_select,
    masked_fill,
    masked_select,
    nonzero,
    scatter_add,
    split,
    stack,
    take_along_dim,
    topk,
    ceil,
    cos,
    erf,
    exp2,
    expm1,
    floor,
    floor_divide,
    log1p,
    remainder,
    round,
    sign,
    sin,
    arange,
    default_engine,
    devices,
    get_float32_matmul_precision,
    set_float32_matmul_precision,
    validation_message_count,
    dtype,
    exp,
    load_metadata,
    from_numpy,
    full,
    is_grad_enabled,
    log,
    manual_seed,
    matmul,
    bmm,
    mm,
    mv,
    maximum,
    minimum,
    neg,
    pow,
    sum,
    mean,
    amax,
    amin,
    max,
    min,
    return_types,
    prod,
    var,
    std,
    logsumexp,
    norm,
    ones,
    rand,
    randn,
    reciprocal,
    relu,
    rsqrt,
    sigmoid,
    sqrt,
    square,
    sub,
    synchronize,
    tanh,
    tensor,
    tril,
    triu,
    where,
    zeros,
)
# oa.return_types.max pickles by this name (as torch.return_types.max).
sys.modules[__name__ + ".return_types"] = return_types

from . import amp
from . import data
from . import nn
from . import optim
from ._device import tensor_to
from ._einsum import einsum
from ._format import tensor_format, tensor_repr
from ._grad_mode import enable_grad, inference_mode, no_grad, set_grad_enabled
from . import _functions
from ._functions import (addmm, allclose, as_tensor, baddbmm, broadcast_tensors, broadcast_to, clamp_max, clamp_min,
                         count_nonzero, cumprod, cumsum, diag, dot, empty, equal, hstack, index_add, isclose, isfinite,
                         isinf, isnan, lerp, logical_and, logical_not, logical_or, logical_xor, meshgrid, movedim,
                         nan_to_num, outer, rand_like, randn_like, repeat_interleave, roll, scatter, scatter_reduce,
                         trace, unflatten, vstack)
from ._serialization import load, save
from ._tensor_ops import (argsort, flip, linspace, multinomial, randint, retain_grad, sort, tensor_argsort, tensor_flip,
                          tensor_int, tensor_long, tensor_repeat, tensor_sort, tensor_unbind, unbind)

# torch.softmax and torch.log_softmax: oa.nn.functional's.
from .nn.functional import log_softmax, softmax

# x.to(...) takes torch's forms (devices, a tensor), read in Python over the C++ dtype conversion.
Tensor.to = tensor_to
# torch's tensor methods composed in Python over the C++ ops (oa/_tensor_ops.py), and torch's printed form.
Tensor.flip = tensor_flip
Tensor.repeat = tensor_repeat
Tensor.unbind = tensor_unbind
Tensor.sort = tensor_sort
Tensor.argsort = tensor_argsort
Tensor.retain_grad = retain_grad
Tensor.int = tensor_int
Tensor.long = tensor_long
Tensor.multinomial = multinomial
# torch's methods of the functions in oa/_functions.py, and Tensor.type, double, cpu, is_contiguous, data and new_*.
for _name in ("addmm", "allclose", "baddbmm", "broadcast_to", "clamp_max", "clamp_min", "count_nonzero", "cumprod",
              "cumsum", "diag", "dot", "equal", "index_add", "isclose", "isfinite", "isinf", "isnan", "lerp",
              "logical_and", "logical_not", "logical_or", "logical_xor", "movedim", "nan_to_num", "outer",
              "repeat_interleave", "roll", "scatter", "scatter_reduce", "trace", "unflatten", "new_zeros", "new_ones",
              "new_empty", "new_full", "new_tensor", "double", "cpu", "is_contiguous"):
    setattr(Tensor, _name, getattr(_functions, _name))
del _name
Tensor.scatter_ = _functions.tensor_scatter_
Tensor.scatter_reduce_ = _functions.tensor_scatter_reduce_
Tensor.scatter_add_ = _functions.tensor_scatter_add_
Tensor.index_add_ = _functions.tensor_index_add_
Tensor.type = _functions.tensor_type
Tensor.data = property(_functions.data, _functions.set_data, doc=_functions.data.__doc__)
# torch.clip, torch.concat and torch.concatenate: oa.clamp and oa.cat under torch's other names; moveaxis: movedim.
clip, concat, concatenate, moveaxis = clamp, cat, cat, movedim
Tensor.moveaxis = movedim
Tensor.clip, Tensor.clip_ = Tensor.clamp, Tensor.clamp_
# torch.flatten, torch.squeeze, torch.unsqueeze and torch.clone: the Tensor methods, called as functions.
flatten, squeeze, unsqueeze, clone = Tensor.flatten, Tensor.squeeze, Tensor.unsqueeze, Tensor.clone
Tensor.__repr__ = Tensor.__str__ = tensor_repr
Tensor.__format__ = tensor_format

# torch's dtype names (oa.bool is torch.bool; Python's bool is builtins.bool).
float32 = float = dtype.float32
float16 = half = dtype.float16
bfloat16 = dtype.bfloat16
# torch.long names int64; oa's one integer dtype is int32, so oa.long names it (as .long() gives int32). There is
# no oa.int64: code asking for 64-bit integers by that name fails loudly.
int32 = long = dtype.int32
globals()["bool"] = dtype.bool
