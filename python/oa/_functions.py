"""torch functions and Tensor methods composed in Python over oa's C++ ops (autograd flows through them where torch
has gradients): predicates (isnan, isinf, isfinite, isclose, allclose, equal), logical ops, broadcasting (broadcast_to,
broadcast_tensors, meshgrid), rearrangements (roll, diag, repeat_interleave, hstack, vstack), scatter,
scatter_reduce, scatter_add_, index_add, cumprod, cumsum, lerp, outer, trace, creation (empty, as_tensor,
rand_like, randn_like, Tensor.new_*), products (dot, addmm, baddbmm), unflatten, movedim, nan_to_num, and Tensor.type,
double, cpu, is_contiguous and data (read and assigned)."""
import math

import numpy as np

from . import _oa, _tensor_ops
from ._grad_mode import no_grad
from ._indexing import written
from ._tensor_ops import axis, indices, sizes


def floating(x):
    """x, or x as float32 when it is int32 or bool."""
    return x if x.is_floating_point() else x.float()


def isnan(input):
    """torch.isnan: a bool tensor, True where input is NaN (never for int32 and bool)."""
    return input != input


def isinf(input):
    """torch.isinf: a bool tensor, True where input is +inf or -inf (never for int32 and bool)."""
    if not input.is_floating_point():
        return _oa.zeros_like(input, dtype=_oa.dtype.bool)
    return input.abs() == float("inf")


def isfinite(input):
    """torch.isfinite: a bool tensor, True where input is neither NaN nor infinite (always for int32 and bool)."""
    if not input.is_floating_point():
        return _oa.ones_like(input, dtype=_oa.dtype.bool)
    return (input - input) == 0  # NaN for NaN and the infinities


def isclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """torch.isclose: a bool tensor (broadcast shape), True where |input - other| <= atol + rtol * |other|, or the
    two are equal (infinities of one sign), or with equal_nan both NaN. int32 and bool compare as float32."""
    a = floating(input)
    b = floating(other) if isinstance(other, _oa.Tensor) else _oa.full_like(a, other)
    close = ((a - b).abs() <= atol + rtol * b.abs()) | (a == b)
    return close | (isnan(a) & isnan(b)) if equal_nan else close


