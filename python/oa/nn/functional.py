"""The functional ops with torch.nn.functional's names and keyword arguments.

Each is one op of oa's C++ engine (oa/ml/functional.hpp, oa/matrix): shapes,
layouts and errors are documented there and in each function's docstring.
pad, interpolate, normalize, adaptive_avg_pool2d, logsigmoid, cosine_similarity, the losses nll_loss, l1_loss,
smooth_l1_loss, huber_loss, kl_div and binary_cross_entropy_with_logits (and mse_loss past float32 operands of one
shape), and the options that the C++ ops lack (pooling's ceil_mode, count_include_pad, divisor_override, unbatched
and 16-bit inputs; embedding's padding_idx; cross_entropy's class weights; softplus's beta and threshold; softmax's
dtype; the convolutions' padding strings) are composed here from those ops, so autograd flows through them.
Besides PyTorch's names: accuracy, bmm, bmm_nt, bmm_tn, split_heads, merge_heads,
softmax_scaled_masked, flash_attention and rope.
"""
import math
import warnings

import numpy as np

from .. import _oa
from .._oa import functional as _f
from .._functions import broadcast_shape, floating

accuracy = _f.accuracy
batch_norm = _f.batch_norm
bmm = _oa.bmm  # torch.bmm, as oa.bmm
bmm_nt = _f.bmm_nt
bmm_tn = _f.bmm_tn
conv_transpose1d = _f.conv_transpose1d
conv_transpose2d = _f.conv_transpose2d
dropout = _f.dropout
flash_attention = _f.flash_attention
group_norm = _f.group_norm
instance_norm = _f.instance_norm
layer_norm = _f.layer_norm
linear = _f.linear
merge_heads = _f.merge_heads
relu = _f.relu
rms_norm = _f.rms_norm
rope = _f.rope
scaled_dot_product_attention = _f.scaled_dot_product_attention
sigmoid = _f.sigmoid
silu = _f.silu
mish = _f.mish
hardswish = _f.hardswish
leaky_relu = _f.leaky_relu
elu = _f.elu
softmax_scaled_masked = _f.softmax_scaled_masked
split_heads = _f.split_heads
tanh = _f.tanh

_PREFIX = "oa.nn.functional."


def one_hot(tensor, num_classes=-1):
    """torch.nn.functional.one_hot: int32 class indices [...] -> int32 [..., num_classes] (torch: int64; oa's
    integers are int32), 1 where the index is the class, else 0; .float() it for float arithmetic. num_classes -1
    (torch's default) is the largest index plus one, read back (a synchronization). Not differentiable. Errors:
    oa.InvalidArgumentError for indices not int32, for num_classes below 1 and, with -1, for no indices or a
    negative one (checked on the host, as torch); with a given num_classes an index outside [0, num_classes)
    raises oa.OutOfRangeError (an IndexError) when the GPU has run the op (at the next synchronize() or host
    read), as torch's CUDA kernels assert on the device."""
    op = _PREFIX + "one_hot"
    if tensor.dtype != _oa.dtype.int32:
        raise _oa.InvalidArgumentError(f"{op}: tensor must hold int32 class indices, not {tensor.dtype}")
    if num_classes == -1:
        if tensor.numel() == 0:
            raise _oa.InvalidArgumentError(f"{op}: cannot infer num_classes (-1) from an empty tensor")
        largest, smallest = int(tensor.max().item()), int(tensor.min().item())
        if smallest < 0:
            raise _oa.InvalidArgumentError(f"{op}: class values must be non-negative; found {smallest}")
        num_classes = largest + 1
    if num_classes < 1:
        raise _oa.InvalidArgumentError(f"{op}: num_classes {num_classes} must be >= 1 (or -1: the largest index "
                                       "plus one)")
    return _f.one_hot(tensor, num_classes, _oa.dtype.int32)


def _reduction(reduction, op):
    if reduction not in ("none", "mean", "sum"):
        raise _oa.InvalidArgumentError(f"{op}: reduction must be 'none', 'mean' or 'sum', not {reduction!r}")
    return reduction


def no_legacy_reduction(size_average, reduce, op):
    """torch's deprecated size_average and reduce: refused (TypeError naming them); reduction says the same."""
    for name, value in (("size_average", size_average), ("reduce", reduce)):
        if value is not None:
            raise TypeError(f"{op}: {name} is deprecated in torch and not supported; use reduction='mean', 'sum' or "
                            "'none'")


def _reduce(losses, reduction):
    return losses if reduction == "none" else losses.sum() if reduction == "sum" else losses.mean()


def _require_floating(tensor, op, arg, what):
    """Refuses an int32 or bool `tensor` as `op`'s `arg` (`what` it holds), as torch's losses do:
    oa.InvalidArgumentError naming them and the dtype."""
    if not tensor.is_floating_point():
        raise _oa.InvalidArgumentError(f"{op}: {arg} must be a floating tensor ({what}), not {tensor.dtype.name}, as "
                                       "torch; convert it with .float()")


def _pointwise_operands(input, target, reduction, op):
    """l1_loss's and mse_loss's operands, broadcast to one shape as torch's: with torch's UserWarning when their shapes
    differ, oa.InvalidArgumentError when they do not broadcast or when both are integers and reduction is 'mean'
    (torch's mean takes floating dtypes only)."""
    if input.shape != target.shape:
        try:
            shape = np.broadcast_shapes(input.shape, target.shape)
        except ValueError:
            raise _oa.InvalidArgumentError(f"{op}: input {list(input.shape)} and target {list(target.shape)} do not "
                                           "broadcast (extents must match or be 1, from the last axis)") from None
        warnings.warn(f"{op}: Using a target size ({list(target.shape)}) that is different to the input size "
                      f"({list(input.shape)}). This will likely lead to incorrect results due to broadcasting. Please "
                      "ensure they have the same size.", UserWarning, stacklevel=3)
        input, target = input.expand(*shape), target.expand(*shape)
    if reduction == "mean" and not (input.is_floating_point() or target.is_floating_point()):
        raise _oa.InvalidArgumentError(f"{op}: reduction='mean' needs a floating input or target, not "
                                       f"{input.dtype.name} and {target.dtype.name} (as torch's mean); convert them "
                                       "with .float() or use reduction='sum' or 'none'")
    return input, target


