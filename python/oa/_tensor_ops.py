"""torch's tensor functions that oa composes in Python from its C++ ops (autograd flows through them):
flip, repeat, unbind, linspace, randint, sort, argsort, and Tensor.retain_grad."""
import numpy as np

from . import _oa


def axis(x, dim, op, arg="dim"):
    """dim as an axis of x in [0, x.ndim) (negative counts from the end); TypeError for a non-int,
    oa.InvalidArgumentError naming `op`, the argument and x's shape for one out of range."""
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)):
        raise TypeError(f"{op}: {arg} must be an int, not {type(dim).__name__}")
    rank = max(x.dim(), 1)
    if not -rank <= dim < rank:
        raise _oa.InvalidArgumentError(f"{op}: {arg} {dim} is out of range for x of shape {list(x.shape)} (expected "
                                       f"an axis in [{-rank}, {rank - 1}])")
    return int(dim) % rank


def sizes(args, op, arg):
    """Ints given one by one (f(2, 3)) or as one sequence (f((2, 3))) as a list; TypeError naming `op` and `arg`."""
    if len(args) == 1 and isinstance(args[0], (tuple, list)):
        args = args[0]
    if not all(isinstance(a, (int, np.integer)) and not isinstance(a, bool) for a in args):
        raise TypeError(f"{op}: {arg} must be ints or one sequence of ints, not {args!r}")
    return [int(a) for a in args]


def indices(values, engine):
    """Host ints (any shape) as a 1-d int32 index tensor on engine."""
    return _oa.tensor(np.asarray(values, np.int64).reshape(-1), dtype=_oa.dtype.int32, engine=engine)


def flip(input, dims):
    """torch.flip(input, dims): input with the order of its elements reversed along each axis in dims (an int or a
    sequence of ints); a new tensor of input's shape and dtype (any), differentiable. Errors: TypeError for a dim
    that is not an int; oa.InvalidArgumentError naming the dim for one out of range or given twice."""
    op = "oa.flip"
    axes = [axis(input, d, op, "dims") for d in ((dims,) if isinstance(dims, (int, np.integer)) else dims)]
    if len(set(axes)) != len(axes):
        raise _oa.InvalidArgumentError(f"{op}: dims {list(dims)} name an axis more than once (x of shape "
                                       f"{list(input.shape)})")
    y = input
    for a in axes:
        n = input.shape[a]
        if n > 1:
            y = y.index_select(a, _oa.arange(n - 1, -1, -1, dtype=_oa.dtype.int32, engine=input.engine))
    return y if y is not input else input.clone()


def tensor_flip(self, *dims):
    """x.flip(*dims) or x.flip(dims): oa.flip(x, dims) (torch.Tensor.flip)."""
    return flip(self, sizes(dims, "oa.Tensor.flip", "dims"))


def tensor_repeat(self, *repeats):
    """x.repeat(*repeats) or x.repeat(repeats) (torch.Tensor.repeat): x tiled repeats[i] times along axis i, x's
    shape first padded with leading 1s to len(repeats) axes ([2, 3].repeat(2, 1, 2) -> [2, 2, 6]); a new tensor of
    x's dtype, differentiable (the gradient sums over the copies). Errors: TypeError for repeats that are not ints;
    oa.InvalidArgumentError for fewer repeats than x has axes, or a negative one."""
    op = "oa.Tensor.repeat"
    repeats = sizes(repeats, op, "repeats")
    if len(repeats) < self.dim():
        raise _oa.InvalidArgumentError(f"{op}: {len(repeats)} repeats {repeats} for x of shape {list(self.shape)}: the "
                                       "number of repeats can not be smaller than the number of axes")
    if any(r < 0 for r in repeats):
        raise _oa.InvalidArgumentError(f"{op}: repeats {repeats} must be >= 0")
    shape = [1] * (len(repeats) - self.dim()) + list(self.shape)
    interleaved = [n for pair in zip([1] * len(shape), shape) for n in pair]
    copies = [n for pair in zip(repeats, [1] * len(shape)) for n in pair]
    # A broadcasting product with ones makes the copies in one dispatch, in a storage of the result's own.
    tiled = self.reshape(interleaved) * _oa.ones(copies, dtype=self.dtype, engine=self.engine)
    return tiled.reshape([r * n for r, n in zip(repeats, shape)])


def unbind(input, dim=0):
    """torch.unbind(input, dim=0): the tuple of input's slices along dim, each without that axis (copies, as
    x[key]: in-place ops on them raise oa.FailedPreconditionError); differentiable. oa.InvalidArgumentError naming
    dim for one out of range (a 0-d input has none)."""
    if input.dim() == 0:
        raise _oa.InvalidArgumentError("oa.unbind: a 0-d tensor has no axis to unbind")
    a = axis(input, dim, "oa.unbind")
    if input.shape[a] == 0:
        return ()
    return tuple(part.squeeze(a) for part in _oa.split(input, 1, a))