def allclose(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """torch.allclose: whether isclose holds everywhere, a Python bool (a synchronization)."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


def equal(input, other):
    """torch.equal: True when input and other have one shape and equal elements (NaN equals nothing), a Python bool
    (a synchronization)."""
    return list(input.shape) == list(other.shape) and bool((input == other).all())


def broadcast_shape(shapes):
    """torch.broadcast_shapes of `shapes` as a list, or None when they do not broadcast together."""
    try:
        return list(np.broadcast_shapes(*[tuple(s) for s in shapes]))
    except ValueError:
        return None


def broadcast_to(input, size):
    """torch.broadcast_to(input, size): input expanded to size (-1 keeps an extent), a copy (oa's expand copies);
    differentiable. oa.InvalidArgumentError naming both shapes when input does not broadcast to size."""
    size = sizes((size,), "oa.broadcast_to", "size")
    lead = len(size) - input.dim()
    target = [n if n != -1 or k < lead else input.shape[k - lead] for k, n in enumerate(size)]
    if lead < 0 or broadcast_shape([input.shape, target]) != target:
        raise _oa.InvalidArgumentError(f"oa.broadcast_to: input of shape {list(input.shape)} cannot be broadcast "
                                       f"to size {size}")
    return input.expand(target)


def broadcast_tensors(*tensors):
    """torch.broadcast_tensors: the tensors expanded to their broadcast shape (copies), as a tuple; differentiable."""
    shape = broadcast_shape([t.shape for t in tensors])
    if shape is None:
        raise _oa.InvalidArgumentError(f"oa.broadcast_tensors: shapes {', '.join(str(list(t.shape)) for t in tensors)} "
                                       "cannot be broadcast together")
    return tuple(t.expand(shape) for t in tensors)


def meshgrid(*tensors, indexing="ij"):
    """torch.meshgrid(*tensors, indexing='ij'): for N 1-d tensors of sizes s1..sN, N tensors of shape [s1, ..., sN]
    (indexing='xy': the first two extents swapped, as NumPy's); differentiable. Errors: TypeError for another
    indexing; oa.InvalidArgumentError for an input that is not 1-d (0-d counts as 1 element, as torch)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing not in ("ij", "xy"):
        raise TypeError(f"oa.meshgrid: indexing must be 'ij' or 'xy', not {indexing!r}")
    for k, t in enumerate(tensors):
        if t.dim() > 1:
            raise _oa.InvalidArgumentError(f"oa.meshgrid: expects 0-d or 1-d tensors, but tensors[{k}] has shape "
                                           f"{list(t.shape)}")
    flat = [t.reshape([-1]) for t in tensors]
    swap = indexing == "xy" and len(flat) >= 2
    if swap:
        flat[0], flat[1] = flat[1], flat[0]
    shape = [t.shape[0] for t in flat]
    grids = [t.reshape([-1 if j == k else 1 for j in range(len(flat))]).expand(shape) for k, t in enumerate(flat)]
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)


def roll(input, shifts, dims=None):
    """torch.roll(input, shifts, dims=None): input's elements moved shifts places along dims (ints or sequences of
    one length; without dims, over the flattened tensor, reshaped back), wrapping around; differentiable. Errors:
    oa.InvalidArgumentError naming the argument for shifts and dims of different lengths or a dim out of range."""
    op = "oa.roll"
    shifts = [shifts] if isinstance(shifts, (int, np.integer)) else list(shifts)
    if dims is None:
        if len(shifts) != 1:
            raise _oa.InvalidArgumentError(f"{op}: without dims, shifts must be one int, not {shifts}")
        return roll(input.reshape([-1]), shifts, 0).reshape(list(input.shape))
    dims = [dims] if isinstance(dims, (int, np.integer)) else list(dims)
    if len(shifts) != len(dims):
        raise _oa.InvalidArgumentError(f"{op}: shifts {shifts} and dims {dims} must have the same length")
    y = input
    for shift, dim in zip(shifts, dims):
        a = axis(input, dim, op, "dims")
        n = input.shape[a]
        if n and shift % n:
            y = y.index_select(a, indices((np.arange(n) - shift % n) % n, input.engine))
    return y if y is not input else input.clone()


def diag(input, diagonal=0):
    """torch.diag(input, diagonal=0): for a 1-d input of n elements, the square matrix of n + |diagonal| with input
    on that diagonal (0 elsewhere); for a 2-d input, that diagonal as a 1-d tensor. Differentiable. Errors:
    oa.InvalidArgumentError naming the shape for another rank."""
    d = int(diagonal)
    if input.dim() == 2:
        rows, cols = input.shape
        r = np.arange(max(0, -d), min(rows, cols - d)) if min(rows, cols - d) > max(0, -d) else np.arange(0)
        return input.reshape([-1]).index_select(0, indices(r * cols + r + d, input.engine))
    if input.dim() != 1:
        raise _oa.InvalidArgumentError(f"oa.diag: input must be 1-d or 2-d, not of shape {list(input.shape)}")
    n = input.shape[0]
    m = n + abs(d)
    row, col = np.indices((m, m))
    on = col - row == d
    source = np.where(on, np.minimum(row, col), 0)
    if n == 0:
        return _oa.zeros([m, m], dtype=input.dtype, engine=input.engine)
    values = input.index_select(0, indices(source, input.engine)).reshape([m, m])
    return _oa.where(_oa.tensor(on, engine=input.engine), values, _oa.zeros([], dtype=input.dtype,
                                                                            engine=input.engine))


def outer(input, vec2):
    """torch.outer(input, vec2): the [n, m] products of 1-d input [n] and vec2 [m]; differentiable.
    oa.InvalidArgumentError naming the shapes when either is not 1-d."""
    if input.dim() != 1 or vec2.dim() != 1:
        raise _oa.InvalidArgumentError(f"oa.outer: input and vec2 must be 1-d, not of shapes {list(input.shape)} and "
                                       f"{list(vec2.shape)}")
    return input.reshape([-1, 1]) * vec2.reshape([1, -1])


def dot(input, other):
    """torch.dot: the sum of the products of 1-d input [n] and other [n] of one dtype, a 0-d tensor of it (int32
    exact, float16 and bfloat16 summed in float32); differentiable. oa.InvalidArgumentError naming the shapes or
    dtypes otherwise."""
    if input.dim() != 1 or other.dim() != 1 or input.shape != other.shape:
        raise _oa.InvalidArgumentError(f"oa.dot: input and other must be 1-d of one size, not of shapes "
                                       f"{list(input.shape)} and {list(other.shape)}")
    if input.dtype != other.dtype:
        raise _oa.InvalidArgumentError(f"oa.dot: expected both vectors to have same dtype, but found "
                                       f"{input.dtype.name} and {other.dtype.name}")
    return (input * other).sum()


def scaled_sum(input, product, beta, alpha, op):
    """torch's addmm family: beta input + alpha product, input broadcast to product's shape; beta 0 ignores input
    (its NaN and infinities too), as torch. oa.InvalidArgumentError naming `op` and the shapes when input does not
    broadcast to product's shape."""
    if broadcast_shape([input.shape, product.shape]) != list(product.shape):
        raise _oa.InvalidArgumentError(f"{op}: input {list(input.shape)} does not broadcast to the product's shape "
                                       f"{list(product.shape)}")
    scaled = product if alpha == 1 else product * alpha
    if beta == 0:
        return scaled
    return scaled + (input if beta == 1 else input * beta)


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    """torch.addmm: beta input + alpha (mat1 [n, m] @ mat2 [m, p]), input broadcast to [n, p] (beta 0 ignores it);
    float dtypes, as oa.mm; differentiable. Errors: oa.mm's, and oa.InvalidArgumentError for an input that does
    not broadcast to [n, p]."""
    return scaled_sum(input, _oa.mm(mat1, mat2), beta, alpha, "oa.addmm")


def baddbmm(input, batch1, batch2, *, beta=1, alpha=1):
    """torch.baddbmm: beta input + alpha (batch1 [b, n, m] @ batch2 [b, m, p]), input broadcast to [b, n, p] (beta 0
    ignores it); float dtypes, as oa.bmm; differentiable. Errors: oa.bmm's, and oa.InvalidArgumentError for an input
    that does not broadcast to [b, n, p]."""
    return scaled_sum(input, _oa.bmm(batch1, batch2), beta, alpha, "oa.baddbmm")


def unflatten(input, dim, sizes):
    """torch.unflatten / Tensor.unflatten(dim, sizes): axis dim split into the axes sizes (one of them may be -1:
    inferred), a reshape sharing input's storage. Errors: TypeError for sizes that are not ints;
    oa.InvalidArgumentError naming dim and the shapes for a dim out of range or sizes whose product is not the
    axis's extent."""
    op = "oa.unflatten"
    a = axis(input, dim, op)
    extents, n = _tensor_ops.sizes((sizes,), op, "sizes"), input.shape[a]
    known = math.prod(e for e in extents if e != -1)
    if extents.count(-1) == 1 and known and n % known == 0:
        extents = [n // known if e == -1 else e for e in extents]
    if not extents or math.prod(extents) != n or min(extents) < 0:
        raise _oa.InvalidArgumentError(f"{op}: Provided sizes {list(sizes)} don't multiply up to the size of dim {dim} "
                                       f"({n}) in the input tensor of shape {list(input.shape)}")
    return input.reshape(list(input.shape[:a]) + extents + list(input.shape[a + 1:]))


def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
    """torch.nan_to_num: a float input with NaN replaced by nan, +inf by posinf and -inf by neginf (None: the
    largest and the lowest finite value of input's dtype); int32 and bool are returned as copies. Differentiable:
    the gradient passes where input is finite, 0 elsewhere, as torch."""
    if not input.is_floating_point():
        return input.clone()
    largest = {_oa.dtype.float32: float(np.finfo(np.float32).max), _oa.dtype.float16: 65504.0,
               _oa.dtype.bfloat16: 3.3895313892515355e38}[input.dtype]
    posinf = largest if posinf is None else posinf
    neginf = -largest if neginf is None else neginf
    infinite = _oa.where(input > 0, posinf, neginf)
    return _oa.where(isnan(input), nan, _oa.where(isinf(input), infinite, input))


def movedim(input, source, destination):
    """torch.movedim / moveaxis: input with the axes source (an int or a sequence) moved to the positions
    destination (as many), the other axes keeping their order; a copy, as oa's permute. Errors: TypeError for a dim
    that is not an int; oa.InvalidArgumentError naming them for dims out of range, repeated, or unequal counts."""
    op = "oa.movedim"
    source, destination = ([source] if isinstance(source, (int, np.integer)) else list(source),
                           [destination] if isinstance(destination, (int, np.integer)) else list(destination))
    if len(source) != len(destination):
        raise _oa.InvalidArgumentError(f"{op}: Invalid source or destination dims: source ({source} dims) should "
                                       f"contain the same number of dims as destination ({destination} dims)")
    source = [axis(input, d, op, "source") for d in source]
    destination = [axis(input, d, op, "destination") for d in destination]
    if len(set(source)) != len(source) or len(set(destination)) != len(destination):
        raise _oa.InvalidArgumentError(f"{op}: repeated dim in source {source} or destination {destination}")
    rest = iter(a for a in range(input.dim()) if a not in source)
    moved = dict(zip(destination, source))
    return input.permute([moved[i] if i in moved else next(rest) for i in range(input.dim())])


def repeat_interleave(input, repeats, dim=None, *, output_size=None):
    """torch.repeat_interleave(input, repeats, dim=None): each element (each slice along dim; without dim, of the
    flattened input) repeated repeats times, repeats an int or one count per element (an int32 tensor or a list;
    a tensor is read back, a synchronization). Differentiable. Errors: oa.InvalidArgumentError naming the shapes
    for counts of another length than the axis, or a negative count."""
    op = "oa.repeat_interleave"
    if dim is None:
        input, a = input.reshape([-1]), 0
    else:
        a = axis(input, dim, op)
    n = input.shape[a] if input.dim() else 1
    counts = repeats.numpy() if isinstance(repeats, _oa.Tensor) else np.asarray(repeats)
    counts = np.broadcast_to(counts.reshape(-1), (n,)) if counts.size == 1 else counts.reshape(-1)
    if counts.size != n:
        raise _oa.InvalidArgumentError(f"{op}: repeats must have the same size as input along dim: {counts.size} "
                                       f"repeats for input of shape {list(input.shape)} along dim {a}")
    if (counts < 0).any():
        raise _oa.InvalidArgumentError(f"{op}: repeats must be non-negative, not {counts.tolist()}")
    if output_size is not None and output_size != int(counts.sum()):
        raise _oa.InvalidArgumentError(f"{op}: output_size {output_size} is not the sum of repeats {int(counts.sum())}")
    return input.index_select(a, indices(np.repeat(np.arange(n), counts), input.engine))


def scatter_positions(input, dim, index, op):
    """The flat positions in input that scatter along dim writes for each element of index (int32, input's rank,
    no larger than input outside dim), read back and checked: IndexError for an index outside [0, size of dim) (as
    torch's scatter, negative indices included), oa.InvalidArgumentError for an index that is not int32."""
    a = axis(input, dim, op)
    if index.dtype != _oa.dtype.int32:
        raise _oa.InvalidArgumentError(f"{op}: index must be int32 (oa's integer dtype; torch: int64), not "
                                       f"{index.dtype.name}")
    if index.dim() != input.dim():
        raise _oa.InvalidArgumentError(f"{op}: index {list(index.shape)} must have input {list(input.shape)}'s "
                                       "number of dimensions")
    if any(i > s for k, (i, s) in enumerate(zip(index.shape, input.shape)) if k != a):
        raise _oa.InvalidArgumentError(f"{op}: index {list(index.shape)} is larger than input {list(input.shape)} "
                                       f"outside dim {a}")
    where = np.indices(index.shape) if index.dim() else np.zeros((0,), np.int64)
    target = index.numpy().astype(np.int64)
    n = input.shape[a]
    if ((target < 0) | (target >= n)).any():
        bad = target[(target < 0) | (target >= n)].flat[0]
        raise IndexError(f"{op}: index {bad} is out of bounds for dimension {a} with size {n}")
    where[a] = target
    return np.ravel_multi_index(tuple(where), input.shape)


def scattered_values(input, index, src, value, op):
    """What scatter writes, one per element of index (flattened, input's dtype): src cut to index's shape, or value
    everywhere. oa.InvalidArgumentError when src is smaller than index or of another rank."""
    if (src is None) == (value is None):
        raise TypeError(f"{op}: give src or value")
    if isinstance(src, _oa.Tensor):
        if any(i > s for i, s in zip(index.shape, src.shape)) or src.dim() != index.dim():
            raise _oa.InvalidArgumentError(f"{op}: index {list(index.shape)} is larger than src {list(src.shape)}")
        return src[tuple(slice(0, i) for i in index.shape)].to(input.dtype).reshape([-1])
    return _oa.full([index.numel()], src if value is None else value, dtype=input.dtype, engine=input.engine)


def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    """torch.scatter(input, dim, index, src) or scatter(input, dim, index, value): a copy of input where, for each
    position p of index, the element at p with p[dim] replaced by index[p] takes src[p] (or value). Repeated targets:
    the last wins (torch: unspecified). reduce='add' or 'multiply' (torch's older form) adds or multiplies them into
    input's elements instead: oa.scatter_reduce with 'sum' or 'prod' (torch has no gradient there; oa has
    scatter_reduce's). index is read back and checked (a synchronization). Differentiable to input and src. Errors:
    oa.InvalidArgumentError naming the shapes for an index of another rank or larger than input outside dim (or than
    src), and for another reduce; IndexError for an index outside dim."""
    op = "oa.scatter"
    if reduce is not None:
        if reduce not in ("add", "multiply"):
            raise _oa.InvalidArgumentError(f"{op}: reduce must be 'add' or 'multiply', not {reduce!r}")
        values = scattered_values(input, index, src, value, op)
        return scatter_reduce(input, dim, index, values.reshape(list(index.shape)),
                              "sum" if reduce == "add" else "prod")
    positions = scatter_positions(input, dim, index, op).reshape(-1)
    values = scattered_values(input, index, src, value, op)
    return written(input, positions, values) if positions.size else input.clone()


def tensor_scatter_(self, dim, index, src=None, value=None, *, reduce=None):
    """x.scatter_(dim, index, src or value, reduce=None): x = oa.scatter(x, ...) in place (see oa.Tensor.copy_)."""
    return self.copy_(scatter(self, dim, index, src, value, reduce=reduce))


def segment_reduce(values, segments, combine):
    """combine over each run of equal keys in the sorted host array segments, of values (1-d, one per key): a
    tensor with one result per run, in order. A log-step tree: step s combines each element with the one 2^s after
    it when that one is in its run, so after ceil(log2(longest run)) steps a run's first element holds its result.
    Differentiable as combine is."""
    n = segments.size
    first = np.flatnonzero(np.r_[True, segments[1:] != segments[:-1]])
    longest = int(np.diff(np.r_[first, n]).max())
    at, shift = np.arange(n), 1
    while shift < longest:
        partner = np.minimum(at + shift, n - 1)
        same = (at + shift < n) & (segments[partner] == segments)
        later = values.index_select(0, indices(partner, values.engine))
        values = _oa.where(_oa.tensor(same, engine=values.engine), combine(values, later), values)
        shift *= 2
    return values.index_select(0, indices(first, values.engine))


_COMBINE = {"sum": lambda a, b: a + b, "mean": lambda a, b: a + b, "prod": lambda a, b: a * b, "amax": _oa.maximum,
            "amin": _oa.minimum}


def scatter_reduce(input, dim, index, src, reduce, *, include_self=True):
    """torch.scatter_reduce(input, dim, index, src, reduce, *, include_self=True): a copy of input where each
    element of src (cut to index's shape; index and src have input's rank, index no larger than input outside dim)
    is reduced into the element of input that oa.scatter would write it to, by reduce: 'sum', 'prod', 'mean', 'amax'
    or 'amin', input's own value taking part when include_self; elements nothing is scattered to keep input's
    value. int32 'mean' rounds down (torch's floor division). index is read back and checked (a synchronization).
    Gradients to input and src (floating), as torch's: 'sum' and 'mean' spread the result's gradient over what was
    reduced; 'prod' gives each factor the product of the others (zeros included); 'amax' and 'amin' share it evenly
    among the elements equal to the result (except ±inf ones, which get none). Computed as one scatter_add (float32
    'sum' and 'mean') or a log-step tree over the elements reduced into one place (the others: ceil(log2(k)) steps
    for at most k in a place). Errors: oa.InvalidArgumentError for another reduce and, naming the shapes, for an
    index of another rank or larger than input outside dim or than src; IndexError for an index outside dim."""
    op = "oa.scatter_reduce"
    if reduce not in _COMBINE:
        raise _oa.InvalidArgumentError(f"{op}: reduce must be 'sum', 'prod', 'mean', 'amax' or 'amin', not {reduce!r}")
    positions = scatter_positions(input, dim, index, op).reshape(-1)
    values = scattered_values(input, index, src, None, op)
    if positions.size == 0:
        return input.clone()
    engine, flat = input.engine, input.reshape([-1])
    spots, hit = indices(positions, engine), np.zeros(flat.numel(), bool)
    hit[positions] = True
    hit = _oa.tensor(hit, engine=engine)
    zero = _oa.zeros([], dtype=input.dtype, engine=engine)
    order = np.argsort(positions, kind="stable")
    targets = np.unique(positions)

    def reduced(flat, values):
        result = segment_reduce(values.index_select(0, indices(order, engine)), positions[order], _COMBINE[reduce])
        if include_self:
            result = _COMBINE[reduce](result, flat.index_select(0, indices(targets, engine)))
        return written(flat, targets, result)

    if input.dtype == _oa.dtype.float32 and reduce in ("sum", "mean"):
        out = _oa.scatter_add(flat if include_self else _oa.where(hit, zero, flat), 0, spots, values)
    elif reduce in ("amax", "amin") and _oa.is_grad_enabled() and (input.requires_grad or values.requires_grad):
        # The result computed without gradients, plus (mean - mean.detach()) where mean is the mean of the
        # elements equal to the result (finite ones): zero, with torch's gradient. The mean is taken in float32
        # (scatter_add's dtype; 16-bit values widen exactly).
        with no_grad():
            out = reduced(flat.detach(), values.detach())
        ties = (values == out.index_select(0, spots)) & isfinite(values)
        own = hit & (flat == out) & isfinite(flat) if include_self else _oa.zeros_like(hit)
        count = _oa.scatter_add(own.float(), 0, spots, ties.float())
        total = _oa.scatter_add(_oa.where(own, flat, zero).float(), 0, spots, _oa.where(ties, values, zero).float())
        mean = total / _oa.where(count > 0, count, _oa.ones([], engine=engine))
        out = _oa.where(hit, out + (mean - mean.detach()).to(input.dtype), flat)
    else:
        out = reduced(flat, values)
    if reduce == "mean":
        counts = np.maximum(np.bincount(positions, minlength=flat.numel()) + int(include_self), 1)
        counts = _oa.tensor(counts.astype(np.int32), dtype=input.dtype, engine=engine)
        out = out / counts if input.is_floating_point() else out // counts
    return out.reshape(list(input.shape))


def tensor_scatter_reduce_(self, dim, index, src, reduce, *, include_self=True):
    """x.scatter_reduce_(dim, index, src, reduce, include_self=True): x = oa.scatter_reduce(x, ...) in place (see
    oa.Tensor.copy_)."""
    return self.copy_(scatter_reduce(self, dim, index, src, reduce, include_self=include_self))


def tensor_scatter_add_(self, dim, index, src):
    """x.scatter_add_(dim, index, src): x = oa.scatter_add(x, ...) in place (see oa.Tensor.copy_)."""
    return self.copy_(_oa.scatter_add(self, dim, index, src))


def index_add(input, dim, index, source, *, alpha=1):
    """torch.index_add(input, dim, index, source, alpha=1): a copy of input where slice index[i] along dim adds
    alpha * source's slice i (repeated indices add up); index int32 [K], source input's shape with K along dim, of
    input's dtype (float32, float16, bfloat16 or int32, as oa.scatter_add). Differentiable (a scatter_add).
    oa.InvalidArgumentError naming the shapes otherwise."""
    op = "oa.index_add"
    a = axis(input, dim, op)
    expected = list(input.shape[:a]) + [index.numel()] + list(input.shape[a + 1:])
    if index.dim() > 1 or list(source.shape) != expected:
        raise _oa.InvalidArgumentError(f"{op}: index {list(index.shape)} must be 1-d and source {list(source.shape)} "
                                       f"must be {expected} for input {list(input.shape)} along dim {a}")
    spread = index.reshape([-1 if k == a else 1 for k in range(input.dim())]).expand(expected)
    return _oa.scatter_add(input, a, spread, source * alpha if alpha != 1 else source)


def tensor_index_add_(self, dim, index, source, *, alpha=1):
    """x.index_add_(dim, index, source, alpha=1): x = oa.index_add(x, ...) in place (see oa.Tensor.copy_)."""
    return self.copy_(index_add(self, dim, index, source, alpha=alpha))


def scan(input, dim, combine, identity, op):
    """The running combine(earlier, later) of input along dim (bool scanned as int32): a log-step scan, each of
    ceil(log2(n)) steps combining every element with the one `shift` before it (identity before the start)."""
    a = axis(input, dim, op)
    y = input.to(_oa.dtype.int32) if input.dtype == _oa.dtype.bool else input
    n, shift = (input.shape[a] if input.dim() else 1), 1
    while shift < n:
        pad = _oa.full([shift if k == a else s for k, s in enumerate(y.shape)], identity, dtype=y.dtype,
                       engine=y.engine)
        y = combine(_oa.cat([pad, y[(slice(None),) * a + (slice(0, n - shift),)]], a), y)
        shift *= 2
    return y if y is not input else input.clone()


def cumprod(input, dim):
    """torch.cumprod(input, dim): running products along dim (a log-step scan of ceil(log2(n)) products, so the
    rounding differs from a sequential product in the last bits); differentiable, zeros included. int32 and bool
    give int32 (torch: int64)."""
    return scan(input, dim, lambda a, b: a * b, 1, "oa.cumprod")


def cumsum(input, dim, *, dtype=None):
    """torch.cumsum(input, dim, *, dtype=None): running sums along dim of input (cast to dtype first when given).
    float32: the C++ scan (oa::matrix::cumsum), differentiable; float16 and bfloat16 are summed in float32 and each
    sum rounded once to their dtype (differentiable too). int32 and bool give int32 (torch: int64), exact (wrapping
    past int32) by a log-step scan of ceil(log2(n)) int32 additions. oa.InvalidArgumentError for dim out of range."""
    x = input if dtype is None else input.to(dtype)
    a = axis(x, dim, "oa.cumsum")
    if not x.is_floating_point():
        return scan(x, a, lambda earlier, later: earlier + later, 0, "oa.cumsum")
    if x.dtype == _oa.dtype.float32:
        return _oa.cumsum(x, a)
    return _oa.cumsum(x.float(), a).to(x.dtype)


def clamp_min(input, min):
    """torch.clamp_min: oa.clamp(input, min=min)."""
    return _oa.clamp(input, min=min)


def clamp_max(input, max):
    """torch.clamp_max: oa.clamp(input, max=max)."""
    return _oa.clamp(input, max=max)


def logical(name, combine):
    """torch.logical_<name>(input, other): combine of the truth values (!= 0) of both, a bool tensor."""

    def op(input, other):
        other = other if isinstance(other, _oa.Tensor) else _oa.tensor(other, engine=input.engine)
        return combine(input.bool(), other.bool())
    op.__name__ = f"logical_{name}"
    op.__doc__ = f"torch.logical_{name}(input, other): a bool tensor (broadcast shape) of the truth values' {name}."
    return op


logical_and = logical("and", lambda a, b: a & b)
logical_or = logical("or", lambda a, b: a | b)
logical_xor = logical("xor", lambda a, b: a ^ b)


def logical_not(input):
    """torch.logical_not: a bool tensor, True where input is 0 (False)."""
    return ~input.bool()


def count_nonzero(input, dim=None):
    """torch.count_nonzero(input, dim=None): the int32 count (torch: int64) of nonzero elements, over dim (an int
    or a tuple) or all."""
    return (input != 0).sum(dim)


def lerp(input, end, weight):
    """torch.lerp(input, end, weight): input + weight * (end - input), weight a number or a tensor; differentiable."""
    return input + weight * (end - input)


def like(name, make):
    """torch.<name>(input, *, dtype=None, requires_grad=False): make(...) of input's shape, dtype and engine."""

    def op(input, *, dtype=None, requires_grad=False):
        return make(list(input.shape), dtype=dtype or input.dtype, requires_grad=requires_grad, engine=input.engine)
    op.__name__ = name
    op.__doc__ = f"torch.{name}: oa.{make.__name__} of input's shape, dtype (unless given) and engine."
    return op


rand_like = like("rand_like", _oa.rand)
randn_like = like("randn_like", _oa.randn)


def empty(*size, dtype=None, requires_grad=False, engine=None):
    """torch.empty: a new tensor of size; oa fills it with zeros (its contents are unspecified in torch)."""
    return _oa.zeros(sizes(size, "oa.empty", "size"), dtype=dtype, requires_grad=requires_grad, engine=engine)


def as_tensor(data, dtype=None, engine=None):
    """torch.as_tensor(data, dtype=None): data itself when it is an oa.Tensor of that dtype (converted otherwise),
    else oa.tensor(data, dtype)."""
    if isinstance(data, _oa.Tensor):
        return data if dtype is None or dtype == data.dtype else data.to(dtype)
    return _oa.tensor(data, dtype=dtype, engine=engine)


def hstack(tensors):
    """torch.hstack: 1-d (and 0-d) tensors joined along dim 0, others along dim 1."""
    tensors = [t.reshape([1]) if t.dim() == 0 else t for t in tensors]
    return _oa.cat(tensors, 0 if tensors and tensors[0].dim() == 1 else 1)


def vstack(tensors):
    """torch.vstack: the tensors as at least 2-d ([n] as [1, n]) joined along dim 0."""
    return _oa.cat([t.reshape([1, -1]) if t.dim() < 2 else t for t in tensors], 0)


def trace(input):
    """torch.trace: the sum of a 2-d input's main diagonal; oa.InvalidArgumentError naming the shape otherwise."""
    if input.dim() != 2:
        raise _oa.InvalidArgumentError(f"oa.trace: expected a 2-d tensor, not of shape {list(input.shape)}")
    return diag(input).sum()


def new(name, make):
    """torch.Tensor.<name>: make(self, ...) with self's dtype (unless given) and engine."""

    def method(self, *args, dtype=None, requires_grad=False):
        return make(self, *args, dtype=dtype or self.dtype, requires_grad=requires_grad, engine=self.engine)
    method.__name__ = name
    method.__doc__ = f"torch.Tensor.{name}: a new tensor of x's dtype and engine unless dtype is given."
    return method


new_zeros = new("new_zeros", lambda self, *size, **kw: _oa.zeros(sizes(size, "oa.Tensor.new_zeros", "size"), **kw))
new_ones = new("new_ones", lambda self, *size, **kw: _oa.ones(sizes(size, "oa.Tensor.new_ones", "size"), **kw))
new_empty = new("new_empty", lambda self, *size, **kw: _oa.zeros(sizes(size, "oa.Tensor.new_empty", "size"), **kw))
new_full = new("new_full", lambda self, size, fill_value, **kw: _oa.full(list(size), fill_value, **kw))
new_tensor = new("new_tensor", lambda self, data, **kw: _oa.tensor(data.numpy() if isinstance(data, _oa.Tensor)
                                                                   else data, **kw))

TYPE_NAMES = {_oa.dtype.float32: "FloatTensor", _oa.dtype.float16: "HalfTensor", _oa.dtype.bfloat16: "BFloat16Tensor",
              _oa.dtype.int32: "IntTensor", _oa.dtype.bool: "BoolTensor"}


def tensor_type(self, dtype=None, non_blocking=False):
    """torch.Tensor.type: without dtype, the type's name ('oa.FloatTensor', 'oa.IntTensor', ...); with one (an
    oa.dtype or such a name, 'torch.' prefixes too), x.to(dtype). TypeError for a name of no oa dtype."""
    if dtype is None:
        return "oa." + TYPE_NAMES[self.dtype]
    if isinstance(dtype, str):
        named = {v: k for k, v in TYPE_NAMES.items()}.get(dtype.split(".")[-1])
        if named is None:
            raise TypeError(f"oa.Tensor.type: {dtype!r} is not a tensor type of oa "
                            f"({', '.join('oa.' + n for n in TYPE_NAMES.values())})")
        dtype = named
    return self.to(dtype)


def double(self):
    """torch.Tensor.double: oa has no float64 dtype, so this raises oa.UnsupportedError (use .float())."""
    raise _oa.UnsupportedError("oa.Tensor.double: oa has no float64 dtype (it has float32, float16, bfloat16, int32 "
                               "and bool); use .float() for float32, or .numpy().astype('float64') on the host")


def cpu(self):
    """torch.Tensor.cpu: oa has no CPU device, so this raises oa.UnsupportedError, as x.to('cpu') does: read
    values to the host with .numpy(), .tolist() or .item()."""
    raise _oa.UnsupportedError("oa.Tensor.cpu: oa has no CPU device; tensors live on an oa.Engine (a Vulkan device; "
                               "without a GPU, lavapipe runs it on the CPU). Read values to the host with .numpy(), "
                               ".tolist() or .item()")


def is_contiguous(self, memory_format=None):
    """torch.Tensor.is_contiguous: True; every oa tensor is dense and row-major (its copies and shared views too)."""
    return True


def data(self):
    """torch.Tensor.data: x.detach(), which shares x's storage (writes to it show in x) and has no history."""
    return self.detach()


def set_data(self, value):
    """x.data = value: value's elements copied into x's storage without autograd (torch makes x share value's
    storage instead: later writes to value do not show in x). oa.UnsupportedError naming both for a value of
    another shape or dtype (oa's tensors keep their storage; make a new tensor or Parameter instead)."""
    if not isinstance(value, _oa.Tensor) or list(value.shape) != list(self.shape) or value.dtype != self.dtype:
        given = (f"{value.dtype.name} {list(value.shape)}" if isinstance(value, _oa.Tensor)
                 else type(value).__name__)
        raise _oa.UnsupportedError(f"oa.Tensor.data: assigning {given} to a tensor of {self.dtype.name} "
                                   f"{list(self.shape)}: oa copies into the tensor's own storage, so the value must "
                                   "be a tensor of its shape and dtype (make a new tensor or Parameter otherwise)")
    with no_grad():
        self.copy_(value)
