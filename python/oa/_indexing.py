"""x[key] and x[key] = value for keys with several index tensors, lists or masks (x[rows, cols], x[i, :, j]), as
torch: oa.Tensor.__getitem__ and __setitem__ (C++) hand such keys here.

The ints, slices, None and ... of the key apply first (torch's basic indexing), each index entry keeping its axis
(an n-d mask stands for its n axes' nonzero coordinates, as torch). The indices (read back to the host and checked,
a synchronization; negative ones count from the end) broadcast together to a shape B, and each element of B picks
one position of the indexed axes, their flat position: one index_select of the tensor with the indexed axes moved
first and flattened. B's axes take the place of the indexed axes when those are adjacent, else they come first,
as torch and NumPy. Assignment computes the same flat positions of x's elements on the host and writes the values
with one index_select and one where (repeated positions: the last value wins)."""
import numpy as np

from . import _oa
from ._tensor_ops import indices as index_tensor


def parse(x, key, op):
    """The basic key (index entries replaced by full slices) and, for each index entry, its axis in x[basic key]
    and its host indices (checked, non-negative). An index or mask tensor on another engine than x is refused
    (oa.InvalidArgumentError, as for a single index)."""
    shape = list(x.shape)
    entries = key if isinstance(key, tuple) else (key,)

    def axes_of(e):
        if e is None or e is Ellipsis or isinstance(e, bool):
            return 0
        if isinstance(e, (_oa.Tensor, list, tuple, np.ndarray)) and host(e).dtype == np.bool_:
            return host(e).ndim
        return 1

    def host(e):
        return e.numpy() if isinstance(e, _oa.Tensor) else np.asarray(e)

    consumed = sum(axes_of(e) for e in entries)
    if consumed > len(shape):
        raise IndexError(f"{op}: too many indices for a tensor of shape {list(shape)}")
    basic, indices = [], []
    axis = source = 0  # the axis of x[basic key], and of x, that the next entry indexes
    for e in entries:
        if e is Ellipsis:
            basic.append(e)
            axis += len(shape) - consumed
            source += len(shape) - consumed
        elif e is None or isinstance(e, bool):
            basic.append(e)
            axis += 1
        elif isinstance(e, (int, np.integer)):
            basic.append(e)
            source += 1
        elif isinstance(e, slice):
            basic.append(e)
            axis += 1
            source += 1
        elif isinstance(e, (_oa.Tensor, list, tuple, np.ndarray)):
            if isinstance(e, _oa.Tensor) and e.engine != x.engine:
                kind = "mask" if e.dtype == _oa.dtype.bool else "index"
                raise _oa.InvalidArgumentError(f"{op}: {kind} {list(e.shape)} lives on another engine than x {shape}")
            values = host(e)
            if values.dtype == np.bool_:
                covered = list(shape[source:source + values.ndim])
                if list(values.shape) != covered:
                    raise IndexError(f"{op}: the mask's shape {list(values.shape)} does not match the indexed "
                                     f"tensor's extents {covered} at axis {source}")
                coordinates = np.nonzero(values)
            elif values.dtype.kind in "iu" or values.size == 0:
                n = shape[source]
                values = values.astype(np.int64)
                bad = values[(values < -n) | (values >= n)]
                if bad.size:
                    raise IndexError(f"{op}: index {bad.flat[0]} is out of bounds for axis {source} of extent {n}")
                coordinates = (np.where(values < 0, values + n, values),)
            else:
                raise TypeError(f"{op}: an index tensor must be int32 or bool, not {values.dtype}")
            for c in coordinates:
                basic.append(slice(None))
                indices.append((axis, c))
                axis += 1
                source += 1
        else:
            raise TypeError(f"{op}: an index must be an int, slice, None, ..., a list or an int32/bool tensor, not "
                            f"{type(e).__name__}")
    return tuple(basic), indices


def gather(y, indices, op, take, permute, reshape):
    """y's elements at the broadcast indices (see the module's docstring), through take(t, flat positions) along
    axis 0, permute(t, dims) and reshape(t, shape) of y's kind (oa.Tensor or NumPy array)."""
    axes = [a for a, _ in indices]
    try:
        arrays = np.broadcast_arrays(*[c for _, c in indices])
    except ValueError:
        raise IndexError(f"{op}: shape mismatch: indexing tensors could not be broadcast together with shapes "
                         f"{', '.join(str(list(c.shape)) for _, c in indices)}") from None
    extents = [y.shape[a] for a in axes]
    flat = np.ravel_multi_index(arrays, extents) if arrays[0].size else np.zeros(arrays[0].shape, np.int64)
    rest = [a for a in range(len(y.shape)) if a not in axes]
    order = axes + rest
    if order != list(range(len(y.shape))):
        y = permute(y, order)
    y = reshape(y, [int(np.prod(extents))] + list(y.shape[len(axes):]))
    r = reshape(take(y, flat.reshape(-1)), list(flat.shape) + list(y.shape[1:]))
    first, b = axes[0], flat.ndim
    if axes == list(range(first, first + len(axes))) and first > 0:  # adjacent: B where the indexed axes were
        r = permute(r, list(range(b, b + first)) + list(range(b)) + list(range(b + first, len(r.shape))))
    return r


def get_item(x, key):
    """x[key] for a key with several index entries (oa.Tensor.__getitem__ hands them here)."""
    op = "oa.Tensor.__getitem__"
    basic, indices = parse(x, key, op)

    def take(t, positions):
        return t.index_select(0, index_tensor(positions, x.engine))

    return gather(x[basic], indices, op, take, _oa.permute, _oa.reshape)


def set_item(base, key, values):
    """base (float32 or int32, x's value) with x[key] = values written, for a key with several index entries
    (oa.Tensor.__setitem__ hands them here with values converted to base's dtype)."""
    op = "oa.Tensor.__setitem__"
    shape = list(base.shape)
    basic, indices = parse(base, key, op)
    positions = gather(np.arange(base.numel()).reshape(shape)[basic], indices, op, lambda t, p: t[p], np.transpose,
                       np.reshape)
    if positions.size == 0:
        return base
    given = list(values.shape)
    while len(given) > positions.ndim and given[0] == 1:  # leading extents of 1 dropped first, as torch
        given.pop(0)
    try:
        broadcasts = np.broadcast_shapes(tuple(given), positions.shape) == positions.shape
    except ValueError:
        broadcasts = False
    if not broadcasts:
        raise _oa.InvalidArgumentError(f"{op}: a value of shape {list(values.shape)} cannot be broadcast to the "
                                       f"indexing result's shape {list(positions.shape)}")
    return written(base, positions.reshape(-1), values.reshape(given).expand(list(positions.shape)).reshape([-1]))


def written(base, positions, values):
    """base with its elements at the flat host positions replaced by values (1-d, base's dtype; repeated positions:
    the last value wins): one index_select and one where, differentiable to base and values."""
    source = np.full(base.numel(), -1, np.int64)
    source[positions] = np.arange(positions.size)
    taken = _oa.tensor(source >= 0, engine=base.engine)
    picked = values.index_select(0, index_tensor(np.maximum(source, 0), base.engine))
    return _oa.where(taken, picked, base.reshape([-1])).reshape(list(base.shape))