def tensor_unbind(self, dim=0):
    """x.unbind(dim=0): oa.unbind(x, dim) (torch.Tensor.unbind)."""
    return unbind(self, dim)


def linspace(start, end, steps, *, dtype=None, requires_grad=False, engine=None):
    """torch.linspace(start, end, steps): steps values from start to end inclusive, evenly spaced, as torch computes
    them (the first half from start by (end - start) / (steps - 1), the rest back from end), in float64 on the host
    and copied to the device as dtype (float32 without one; int32 truncates toward zero). Errors: TypeError for a
    steps that is not an int; oa.InvalidArgumentError for a negative one."""
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)):
        raise TypeError(f"oa.linspace: steps must be an int, not {type(steps).__name__}")
    if steps < 0:
        raise _oa.InvalidArgumentError(f"oa.linspace: number of steps must be non-negative, got {steps}")
    start, end = float(start), float(end)
    i = np.arange(steps, dtype=np.float64)
    step = (end - start) / (steps - 1) if steps > 1 else 0.0
    # One step is start alone (torch); otherwise the first half counts from start, the rest back from end.
    values = np.where((i < steps // 2) | (steps == 1), start + i * step, end - (steps - 1 - i) * step)
    return _oa.tensor(values, dtype=dtype or _oa.dtype.float32, requires_grad=requires_grad, engine=engine)


def randint(*args, low=None, high=None, size=None, seed=None, dtype=None, requires_grad=False, engine=None):
    """torch.randint(high, size) or randint(low, high, size) (low 0 by default; keywords too): integers uniform on
    [low, high) of shape size (a sequence of ints), as dtype (int32 without one; torch: int64). Drawn on the host by
    NumPy's PCG64 from `seed` or, without one, the next seed of the stream oa.manual_seed restarts (so the same seed
    gives the same values everywhere), then copied to the device. Errors: TypeError for arguments of another form;
    oa.InvalidArgumentError for high <= low, bounds outside int32 or a negative extent."""
    op = "oa.randint"
    if len(args) == 3:
        low, high, size = args
    elif len(args) == 2:
        low, high = args if size is not None else (low, args[0])
        size = size if size is not None else args[1]
    elif len(args) == 1:
        low, high = (low, args[0]) if high is None else (args[0], high)
    elif args:
        raise TypeError(f"{op}: takes (high, size) or (low, high, size), got {len(args)} arguments")
    low = 0 if low is None else low
    if high is None or size is None:
        raise TypeError(f"{op}: high and size are required (randint(high, size) or randint(low, high, size))")
    for name, bound in (("low", low), ("high", high)):
        if isinstance(bound, bool) or not isinstance(bound, (int, np.integer)):
            raise TypeError(f"{op}: {name} must be an int, not {type(bound).__name__}")
    if not isinstance(size, (tuple, list)):
        raise TypeError(f"{op}: size must be a tuple of ints, not {type(size).__name__}")
    shape = sizes((size,), op, "size")
    if any(extent < 0 for extent in shape):
        raise _oa.InvalidArgumentError(f"{op}: size {list(shape)} has a negative extent")
    if high <= low:
        raise _oa.InvalidArgumentError(f"{op}: low {low} must be less than high {high}")
    if low < -2**31 or high > 2**31:
        raise _oa.InvalidArgumentError(f"{op}: [low, high) = [{low}, {high}) is outside int32, oa's integer dtype")
    values = np.random.default_rng(_oa._next_seed(seed)).integers(low, high, size=shape, dtype=np.int64)
    return _oa.tensor(values, dtype=dtype or _oa.dtype.int32, requires_grad=requires_grad, engine=engine)


def retain_grad(self):
    """torch.Tensor.retain_grad: nothing for a leaf (its .grad is kept anyway). A result with history raises
    NotImplementedError: oa's backward keeps the gradients of leaves only. To read the gradient of an intermediate
    y, continue the forward pass from a leaf copy of it, y_leaf = y.detach().requires_grad_(); after
    loss.backward(), y_leaf.grad holds it, and y.backward(y_leaf.grad) carries it on to the leaves before y."""
    if self.grad_fn is None:
        return
    raise NotImplementedError(
        f"oa.Tensor.retain_grad: this tensor is the result of {self.grad_fn}, and oa's backward keeps the gradients "
        "of leaves only. Continue the forward pass from y_leaf = y.detach().requires_grad_() instead: after "
        "backward, y_leaf.grad holds the gradient, and y.backward(y_leaf.grad) carries it on to the leaves before y")


def sort(input, dim=-1, descending=False, stable=False):
    """torch.sort(input, dim=-1, descending=False, stable=False): the named tuple oa.return_types.sort (values,
    indices), input's elements along dim in increasing (descending=True: decreasing) order and their int32 positions
    along dim (torch: int64), both of input's shape. The order is always stable (equal values, -0 and +0 among them,
    keep their order), so stable=False gives what stable=True does; NaN counts as larger than every number (last
    ascending, first descending), as torch. A 0-d input gives (input's copy, 0). Any dtype, each ordered in its own
    order (int32 exactly; bool as int32). Gradient to input through the values (scattered back to where each came
    from), as torch. A composition: oa.topk with k = the extent of dim, whose cost is O(N^2) for a line of N elements:
    meant for N up to a few thousand. Errors: TypeError for an input that is not an oa.Tensor or a dim that is not an
    int; oa.InvalidArgumentError naming dim and input's shape for one out of range."""
    return sorted_along(input, dim, descending, stable, "oa.sort")


def sorted_along(input, dim, descending, stable, op):
    """sort's (values, indices) for `op` (oa.sort, oa.argsort and their methods)."""
    if not isinstance(input, _oa.Tensor):
        raise TypeError(f"{op}: input must be an oa.Tensor, not {type(input).__name__}")
    for name, flag in (("descending", descending), ("stable", stable)):
        if not isinstance(flag, (bool, np.bool_)):
            raise TypeError(f"{op}: {name} must be a bool, not {type(flag).__name__}")
    a = axis(input, dim, op)
    if input.dim() == 0:
        return _oa.return_types.sort(input.clone(), _oa.zeros([], dtype=_oa.dtype.int32, engine=input.engine))
    n, largest = input.shape[a], bool(descending)
    if input.dtype == _oa.dtype.bool:  # topk orders the numeric dtypes
        values, indices = _oa.topk(input.int(), n, a, largest)
        return _oa.return_types.sort(values.bool(), indices)
    return _oa.return_types.sort(*_oa.topk(input, n, a, largest))


def tensor_sort(self, dim=-1, descending=False, stable=False):
    """x.sort(dim=-1, descending=False, stable=False): oa.sort(x, ...) (torch.Tensor.sort)."""
    return sorted_along(self, dim, descending, stable, "oa.Tensor.sort")


def argsort(input, dim=-1, descending=False, stable=False):
    """torch.argsort(input, dim=-1, descending=False, stable=False): oa.sort(...).indices, the int32 positions that
    sort input along dim (stable always; see oa.sort for the order, dtypes, cost and errors)."""
    return sorted_along(input, dim, descending, stable, "oa.argsort").indices


def tensor_argsort(self, dim=-1, descending=False, stable=False):
    """x.argsort(dim=-1, descending=False, stable=False): oa.argsort(x, ...) (torch.Tensor.argsort)."""
    return sorted_along(self, dim, descending, stable, "oa.Tensor.argsort").indices


def _integer(name):
    """Tensor.int() and Tensor.long() as torch's, in int32 (oa's one integer dtype; torch's long is int64)."""

    def convert(self):
        return self.to(_oa.dtype.int32)
    convert.__name__ = name
    convert.__doc__ = (f"torch.Tensor.{name}(): an int32 copy of the tensor (oa's integer dtype is int32): floats "
                       "truncate toward zero, saturating at the int32 range, NaN giving 0 (as CUDA's conversion; torch "
                       "leaves those cases undefined); bool gives 0 and 1.")
    return convert


tensor_int = _integer("int")
tensor_long = _integer("long")


def multinomial(input, num_samples, replacement=False):
    """torch.multinomial: num_samples int32 class indices per row of input ([C] or [N, C] non-negative weights, not
    necessarily summing to 1), drawn from oa.manual_seed's stream; without replacement each row's indices are
    distinct (the Gumbel top-k of log weights), with replacement independent draws (uniforms against the cumulative
    distribution). Errors: oa.InvalidArgumentError naming the shapes for another rank, an integer input or, without
    replacement, more samples than classes."""
    op = "oa.multinomial"
    if input.dim() not in (1, 2) or not input.is_floating_point():
        raise _oa.InvalidArgumentError(f"{op}: input {input.dtype.name} {list(input.shape)} must be float weights "
                                       "[C] or [N, C]")
    classes = input.shape[-1]
    if num_samples < 1 or (not replacement and num_samples > classes):
        raise _oa.InvalidArgumentError(f"{op}: cannot sample {num_samples} samples from {classes} classes "
                                       f"{'with' if replacement else 'without'} replacement (input "
                                       f"{list(input.shape)})")
    weights = input.float()
    if not replacement:
        uniform = _oa.rand(list(weights.shape), engine=input.engine)
        return (weights.log() - (-uniform.log()).log()).topk(num_samples, dim=-1).indices
    cdf = (weights / weights.sum(-1, keepdim=True)).cumsum(-1).unsqueeze(-2)
    uniform = _oa.rand([*weights.shape[:-1], num_samples, 1], engine=input.engine)
    return (cdf <= uniform).sum(-1).clamp(max=classes - 1)
