"""torch's device and dtype arguments of .to(), shared by oa.Tensor.to and
oa.nn.Module.to: oa's device is an oa.Engine (one Vulkan device)."""
from . import _oa


def to_arguments(args, kwargs, op):
    """(device, dtype) from torch's forms of .to(): to(dtype), to(device), to(device, dtype), to(tensor) (its
    engine and dtype), each with non_blocking (by keyword or position), memory_format and copy, which are ignored
    (oa.Tensor.to takes copy itself).
    TypeError naming `op` for another argument or keyword."""
    kwargs = dict(kwargs)
    for ignored in ("non_blocking", "memory_format", "copy"):
        kwargs.pop(ignored, None)
    device, dtype = kwargs.pop("device", None), kwargs.pop("dtype", None)
    if kwargs:
        raise TypeError(f"{op}: unexpected keyword arguments {sorted(kwargs)}")
    for arg in args:
        if isinstance(arg, bool):  # non_blocking given by position
            continue
        if isinstance(arg, _oa.dtype):
            dtype = arg
        elif isinstance(arg, _oa.Tensor):
            device, dtype = arg.engine, arg.dtype
        elif isinstance(arg, (str, _oa.Engine)) or type(arg).__name__ == "device":  # torch.device: its str
            device = arg if isinstance(arg, _oa.Engine) else str(arg)
        else:
            raise TypeError(f"{op}: expected a dtype, an oa.Engine, a device string or a tensor, not "
                            f"{type(arg).__name__}")
    return device, dtype


def engine_of(device, op):
    """The oa.Engine a .to() device names: an oa.Engine itself, or "cuda" / "vulkan" (with an optional index) for
    oa.default_engine(). oa.UnsupportedError naming `op` for "cpu" (oa has no CPU device) and other strings."""
    if isinstance(device, _oa.Engine):
        return device
    kind = device.split(":")[0]
    if kind == "cpu":
        raise _oa.UnsupportedError(
            f"{op}('{device}'): oa has no CPU device; tensors live on an oa.Engine (a Vulkan device; without a GPU, "
            "lavapipe runs it on the CPU). Keep the values on their engine, read them to the host with .numpy() or "
            ".item(), and pick a device with oa.Engine(device=...)")
    if kind not in ("cuda", "vulkan"):
        raise _oa.UnsupportedError(f"{op}('{device}'): not an oa device (an oa.Engine, or 'cuda' or 'vulkan' for "
                                   "oa.default_engine())")
    return _oa.default_engine()


def tensor_to(self, *args, copy=False, **kwargs):
    """x.to(dtype), to(device), to(device, dtype), to(other) (other's engine and dtype), each with non_blocking
    (accepted; oa's copies are ordered on the device anyway) and copy, as torch.Tensor.to. Returns x itself when
    nothing changes (a new tensor with copy=True), else a copy as dtype: between float32, float16 and bfloat16,
    int32 to those (rounded to nearest even past 2^24, as torch), those to int32 (truncated toward zero, saturating,
    NaN giving 0, as CUDA's conversion), bool to those and to int32 (1, 0), any dtype to bool (x != 0). device: an oa.Engine, or "cuda" / "vulkan" (with an optional index) for oa.default_engine(),
    which must be x's engine (oa does not move tensors between engines). Errors: TypeError naming oa.Tensor.to for
    an argument of another type; oa.UnsupportedError for "cpu", another device string or another engine."""
    device, dtype = to_arguments(args, kwargs, "oa.Tensor.to")
    if device is not None and engine_of(device, "oa.Tensor.to") != self.engine:
        raise _oa.UnsupportedError(f"oa.Tensor.to({device!r}): the tensor is on {self.engine!r}; oa does not move "
                                   "tensors between engines (create it with engine=...)")
    y = self if dtype is None or dtype == self.dtype else self._to_dtype(dtype)
    return y.clone() if copy and y is self else y
