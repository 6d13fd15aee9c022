"""torch.no_grad as oa.no_grad: a context manager and, as torch's, a decorator (@oa.no_grad() or @oa.no_grad)."""
import functools

from . import _oa


class no_grad(_oa.no_grad):
    """Context manager: ops inside record no autograd history (torch.no_grad). As a decorator (@oa.no_grad() or
    @oa.no_grad), each call of the function runs inside it."""

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        if not callable(orig_func):
            raise TypeError(f"oa.no_grad takes no arguments, or one function to decorate; got "
                            f"{type(orig_func).__name__}")
        return cls()(orig_func)

    def __init__(self, orig_func=None):
        super().__init__()

    def __call__(self, func):
        @functools.wraps(func)
        def without_grad(*args, **kwargs):
            with no_grad():
                return func(*args, **kwargs)
        return without_grad


no_grad.__module__ = "oa"
