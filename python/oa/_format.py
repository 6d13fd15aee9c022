"""repr(x) and str(x) of oa.Tensor in torch's form (torch/_tensor_str.py, default print options):
tensor([[1., 2.],
        [3., 4.]], dtype=oa.float16, requires_grad=True)."""
import math

from . import _oa
from ._grad_mode import no_grad

_PRECISION = 4
_THRESHOLD = 1000  # more elements than this are summarized
_EDGE_ITEMS = 3
_LINE_WIDTH = 80
# torch omits the dtype of its defaults: the default float dtype, int64 and bool (oa's integers are int32).
_DEFAULT_DTYPES = (_oa.dtype.float32, _oa.dtype.int32, _oa.dtype.bool)


def _summarized(x):
    """x with every axis longer than 2 * _EDGE_ITEMS cut to its first and last _EDGE_ITEMS (on the device),
    and the axes cut."""
    cut = [n > 2 * _EDGE_ITEMS for n in x.shape]
    with no_grad():
        for axis, shorten in enumerate(cut):
            if shorten:
                head = (slice(None),) * axis + (slice(0, _EDGE_ITEMS),)
                tail = (slice(None),) * axis + (slice(x.shape[axis] - _EDGE_ITEMS, None),)
                x = _oa.cat([x[head], x[tail]], axis)
    return x, cut


class _Formatter:
    """torch's _Formatter: the width and the style (integral, fixed or scientific) of one tensor's floats."""

    def __init__(self, values, floating):
        self.floating, self.int_mode, self.sci_mode, self.width = floating, True, False, 1
        if not floating:
            self.width = max((len(str(v)) for v in values), default=1)
            return
        finite = [v for v in values if math.isfinite(v) and v != 0]
        if not finite:
            return
        low, high = min(abs(v) for v in finite), max(abs(v) for v in finite)
        self.int_mode = all(v == math.ceil(v) for v in finite)
        self.sci_mode = high / low > 1000.0 or high > 1.0e8 or (not self.int_mode and low < 1.0e-4)
        if self.sci_mode:
            self.width = max(len(f"{v:.{_PRECISION}e}") for v in finite)
        elif self.int_mode:
            self.width = max(len(f"{v:.0f}") + 1 for v in finite)
        else:
            self.width = max(len(f"{v:.{_PRECISION}f}") for v in finite)

    def format(self, v):
        if not self.floating:
            text = str(v)
        elif self.sci_mode:
            text = f"{v:{self.width}.{_PRECISION}e}"
        elif self.int_mode:
            text = f"{v:.0f}" + ("" if math.isinf(v) or math.isnan(v) else ".")
        else:
            text = f"{v:.{_PRECISION}f}"
        return " " * (self.width - len(text)) + text


def _body(values, cut, indent, formatter):
    """torch's _tensor_str_with_formatter over nested lists `values`; cut[0]: whether this axis was summarized."""
    if not isinstance(values, list):
        return formatter.format(values)
    if len(cut) == 1:
        items = [formatter.format(v) for v in values]
        if cut[0]:
            items = items[:_EDGE_ITEMS] + [" ..."] + items[_EDGE_ITEMS:]
        per_line = max(1, (_LINE_WIDTH - indent) // (formatter.width + 2))
        lines = [", ".join(items[i:i + per_line]) for i in range(0, len(items), per_line)]
        return "[" + (",\n" + " " * (indent + 1)).join(lines) + "]"
    parts = [_body(v, cut[1:], indent + 1, formatter) for v in values]
    if cut[0]:
        parts = parts[:_EDGE_ITEMS] + ["..."] + parts[_EDGE_ITEMS:]
    return "[" + ("," + "\n" * (len(cut) - 1) + " " * (indent + 1)).join(parts) + "]"


def tensor_repr(x):
    """repr(x) and str(x) (torch.Tensor.__repr__): the values, read to the host (a synchronization; past 1000
    elements only the first and last 3 along each longer axis, around '...'), then the dtype unless it is
    oa.float32, oa.int32 (oa's integer default, as torch's int64) or oa.bool, then grad_fn=<op> for a result with
    history or requires_grad=True for a leaf that requires grad."""
    prefix = "tensor("
    indent = len(prefix)
    suffixes = []
    if x.numel() == 0:
        body = "[]"
        if x.dim() != 1:
            suffixes.append(f"size={tuple(x.shape)}")
        if x.dtype != _oa.dtype.float32:
            suffixes.append(f"dtype=oa.{x.dtype.name}")
    else:
        shown, cut = _summarized(x) if x.numel() > _THRESHOLD else (x, [False] * x.dim())
        array = shown.numpy()  # bfloat16 reads as float32, float16 as float16: both exact
        formatter = _Formatter(array.reshape(-1).tolist(), x.is_floating_point())
        body = _body(array.tolist(), cut, indent, formatter)
        if x.dtype not in _DEFAULT_DTYPES:
            suffixes.append(f"dtype=oa.{x.dtype.name}")
    if x.grad_fn is not None:
        suffixes.append(f"grad_fn=<{x.grad_fn}>")
    elif x.requires_grad:
        suffixes.append("requires_grad=True")
    text = prefix + body
    last_line = len(text) - text.rfind("\n") + 1
    for suffix in suffixes:
        if last_line + len(suffix) + 2 > _LINE_WIDTH:
            text += ",\n" + " " * indent + suffix
            last_line = indent + len(suffix)
        else:
            text += ", " + suffix
            last_line += len(suffix) + 2
    return text + ")"


def tensor_format(x, format_spec):
    """format(x, spec) and f"{x:spec}" (torch.Tensor.__format__): a 0-d tensor formats its value x.item() (a
    synchronization), so f"{loss:.4f}" works; any other tensor takes only an empty spec, giving str(x) (TypeError
    for another spec, as torch's)."""
    if x.dim() == 0:
        return x.item().__format__(format_spec)
    return object.__format__(x, format_spec)