def _convolution(name, spatial):
    """conv1d and conv2d: the C++ op, with torch's padding strings besides ints."""
    native = getattr(_f, name)

    def convolution(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
        if isinstance(padding, str):
            totals = padding_totals(weight.shape[2:], stride, padding, dilation, spatial, _PREFIX + name)
            if any(t % 2 for t in totals):  # the odd one at the end of the axis, as torch
                input = pad(input, [p for t in reversed(totals) for p in (0, t % 2)])
            padding = tuple(t // 2 for t in totals)
        return native(input, weight, bias, stride, padding, dilation, groups)

    convolution.__name__ = name
    convolution.__doc__ = (f"torch.nn.functional.{name} (oa's op): input [N, C, *], weight [O, C / groups, *], bias "
                           f"[O] over {spatial} spatial axes -> [N, O, *]; padding an int, a sequence of {spatial} "
                           "ints, 'valid' (0) or 'same' (stride 1 only: the output keeps the input's extents; where an "
                           "axis's total padding dilation * (kernel - 1) is odd, the extra one goes to its end, as "
                           "torch). Errors: the C++ op's; oa.InvalidArgumentError for another string or 'same' with a "
                           "stride other than 1.")
    return convolution


def padding_totals(kernel_size, stride, padding, dilation, spatial, op):
    """The total padding of each of `spatial` axes for torch's convolution padding 'valid' (0) or 'same' (dilation *
    (kernel - 1)). oa.InvalidArgumentError naming `op` for another string or 'same' with a stride other than 1."""
    if padding not in ("valid", "same"):
        raise _oa.InvalidArgumentError(f"{op}: Invalid padding string {padding!r}, should be one of 'valid', 'same'")
    if padding == "valid":
        return (0,) * spatial
    if any(s != 1 for s in _ints(stride, spatial, op, "stride")):
        raise _oa.InvalidArgumentError(f"{op}: padding='same' is not supported for strided convolutions (stride "
                                       f"{stride!r})")
    return tuple(d * (k - 1) for d, k in zip(_ints(dilation, spatial, op, "dilation"),
                                             _ints(kernel_size, spatial, op, "kernel_size")))


conv1d = _convolution("conv1d", 1)
conv2d = _convolution("conv2d", 2)


def softplus(input, beta=1.0, threshold=20.0):
    """torch.nn.functional.softplus: log(1 + exp(beta x)) / beta, and x where beta x > threshold (torch's
    linear region); beta 1 and threshold 20 are oa's op, others composed (where, over the op of beta x).
    Differentiable: sigmoid(beta x), and 1 past the threshold, as torch's."""
    if beta == 1 and threshold == 20:
        return _f.softplus(input)
    scaled = input * beta
    return _oa.where(scaled > threshold, input, _f.softplus(scaled) / beta)


def logsigmoid(input):
    """torch.nn.functional.logsigmoid: log(1 / (1 + exp(-x))) = -softplus(-x), finite for any finite x (float
    dtypes). Differentiable: sigmoid(-x)."""
    return -_f.softplus(-input)


def _softmax(native, name):
    """softmax and log_softmax with torch's dtype=: input cast to it first (as torch)."""

    def function(input, dim=None, _stacklevel=3, dtype=None):
        if dim is None:
            warnings.warn(f"Implicit dimension choice for {name} has been deprecated. Change the call to include "
                          "dim=X as an argument.", UserWarning, stacklevel=_stacklevel)
            dim = 0 if not isinstance(input, _oa.Tensor) or input.dim() in (0, 1, 3) else 1
        return native(input if dtype is None else input.to(dtype), dim)

    function.__name__ = name
    function.__doc__ = (f"torch.nn.functional.{name} along dim (None: torch's deprecated choice by rank, 0 for 0, 1 "
                        f"or 3 axes, else 1, with its UserWarning) of a float input, cast to dtype first when given "
                        f"(the result then has that dtype); as oa::ml::{name}: another axis than the last is moved "
                        f"last and back, float16 and bfloat16 computed in float32. Differentiable. Errors: "
                        f"oa.InvalidArgumentError for a dim out of range.")
    return function


softmax = _softmax(_f.softmax, "softmax")
log_softmax = _softmax(_f.log_softmax, "log_softmax")


def gelu(input, approximate="none"):
    """torch.nn.functional.gelu: x * Phi(x) (approximate='none', oa's op), or torch's tanh approximation
    0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))) (approximate='tanh', composed of oa's ops). Differentiable.
    Errors: oa.InvalidArgumentError for another approximate."""
    if approximate == "tanh":
        return 0.5 * input * (1 + (math.sqrt(2 / math.pi) * (input + 0.044715 * input * input * input)).tanh())
    if approximate != "none":
        raise _oa.InvalidArgumentError(f"{_PREFIX}gelu: approximate {approximate!r} must be 'none' or 'tanh'")
    return _f.gelu(input)


def _ints(value, n, op, arg):
    """An int (repeated) or a sequence of n ints as a tuple of n; TypeError naming `op` and `arg` otherwise."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return (int(value),) * n
    if isinstance(value, (tuple, list)) and len(value) == n and all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value):
        return tuple(int(v) for v in value)
    raise TypeError(f"{op}: {arg} must be an int or a sequence of {n} ints, not {value!r}")


def _ceil_extra(input, kernel, stride, padding):
    """The rows and columns of padding past the bottom and right that ceil_mode adds to input [N, C, H, W]: torch's
    output extent ceil((n + 2p - k) / s) + 1, less one where the last window would start past the left padding and
    the input."""
    extra = []
    for n, k, s, p in zip(input.shape[-2:], kernel, stride, padding):
        out = -(-(n + 2 * p - k) // s) + 1
        if (out - 1) * s >= n + p:
            out -= 1
        extra.append(max(0, (out - 1) * s + k - (n + 2 * p)))
    return extra


def _pool_geometry(input, kernel_size, stride, padding, op):
    """(kernel, stride, padding) as pairs; oa.InvalidArgumentError naming `op`, the arguments and input's shape as
    given when they are out of range or the kernel exceeds the padded input (torch: output size too small)."""
    kernel = _ints(kernel_size, 2, op, "kernel_size")
    stride = kernel if stride is None else _ints(stride, 2, op, "stride")
    padding = _ints(padding, 2, op, "padding")
    if min(kernel) < 1 or min(stride) < 1 or min(padding) < 0 or any(2 * p > k for p, k in zip(padding, kernel)):
        raise _oa.InvalidArgumentError(f"{op}: kernel_size {list(kernel)} and stride {list(stride)} must be >= 1, and "
                                       f"padding {list(padding)} >= 0 and at most half of kernel_size (input "
                                       f"{list(input.shape)})")
    if any(n + 2 * p < k for n, k, p in zip(input.shape[-2:], kernel, padding)):
        raise _oa.InvalidArgumentError(f"{op}: kernel_size {list(kernel)} exceeds the input {list(input.shape)} padded "
                                       f"by {list(padding)}: the output size would be too small")
    return kernel, stride, padding


def _pooling_input(input, op):
    """torch's pooling input, [N, C, H, W] or unbatched [C, H, W] of float32, float16 or bfloat16, as (x, restore):
    x the float32 [N, C, H, W] that oa's ops take, restore(y) their result in input's rank and dtype (autograd flows
    through both). oa.InvalidArgumentError naming `op` for another rank or an integer or bool input."""
    if input.dim() not in (3, 4):
        raise _oa.InvalidArgumentError(f"{op}: input {list(input.shape)} must be [N, C, H, W] or [C, H, W]")
    _require_floating(input, op, "input", "[N, C, H, W] or [C, H, W]")
    x = input.float() if input.dtype != _oa.dtype.float32 else input

    def restore(y):
        y = y if input.dim() == 4 else y.squeeze(0)
        return y.to(input.dtype) if y.dtype != input.dtype else y
    return (x if input.dim() == 4 else x.unsqueeze(0)), restore


def max_pool_unsupported(dilation, return_indices, op):
    """Refuses max pooling's options that oa lacks: oa.InvalidArgumentError naming `op` and the argument."""
    if _ints(dilation, 2, op, "dilation") != (1, 1):
        raise _oa.InvalidArgumentError(f"{op}: dilation {dilation!r}: only 1 is supported")
    if return_indices:
        raise _oa.InvalidArgumentError(f"{op}: return_indices=True is not supported (oa's max pooling keeps no indices)")


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """torch.nn.functional.max_pool2d: input [N, C, H, W] -> [N, C, OH, OW] (or [C, H, W] -> [C, OH, OW]; float32,
    float16 or bfloat16, the last two computed in float32), the maximum of each kernel_size window
    (an int or a pair) every stride (None: kernel_size), padding (at most half the kernel) counting as -inf;
    OH = floor((H + 2 padding - kernel) / stride) + 1, or with ceil_mode the ceiling, less one where that window
    would start past the input and the left padding (as torch). The gradient goes to the first maximum of each
    window. Errors: oa.InvalidArgumentError naming the argument for shapes, an integer or bool input, dilation other
    than 1 or return_indices=True (not supported); TypeError for an argument of another type."""
    op = _PREFIX + "max_pool2d"
    max_pool_unsupported(dilation, return_indices, op)
    x, restore = _pooling_input(input, op)
    kernel, strides, paddings = _pool_geometry(input, kernel_size, stride, padding, op)
    if ceil_mode:
        extra_h, extra_w = _ceil_extra(input, kernel, strides, paddings)
        if extra_h or extra_w:
            x = pad(x, (0, extra_w, 0, extra_h), value=-math.inf)
    return restore(_f.max_pool2d(x, kernel, strides, paddings))


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """torch.nn.functional.avg_pool2d: input [N, C, H, W] -> [N, C, OH, OW] (or unbatched, and dtypes, as
    max_pool2d's), the mean of each kernel_size window
    (an int or a pair) every stride (None: kernel_size) with zero padding (at most half the kernel); OH as
    max_pool2d's (ceil_mode likewise). The divisor: the window's size within the padded input
    (count_include_pad=True, the default; it is kernel_size's area unless ceil_mode's windows pass the padding), its
    positions within the input (count_include_pad=False), or divisor_override. Differentiable. Errors:
    oa.InvalidArgumentError naming the argument for shapes, an integer or bool input or a divisor_override that is
    not positive; TypeError for an argument of another type."""
    op = _PREFIX + "avg_pool2d"
    x, restore = _pooling_input(input, op)
    kernel, strides, paddings = _pool_geometry(input, kernel_size, stride, padding, op)
    if not ceil_mode and count_include_pad and divisor_override is None:
        return restore(_f.avg_pool2d(x, kernel, strides, paddings))
    if divisor_override is not None and (isinstance(divisor_override, bool) or not isinstance(
            divisor_override, (int, np.integer)) or divisor_override <= 0):
        raise _oa.InvalidArgumentError(f"{op}: divisor_override must be a positive int, not {divisor_override!r}")
    extra_h, extra_w = _ceil_extra(input, kernel, strides, paddings) if ceil_mode else (0, 0)
    (ph, pw), (h, w) = paddings, input.shape[-2:]
    # Window means of the zero-padded input, then divided by the window's share of counted positions.
    means = _f.avg_pool2d(pad(x, (pw, pw + extra_w, ph, ph + extra_h)), kernel, strides, 0)
    if divisor_override is not None:
        return restore(means * (kernel[0] * kernel[1] / divisor_override))
    counted = _oa.ones(1, 1, h + 2 * ph, w + 2 * pw, engine=input.engine) if count_include_pad else pad(
        _oa.ones(1, 1, h, w, engine=input.engine), (pw, pw, ph, ph))
    shares = _f.avg_pool2d(pad(counted, (0, extra_w, 0, extra_h)), kernel, strides, 0)
    return restore(means / shares)


def adaptive_avg_pool2d(input, output_size):
    """torch.nn.functional.adaptive_avg_pool2d: input [N, C, H, W] -> [N, C, OH, OW] (or unbatched, and dtypes, as
    max_pool2d's) for output_size (OH, OW), an int for both or a pair (None keeps that input extent): output
    position i along an axis of n averages positions floor(i n / OH) to ceil((i + 1) n / OH) - 1, as torch; two
    matmuls by those averaging matrices. Differentiable. Errors: oa.InvalidArgumentError naming the shapes for an
    output or input extent below 1, another rank or an integer or bool input; TypeError for an output_size of
    another type."""
    op = _PREFIX + "adaptive_avg_pool2d"
    x, restore = _pooling_input(input, op)
    if isinstance(output_size, (tuple, list)) and len(output_size) == 2:
        output_size = tuple(n if m is None else m for n, m in zip(input.shape[-2:], output_size))
    sizes = _ints(output_size, 2, op, "output_size")
    if min(sizes + input.shape[-2:]) < 1:
        raise _oa.InvalidArgumentError(f"{op}: output_size {list(sizes)} and input {list(input.shape)}'s H and W must "
                                       "be >= 1")

    def averaging(n, m):  # [m, n]: row i averages torch's window i
        weights = np.zeros((m, n), np.float32)
        for i in range(m):
            start, end = i * n // m, -(-(i + 1) * n // m)
            weights[i, start:end] = 1.0 / (end - start)
        return _oa.tensor(weights, engine=input.engine)

    (h, w), (oh, ow) = input.shape[-2:], sizes
    return restore(averaging(h, oh) @ x @ averaging(w, ow).mT)


def pad(input, pad, mode="constant", value=None):
    """torch.nn.functional.pad: input with pad = (left, right) for the last axis, then (top, bottom) for the one
    before, ... (len(pad) / 2 <= input.ndim axes, from the last). mode 'constant' fills with value (0 by default;
    input's dtype, any); 'reflect' mirrors without the edge (each pad < the axis's extent), 'replicate' repeats the
    edge, 'circular' wraps around (each pad <= the extent): these pad the last 1, 2 or 3 axes of an input with 1 or
    2 more (batch, channel), as torch. Negative pads crop, in every mode as torch: 'constant', 'reflect' and
    'replicate' pad the axis, then crop it; 'circular' crops, then wraps around what is left. Differentiable.
    Errors: oa.InvalidArgumentError naming the pad, the mode and input's shape for an odd or too long pad, an
    unknown mode, a value with another mode, pads out of range, or an extent below 0 (below 1 in 'reflect' and
    'replicate', as torch); TypeError for pads that are not ints."""
    op = _PREFIX + "pad"
    if not isinstance(pad, (tuple, list)) or not all(isinstance(p, (int, np.integer)) and not isinstance(p, bool)
                                                      for p in pad):
        raise TypeError(f"{op}: pad must be a sequence of ints, not {pad!r}")
    pads = [int(p) for p in pad]
    shape = list(input.shape)
    if len(pads) % 2 or len(pads) // 2 > input.dim():
        raise _oa.InvalidArgumentError(f"{op}: pad {pads} must have an even length of at most 2 * input.ndim (input "
                                       f"{shape})")
    axes = [(input.dim() - 1 - i, pads[2 * i], pads[2 * i + 1]) for i in range(len(pads) // 2)]
    if mode == "constant":
        y = input
        for a, low, high in axes:
            n = y.shape[a]
            if n + low + high < 0:
                raise _oa.InvalidArgumentError(f"{op}: pad {pads} of input {shape} gives axis {a} a negative extent")
            if low < 0 or high < 0:
                y = y[(slice(None),) * a + (slice(max(-low, 0), n - max(-high, 0)),)]
            edges = [max(low, 0), max(high, 0)]
            blocks = [_oa.full(y.shape[:a] + (e,) + y.shape[a + 1:], 0 if value is None else value, dtype=input.dtype,
                               engine=input.engine) for e in edges]
            if edges[0] or edges[1]:
                y = _oa.cat([blocks[0], y, blocks[1]], a)
        return y if y is not input else input.clone()
    if mode not in ("reflect", "replicate", "circular"):
        raise _oa.InvalidArgumentError(f"{op}: mode {mode!r} must be 'constant', 'reflect', 'replicate' or 'circular'")
    if value is not None and value != 0:
        raise _oa.InvalidArgumentError(f"{op}: padding mode {mode!r} doesn't take a value argument")
    if len(axes) > 3 or input.dim() not in (len(axes) + 1, len(axes) + 2):
        raise _oa.InvalidArgumentError(f"{op}: mode {mode!r} pads the last 1, 2 or 3 axes of an input with 1 or 2 more; "
                                       f"pad {pads} of input {shape}")
    y = input
    for a, low, high in axes:
        n, grow, crop = shape[a], (max(low, 0), max(high, 0)), (max(-low, 0), max(-high, 0))
        where = f"{op}: pad {pads} of input {shape} in mode {mode!r}"
        if n + low + high < (0 if mode == "circular" else 1):
            raise _oa.InvalidArgumentError(f"{where} gives axis {a} the extent {n + low + high} (at least "
                                           f"{0 if mode == 'circular' else 1})")
        if mode == "circular":
            # torch crops first, then wraps around what is left (at most once).
            kept = np.arange(crop[0], n - crop[1])
            if max(grow) > len(kept):
                raise _oa.InvalidArgumentError(f"{where}: padding axis {a} of extent {len(kept)} (after the negative "
                                               "pads' crop) wraps around more than once")
            index = np.r_[kept[len(kept) - grow[0]:], kept, kept[:grow[1]]]
        else:
            # torch pads the whole axis, then crops the negative pads.
            if max(grow) > (n - 1 if mode == "reflect" else math.inf) or n == 0:
                raise _oa.InvalidArgumentError(f"{where}: each pad must be < the extent of its axis" if mode == "reflect"
                                               else f"{where}: each padded axis must be nonempty")
            if mode == "reflect":
                index = np.r_[np.arange(grow[0], 0, -1), np.arange(n), np.arange(n - 2, n - 2 - grow[1], -1)]
            else:
                index = np.r_[np.zeros(grow[0], int), np.arange(n), np.full(grow[1], n - 1)]
            index = index[crop[0]:len(index) - crop[1]]
        y = y.index_select(a, _oa.tensor(index.astype(np.int32), engine=input.engine))
    return y


def normalize(input, p=2.0, dim=1, eps=1e-12):
    """torch.nn.functional.normalize: input / max(||input||_p along dim, eps), the norm kept as an axis of 1; p 1, 2
    and inf take oa's norm op, another positive p (sum |x|^p)^(1/p). Differentiable. Errors:
    oa.InvalidArgumentError for a dim out of range or a p that is not positive."""
    if p in (1, 2, math.inf):
        norm = input.norm(p, dim, keepdim=True)
    elif isinstance(p, (int, float)) and not isinstance(p, bool) and 0 < p < math.inf:
        norm = (input.abs() ** p).sum(dim, keepdim=True) ** (1.0 / p)
    else:
        raise _oa.InvalidArgumentError(f"{_PREFIX}normalize: p must be a positive number or inf, got {p!r}")
    return input / norm.clamp(min=eps)


def _require_target_shape(input, target, op, probabilities):
    """oa.InvalidArgumentError naming `op` and both shapes, in torch's words, unless target fits input: class indices
    [N] for [N, C], [N, d1, ...] for [N, C, d1, ...] or [] for [C]; with `probabilities`, a float target of input's
    shape."""
    if probabilities and target.is_floating_point():
        if target.shape != input.shape:
            raise _oa.InvalidArgumentError(f"{op}: probability target {list(target.shape)} must have input's shape "
                                           f"{list(input.shape)}")
        return
    if input.dim() >= 2 and target.dim() == input.dim() - 1 and target.shape[0] != input.shape[0]:
        raise _oa.InvalidArgumentError(f"{op}: Expected input batch_size ({input.shape[0]}) to match target "
                                       f"batch_size ({target.shape[0]}) (input {list(input.shape)}, target "
                                       f"{list(target.shape)})")
    expected = [input.shape[0], *input.shape[2:]] if input.dim() >= 2 else []
    if input.dim() < 1 or list(target.shape) != expected:
        raise _oa.InvalidArgumentError(f"{op}: Expected target size {expected}, got {list(target.shape)} (input "
                                       f"{list(input.shape)}; [N, C] takes a target [N], [N, C, d1, ...] [N, d1, ...] "
                                       "and [C] [])")


def _class_targets(input, target, weight, ignore_index, op):
    """Checks input [N, C, d...] (or [C]) against int32 class indices target [N, d...] (or []) and weight [C];
    returns (input, target) with a batch axis added to a [C] input, the bool mask of the targets that are not
    ignore_index, the target with those set to 0 (a valid index) and each position's class weight (1 without
    weights; 0 where ignored)."""
    _require_target_shape(input, target, op, probabilities=False)
    if target.dtype != _oa.dtype.int32:
        raise _oa.InvalidArgumentError(f"{op}: target must hold int32 class indices, not {target.dtype.name}")
    _require_floating(input, op, "input", "log-probabilities")
    classes = input.shape[1] if input.dim() >= 2 else input.shape[0]
    if weight is not None and (not isinstance(weight, _oa.Tensor) or weight.shape != (classes,)):
        raise _oa.InvalidArgumentError(f"{op}: weight {list(getattr(weight, 'shape', [type(weight).__name__]))} must "
                                       f"be a tensor of shape [C] = [{classes}] (input {list(input.shape)})")
    if weight is not None:
        _require_floating(weight, op, "weight", "class weights")
    if input.dim() == 1:
        input, target = input.unsqueeze(0), target.unsqueeze(0)
    valid = target != ignore_index
    safe = _oa.where(valid, target, 0)
    weights = valid.to(input.dtype) if weight is None else _oa.where(valid, weight[safe], 0.0)
    return input, target, valid, safe, weights


def _nll(input, target, weight, ignore_index, reduction, op):
    one = input.dim() == 1
    input, target, valid, safe, weights = _class_targets(input, target, weight, ignore_index, op)
    if input.dtype in (_oa.dtype.float16, _oa.dtype.bfloat16):
        input = input.float()  # losses in float32, as oa's cross_entropy and autocast keep them
    picked = -input.gather(1, safe.unsqueeze(1)).squeeze(1)
    losses = _oa.where(valid, picked if weight is None else picked * weights, 0.0)
    if reduction == "none":
        return losses.squeeze(0) if one else losses
    return losses.sum() if reduction == "sum" else losses.sum() / weights.sum()


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """torch.nn.functional.nll_loss: log-probabilities input [N, C] against int32 class indices target [N] (or
    [N, C, d1, ...] against [N, d1, ...], or [C] against []): loss_i = -weight[t_i] input[i, t_i] (weight [C],
    1 without it), 0 where t_i == ignore_index; reduction 'mean' divides their sum by the sum of the weights of the
    targets kept (NaN when none is), 'sum' sums, 'none' gives target's shape; a float16 or bfloat16 input gives a
    float32 loss (torch: the input's dtype), as oa's cross_entropy does. Differentiable in input. Errors:
    oa.InvalidArgumentError naming the shapes, the dtype or the reduction; TypeError for size_average or reduce
    (deprecated in torch); a class index outside [0, C) other than ignore_index raises oa.OutOfRangeError at the
    next synchronize() or host read (the index lives on the device)."""
    op = _PREFIX + "nll_loss"
    no_legacy_reduction(size_average, reduce, op)
    return _nll(input, target, weight, ignore_index, _reduction(reduction, op), op)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """torch.nn.functional.cross_entropy: logits [N, C] against int32 class indices [N], logits [N, C, d1, ...]
    against [N, d1, ...] or logits [C] against a target []; or float class probabilities of logits' shape
    (ignore_index does not apply). weight [C] scales each class's terms; with class indices 'mean' divides by the sum
    of the kept targets' weights (as nll_loss), with probabilities by the number of positions. label_smoothing in
    [0, 1] mixes the target with the uniform distribution, as torch. Without weight this is one op of oa's engine
    (oa::ml::cross_entropy); with it, log_softmax and nll_loss. Errors: oa.InvalidArgumentError for shapes, dtypes,
    an unknown reduction or label_smoothing outside [0, 1]; TypeError for size_average or reduce (deprecated in
    torch); a class index outside [0, C) other than ignore_index raises oa.OutOfRangeError at the next
    synchronize() or host read (the indices live on the device)."""
    op = _PREFIX + "cross_entropy"
    no_legacy_reduction(size_average, reduce, op)
    _require_floating(input, op, "input", "logits")
    if isinstance(target, _oa.Tensor):
        _require_target_shape(input, target, op, probabilities=True)
    if weight is None:
        return _f.cross_entropy(input, target, ignore_index=ignore_index, reduction=reduction,
                                label_smoothing=label_smoothing)
    _reduction(reduction, op)
    if not 0.0 <= label_smoothing <= 1.0:
        raise _oa.InvalidArgumentError(f"{op}: label_smoothing {label_smoothing} must be in [0, 1]")
    class_axis = 1 if input.dim() >= 2 else 0
    classes = input.shape[class_axis] if input.dim() else 0
    if not isinstance(weight, _oa.Tensor) or weight.shape != (classes,):
        raise _oa.InvalidArgumentError(f"{op}: weight {list(getattr(weight, 'shape', [type(weight).__name__]))} must "
                                       f"be a tensor of shape [C] = [{classes}] (input {list(input.shape)})")
    log_p = log_softmax(input, class_axis)
    class_weights = weight.reshape([classes if a == class_axis else 1 for a in range(input.dim())])
    if target.is_floating_point():
        q = target if label_smoothing == 0 else target * (1 - label_smoothing) + label_smoothing / classes
        terms = -(log_p * q * class_weights)
        if reduction == "none":
            return terms.sum(class_axis)
        return terms.sum() if reduction == "sum" else terms.sum() / (input.numel() // classes)
    nll = _nll(log_p, target, weight, ignore_index, reduction, op)
    if label_smoothing == 0:
        return nll
    _, _, valid, _, weights = _class_targets(input, target, weight, ignore_index, op)
    smooth = _oa.where(valid, -(log_p * class_weights).sum(class_axis).reshape(valid.shape), 0.0)
    if reduction == "none":
        smooth = smooth.reshape(target.shape)
    else:
        smooth = smooth.sum() if reduction == "sum" else smooth.sum() / weights.sum()
    return (1 - label_smoothing) * nll + smooth * (label_smoothing / classes)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """torch.nn.functional.l1_loss: |input - target| (in their promoted dtype) broadcast to one shape, with torch's
    UserWarning when the shapes differ; its mean ('mean'), sum ('sum') or the elementwise values ('none').
    Differentiable (the gradient at input == target is 0, as torch). Errors: oa.InvalidArgumentError naming both
    shapes when they do not broadcast, for 'mean' of two integer tensors (as torch) or an unknown reduction;
    TypeError for size_average or reduce."""
    op = _PREFIX + "l1_loss"
    no_legacy_reduction(size_average, reduce, op)
    input, target = _pointwise_operands(input, target, _reduction(reduction, op), op)
    return _reduce((input - target).abs(), reduction)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean"):
    """torch.nn.functional.mse_loss: (input - target)^2 broadcast to one shape, with torch's UserWarning when the
    shapes differ; its mean ('mean'), sum ('sum') or the elementwise values ('none'). Two float32 tensors take oa's
    mse_loss op; other dtypes compute in their promoted dtype (float16 stays float16, as torch). Differentiable.
    Errors: l1_loss's."""
    op = _PREFIX + "mse_loss"
    no_legacy_reduction(size_average, reduce, op)
    input, target = _pointwise_operands(input, target, _reduction(reduction, op), op)
    if input.dtype == target.dtype == _oa.dtype.float32:
        return _f.mse_loss(input, target, reduction=reduction)
    difference = input - target
    return _reduce(difference * difference, reduction)


def _huber(input, target, delta):
    """torch's Huber terms of the difference d: d^2 / 2 where |d| < delta, else delta (|d| - delta / 2)."""
    difference = input - target
    size = difference.abs()
    return _oa.where(size < delta, 0.5 * difference * difference, delta * (size - 0.5 * delta))


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """torch.nn.functional.smooth_l1_loss: 0.5 d^2 / beta where |d| < beta, else |d| - beta / 2, for d = input -
    target broadcast to one shape (with torch's UserWarning when the shapes differ); beta 0 is l1_loss. Reduced as
    l1_loss. Differentiable (continuous at |d| = beta; 0 at d = 0). Errors: l1_loss's, and oa.InvalidArgumentError
    for a negative beta."""
    op = _PREFIX + "smooth_l1_loss"
    no_legacy_reduction(size_average, reduce, op)
    if beta < 0:
        raise _oa.InvalidArgumentError(f"{op}: smooth_l1_loss does not support negative values for beta ({beta})")
    input, target = _pointwise_operands(input, target, _reduction(reduction, op), op)
    if beta == 0:
        return _reduce((input - target).abs(), reduction)
    return _reduce(_huber(input, target, beta) / beta, reduction)


def huber_loss(input, target, reduction="mean", delta=1.0):
    """torch.nn.functional.huber_loss: 0.5 d^2 where |d| < delta, else delta (|d| - delta / 2) (smooth_l1_loss
    times beta = delta), broadcast and reduced as smooth_l1_loss. Differentiable. Errors: l1_loss's, and
    oa.InvalidArgumentError for delta <= 0."""
    op = _PREFIX + "huber_loss"
    if delta <= 0:
        raise _oa.InvalidArgumentError(f"{op}: huber_loss does not support non-positive values for delta ({delta})")
    input, target = _pointwise_operands(input, target, _reduction(reduction, op), op)
    return _reduce(_huber(input, target, delta), reduction)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """torch.nn.functional.kl_div: input log-probabilities, target probabilities (log-probabilities with
    log_target); pointwise target (log target - input), 0 where target is 0 (exp(target) (target - input) with
    log_target), broadcast together. reduction 'mean' is the mean over every element (with torch's UserWarning that
    'batchmean' is KL divergence's), 'batchmean' the sum divided by input.shape[0], 'sum', 'none'. Differentiable in
    input and target. Errors: oa.InvalidArgumentError for an integer or bool input or an unknown reduction; TypeError
    for size_average or reduce."""
    op = _PREFIX + "kl_div"
    no_legacy_reduction(size_average, reduce, op)
    if reduction not in ("none", "mean", "sum", "batchmean"):
        raise _oa.InvalidArgumentError(f"{op}: reduction must be 'none', 'mean', 'batchmean' or 'sum', not "
                                       f"{reduction!r}")
    _require_floating(input, op, "input", "log-probabilities")
    if log_target:
        losses = target.exp() * (target - input)
    else:
        positive = target > 0
        losses = _oa.where(positive, target * _oa.where(positive, target, 1.0).log(), 0.0) - target * input
    if reduction == "mean":
        warnings.warn("reduction: 'mean' divides the total loss by both the batch size and the support size."
                      "'batchmean' divides only by the batch size, and aligns with the KL div math definition."
                      "'mean' will be changed to behave the same as 'batchmean' in the next major release.",
                      UserWarning, stacklevel=2)
    if reduction == "batchmean":
        return losses.sum() / input.shape[0] if input.dim() else losses.sum()
    return _reduce(losses, reduction)


def cosine_similarity(x1, x2, dim=1, eps=1e-8):
    """torch.nn.functional.cosine_similarity: sum(x1 / max(||x1||, eps) * x2 / max(||x2||, eps)) along dim, x1
    and x2 broadcast together first, as torch (the result lacks dim; integers computed in float32); the eps floor
    does not stop the norms' gradients, as torch's in-place clamp under no_grad. Differentiable. Errors:
    oa.InvalidArgumentError naming both shapes when they do not broadcast, or dim out of range."""
    op = _PREFIX + "cosine_similarity"
    shape = broadcast_shape([x1.shape, x2.shape])
    if shape is None:
        raise _oa.InvalidArgumentError(f"{op}: x1 {list(x1.shape)} and x2 {list(x2.shape)} do not broadcast")

    def unit(x):
        x = floating(x).expand(*shape)
        norm = x.norm(2, dim, keepdim=True)
        return x / (norm + (norm.clamp(min=eps) - norm).detach())

    return (unit(x1) * unit(x2)).sum(dim)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """torch.nn.functional.binary_cross_entropy_with_logits: -w [pos_weight t log sigmoid(x) + (1 - t)
    log(1 - sigmoid(x))] for logits x and targets t in [0, 1] of one shape, computed in a stable form
    (1 - t) x + (1 + (pos_weight - 1) t) softplus(-x), finite for any finite x, whose gradient in x,
    (1 - t) - (1 + (pos_weight - 1) t) sigmoid(-x), is right everywhere (sigmoid(0) - t at x = 0); weight and
    pos_weight (per class, the last axis; any dtype) broadcast to x's shape. Reduced as l1_loss. Differentiable in x
    (and t). Errors: oa.InvalidArgumentError naming the shapes (a weight or pos_weight that does not broadcast to
    x's) or the reduction, and for an integer or bool x or t (as torch); TypeError for size_average or reduce."""
    op = _PREFIX + "binary_cross_entropy_with_logits"
    no_legacy_reduction(size_average, reduce, op)
    _reduction(reduction, op)
    _require_floating(input, op, "input", "logits")
    _require_floating(target, op, "target", "probabilities in [0, 1]")
    if input.shape != target.shape:
        raise _oa.InvalidArgumentError(f"{op}: target {list(target.shape)} must have input's shape {list(input.shape)}")
    for name, w in (("weight", weight), ("pos_weight", pos_weight)):
        if w is not None and (w.dim() > input.dim() or any(
                a not in (1, b) for a, b in zip(reversed(w.shape), reversed(input.shape)))):
            raise _oa.InvalidArgumentError(f"{op}: {name} {list(w.shape)} must broadcast to input's shape "
                                           f"{list(input.shape)} (extents equal or 1, from the last axis)")
    scale = 1 if pos_weight is None else 1 + (pos_weight - 1) * target
    # -log sigmoid(x) = softplus(-x): exact for large |x| (x itself past 20), its gradient -sigmoid(-x) right at 0 too.
    losses = (1 - target) * input + scale * softplus(-input)
    return _reduce(losses if weight is None else losses * weight, reduction)


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    """torch.nn.functional.embedding: int32 indices input [...] into weight [V, D] -> [..., D]. padding_idx (in
    [-V, V)): positions holding it still read that row but give it no gradient, as torch. An index outside [0, V)
    raises oa.OutOfRangeError at a later synchronize or host read (found on the device). Errors:
    oa.InvalidArgumentError for a padding_idx out of range, and for max_norm, scale_grad_by_freq=True or
    sparse=True (not supported)."""
    op = _PREFIX + "embedding"
    unsupported_embedding_options(max_norm, scale_grad_by_freq, sparse, op)
    out = _f.embedding(input, weight)
    if padding_idx is None:
        return out
    index = padding_index(padding_idx, weight.shape[0], op)
    return _oa.where((input != index).unsqueeze(-1), out, out.detach())


def padding_index(padding_idx, num_embeddings, op):
    """padding_idx in [0, num_embeddings) (negative counts from the end); oa.InvalidArgumentError naming `op` else."""
    if isinstance(padding_idx, bool) or not isinstance(padding_idx, (int, np.integer)) or not (
            -num_embeddings <= padding_idx < num_embeddings):
        raise _oa.InvalidArgumentError(f"{op}: padding_idx {padding_idx!r} must be an int within num_embeddings "
                                       f"{num_embeddings} ([-{num_embeddings}, {num_embeddings}))")
    return int(padding_idx) % num_embeddings


def unsupported_embedding_options(max_norm, scale_grad_by_freq, sparse, op):
    """Refuses the embedding options oa lacks: oa.InvalidArgumentError naming `op` and the argument."""
    for name, value, unset in (("max_norm", max_norm, None), ("scale_grad_by_freq", scale_grad_by_freq, False),
                               ("sparse", sparse, False)):
        if value != unset:
            raise _oa.InvalidArgumentError(f"{op}: {name}={value!r} is not supported")


# interpolate's modes, with the input rank each linear mode needs (the nearest modes take 3-, 4- and 5-D inputs).
_INTERPOLATE_RANKS = {"nearest": None, "nearest-exact": None, "linear": 3, "bilinear": 4, "trilinear": 5}


def _spatial(value, k, op, arg, kind, shape):
    """interpolate's size (kind int) or scale_factor (kind float): one number for every spatial axis or a sequence
    of k; TypeError or oa.InvalidArgumentError naming `op`, `arg` and input's shape."""
    number = (int, np.integer) if kind is int else (int, float, np.integer, np.floating)
    if isinstance(value, number) and not isinstance(value, bool):
        return [kind(value)] * k
    if not isinstance(value, (tuple, list)) or not all(
            isinstance(v, number) and not isinstance(v, bool) for v in value):
        raise TypeError(f"{op}: {arg} must be {'an int' if kind is int else 'a float'} or a sequence of them, not "
                        f"{value!r}")
    if len(value) != k:
        raise _oa.InvalidArgumentError(f"{op}: input {shape} has {k} spatial axes but {arg} {list(value)} has "
                                       f"{len(value)} (input [N, C, d1, ..., dk] takes k values)")
    return [kind(v) for v in value]


def _nearest_source(n, m, scale, exact):
    """torch's source positions for output positions 0..m-1 of an axis of n (upsample_nearest / _nearest_exact):
    floor(dst * r) or floor((dst + 0.5) * r) in float32, at most n - 1, with r = 1 / scale_factor where given and
    n / m else."""
    if not exact and m in (n, 2 * n):
        return np.arange(m) * n // m
    r = np.float32(1.0 / scale) if scale else np.float32(n) / np.float32(m)
    dst = np.arange(m, dtype=np.float32) + np.float32(0.5 if exact else 0.0)
    return np.minimum(np.floor(dst * r).astype(np.int64), n - 1)


def _linear_source(n, m, scale, align_corners):
    """torch's two source positions and weights for output positions 0..m-1 of an axis of n (upsample_linear1d,
    bilinear2d, trilinear3d), in float32: src = r dst with align_corners (r = (n - 1) / (m - 1)), else
    src = max(r (dst + 0.5) - 0.5, 0) (r = 1 / scale_factor where given, n / m else); i0 = min(floor(src), n - 1),
    i1 = i0 + 1 within the axis, w1 = src - i0 in [0, 1], w0 = 1 - w1."""
    f32 = np.float32
    dst = np.arange(m, dtype=f32)
    if align_corners:
        src = (f32(n - 1) / f32(m - 1) if m > 1 else f32(0)) * dst
    else:
        r = f32(1.0 / scale) if scale else f32(n) / f32(m)
        src = np.maximum(r * (dst + f32(0.5)) - f32(0.5), f32(0))
    i0 = np.minimum(np.floor(src).astype(np.int64), n - 1)
    w1 = np.clip(src - i0.astype(f32), f32(0), f32(1))
    return i0, np.where(i0 < n - 1, i0 + 1, i0), f32(1) - w1, w1


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None,
                antialias=False):
    """torch.nn.functional.interpolate: input [N, C, L], [N, C, H, W] or [N, C, D, H, W] resampled along its spatial
    axes to `size` (an int for every axis or a sequence of one per axis) or to floor(extent * scale_factor) (a float
    or a sequence), torch's coordinate rules to the letter (float32 source positions):
    - 'nearest' (any of the three ranks): src = min(floor(dst * r), n - 1), r = 1 / scale_factor where given and
      recompute_scale_factor is not True, n / out else (torch's legacy nearest; as torch's CPU kernel, an output of
      n copies and one of 2n takes src = dst // 2, whatever scale_factor gave it); 'nearest-exact':
      floor((dst + 0.5) * r). Any dtype.
    - 'linear' (3-D), 'bilinear' (4-D), 'trilinear' (5-D): the weighted mean of the two neighbours along each axis
      in turn; align_corners=False (the default, None) maps src = max((dst + 0.5) * r - 0.5, 0), True
      src = dst * (n - 1) / (out - 1). Floating dtypes, computed in float32 and returned in input's dtype.
    Differentiable (index_select gathers along each axis and elementwise weights). Errors: TypeError for an input
    that is not an oa.Tensor or a size / scale_factor of another type; oa.InvalidArgumentError naming the argument
    and input's shape for both or neither of size and scale_factor, a sequence of another length than the spatial
    axes, an output or input extent below 1, an unknown mode ('bicubic' and 'area' are not supported), a linear
    mode with an input of another rank or an integer or bool dtype, align_corners with a nearest mode, or
    antialias=True."""
    op = _PREFIX + "interpolate"
    if not isinstance(input, _oa.Tensor):
        raise TypeError(f"{op}: input must be an oa.Tensor, not {type(input).__name__}")
    shape = list(input.shape)
    if mode not in _INTERPOLATE_RANKS:
        raise _oa.InvalidArgumentError(f"{op}: mode {mode!r} is not supported (oa has 'nearest', 'nearest-exact', "
                                       "'linear', 'bilinear' and 'trilinear')")
    linear = _INTERPOLATE_RANKS[mode]
    if input.dim() not in (3, 4, 5) or linear not in (None, input.dim()):
        needs = f"a {linear}-D input" if linear else "a 3-D, 4-D or 5-D input"
        raise _oa.InvalidArgumentError(f"{op}: mode {mode!r} needs {needs} ([N, C, d1, ...]), got input {shape}")
    if align_corners is not None and not linear:
        raise _oa.InvalidArgumentError(f"{op}: align_corners can only be set with the interpolating modes 'linear', "
                                       f"'bilinear' and 'trilinear', not {mode!r}")
    if antialias:
        raise _oa.InvalidArgumentError(f"{op}: antialias=True is not supported")
    if linear and not input.is_floating_point():
        raise _oa.InvalidArgumentError(f"{op}: mode {mode!r} needs a floating input, not {input.dtype.name}")
    k = input.dim() - 2
    if (size is None) == (scale_factor is None):
        raise _oa.InvalidArgumentError(f"{op}: give exactly one of size and scale_factor (input {shape})")
    if size is not None:
        out, scales = _spatial(size, k, op, "size", int, shape), [None] * k
    else:
        scales = _spatial(scale_factor, k, op, "scale_factor", float, shape)
        out = [math.floor(n * f) for n, f in zip(shape[2:], scales)]
        if recompute_scale_factor:
            scales = [None] * k
    if min(out + shape[2:]) < 1:
        raise _oa.InvalidArgumentError(f"{op}: input {shape} and output spatial extents {out} must be >= 1")
    y = input if not linear or input.dtype == _oa.dtype.float32 else input.float()
    for a, (n, m, scale) in enumerate(zip(shape[2:], out, scales), start=2):
        index = lambda i: _oa.tensor(i.astype(np.int32), engine=input.engine)  # noqa: E731
        if not linear:
            y = y.index_select(a, index(_nearest_source(n, m, scale, mode == "nearest-exact")))
            continue
        i0, i1, w0, w1 = _linear_source(n, m, scale, align_corners)
        near = y.index_select(a, index(i0))
        if np.any(w1 != 0):
            weight = lambda w: _oa.tensor(w.reshape([m] + [1] * (input.dim() - 1 - a)), engine=input.engine)  # noqa: E731
            near = near * weight(w0) + y.index_select(a, index(i1)) * weight(w1)
        y = near
    return y.to(input.dtype) if y.dtype != input.dtype else y
