"""torch's gradient-mode context managers: oa.no_grad, oa.enable_grad, oa.inference_mode and oa.set_grad_enabled,
over this thread's gradient mode (oa.is_grad_enabled; oa::set_grad_enabled in C++)."""
import functools

from . import _oa


class _GradMode:
    """A context manager that sets this thread's gradient mode to self._mode on entering and restores the mode it
    found on exiting (nesting, and re-entering one object while inside); as a decorator (torch's
    _DecoratorContextManager), each call of the function runs inside a fresh one."""

    def __init__(self):
        self._previous = []

    def __enter__(self):
        self._previous.append(_oa.is_grad_enabled())
        _oa._set_grad_enabled(self._mode)

    def __exit__(self, *exc):
        _oa._set_grad_enabled(self._previous.pop())
        return False

    def __call__(self, func):
        if not callable(func):
            raise TypeError(f"oa.{type(self).__name__}: a decorator takes a function, not {type(func).__name__}")

        @functools.wraps(func)
        def in_mode(*args, **kwargs):
            with self.clone():
                return func(*args, **kwargs)
        return in_mode

    def clone(self):
        """A new context manager of the same mode (torch's clone, for decorators)."""
        return type(self)()


class no_grad(_GradMode):
    """Context manager: ops inside record no autograd history (torch.no_grad). As a decorator (@oa.no_grad() or
    @oa.no_grad), each call of the function runs inside it. TypeError for an argument that is not a function."""
    _mode = False

    def __new__(cls, orig_func=None):
        if orig_func is None:
            return super().__new__(cls)
        if not callable(orig_func):
            raise TypeError(f"oa.{cls.__name__} takes no arguments, or one function to decorate; got "
                            f"{type(orig_func).__name__}")
        return cls()(orig_func)

    def __init__(self, orig_func=None):
        super().__init__()


class enable_grad(no_grad):
    """Context manager: ops inside record autograd history again, inside oa.no_grad() too (torch.enable_grad). As a
    decorator (@oa.enable_grad() or @oa.enable_grad), each call of the function runs inside it."""
    _mode = True


class inference_mode(_GradMode):
    """torch.inference_mode(mode=True): in oa, the gradient mode alone (oa has no inference tensors, so tensors made
    inside are ordinary ones, usable in autograd later): mode=True records no history inside, as oa.no_grad();
    mode=False records it, as oa.enable_grad() (torch's inference_mode(False) turns grad mode on too). Also a
    decorator, @oa.inference_mode() or @oa.inference_mode. TypeError for a mode that is not a bool."""

    def __new__(cls, mode=True):
        if callable(mode):
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode=True):
        if not isinstance(mode, bool):
            raise TypeError(f"oa.inference_mode: mode must be a bool, not {type(mode).__name__}")
        super().__init__()
        self._mode = not mode

    def clone(self):
        return inference_mode(not self._mode)


class set_grad_enabled(_GradMode):
    """torch.set_grad_enabled(mode): sets this thread's gradient mode at once, so that a plain call
    oa.set_grad_enabled(False) turns recording off until it is set again; as a context manager, `with
    oa.set_grad_enabled(mode):` restores the mode found at the call on exiting; as a decorator
    (@oa.set_grad_enabled(mode)), each call of the function runs in that mode (the call that made the decorator
    changes nothing). TypeError for a mode that is not a bool."""

    def __init__(self, mode):
        if not isinstance(mode, bool):
            raise TypeError(f"oa.set_grad_enabled: mode must be a bool, not {type(mode).__name__}")
        super().__init__()
        self._mode = mode
        self._previous.append(_oa.is_grad_enabled())
        _oa._set_grad_enabled(mode)

    def __enter__(self):
        pass

    def __call__(self, func):
        _oa._set_grad_enabled(self._previous.pop())
        return super().__call__(func)

    def clone(self):
        return set_grad_enabled(self._mode)


for _cls in (no_grad, enable_grad, inference_mode, set_grad_enabled):
    _cls.__module__ = "oa"
del _cls
