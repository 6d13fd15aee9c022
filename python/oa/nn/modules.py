"""oa.nn's modules: the Module base (torch.nn.Module), Parameter, and the layers.

The built-in layers wrap the C++ module objects of oa/ml/nn (oa._oa.nn)
rather than re-implementing them in Python over oa.nn.functional. That keeps
one implementation of everything a layer decides besides its arithmetic:
the order in which initialisation seeds are drawn (weight, then bias; the
dropout stream; attention's projections), the init rules of oa/ml/init.hpp,
buffers and their in-place updates (BatchNorm2d's running statistics),
the training/eval behaviour, and the hierarchical parameter names. A model
built here after oa.manual_seed(s) is therefore the C++ model built from
Generator(s), tensor for tensor. A wrapped layer mirrors its C++ object's
parameters (as oa.nn.Parameter handles sharing their values), buffers and
children, so a Python Module sees it as any other module; forward is the C++
forward (one call across the binding).
"""
from collections import OrderedDict
import copy
import functools
import inspect
import itertools
import weakref

from .. import _oa
from . import functional, init
from .._device import engine_of, to_arguments
from .._grad_mode import no_grad
from .._oa import Tensor

_native = _oa.nn
_unnamed = itertools.count()


class Parameter(Tensor):
    """A trainable tensor (torch.nn.Parameter): the value of an oa::ml::Parameter.

    Parameter(data) takes over data's storage as a new float32 leaf that
    requires gradients (data itself is not modified). Its name (errors and
    optimizer state use it) becomes its path in a module once the module is
    assigned as a child, as in the C++ library.

    When data was made by x[key], transpose, permute, mT, expand, split or
    chunk (or is a reshape of such a result), it is a copy of part of x in
    oa, and the Parameter gets storage of its own: a copy of data, which
    optimizers can update in place. Unlike torch, where Parameter(x[0]) is a
    view of x, updates to such a Parameter never reach x, nor x's updates
    the Parameter; data itself still refuses in-place ops.
    """

    def __init__(self, data, requires_grad=True):
        super().__init__(_native.new_parameter(data, f"parameter{next(_unnamed)}"))
        if not requires_grad:
            self.requires_grad = False

    def __deepcopy__(self, memo):
        """A new Parameter (same name and requires_grad) holding a device copy of the values, and of the grad."""
        p = Parameter(self.detach().clone(), self.requires_grad)
        _native.set_parameter_name(p, _native.parameter_name(self))
        if self.grad is not None:
            p.grad = self.grad.detach().clone()
        memo[id(self)] = p
        return p

    @classmethod
    def _of(cls, value):
        """The Parameter object for an oa::ml::Parameter's value (a C++ layer's)."""
        p = cls.__new__(cls)
        Tensor.__init__(p, value)
        return p


class Module:
    """The base of layers (torch.nn.Module): subclass it, assign Parameters,
    Modules and buffers as attributes in __init__ (after super().__init__()),
    and define forward."""

    def __init__(self):
        object.__setattr__(self, "_parameters", OrderedDict())
        object.__setattr__(self, "_buffers", OrderedDict())
        object.__setattr__(self, "_non_persistent_buffers_set", set())
        object.__setattr__(self, "_modules", OrderedDict())
        object.__setattr__(self, "_forward_pre_hooks", OrderedDict())
        object.__setattr__(self, "_forward_hooks", OrderedDict())
        object.__setattr__(self, "training", True)

    def __setattr__(self, name, value):
        if "_parameters" not in self.__dict__:
            raise AttributeError(f"{type(self).__name__}: call super().__init__() before assigning attributes")
        if name in self._parameters and not (value is None or isinstance(value, Parameter)):
            kind = type(value)
            raise TypeError(f"cannot assign '{kind.__module__}.{kind.__qualname__}' as parameter '{name}' "
                            "(oa.nn.Parameter or None expected)")
        # Reassigning an entry keeps its place (m.weight += 1 sets m.weight again); a buffer stays one.
        buffer = name in self._buffers and (value is None or isinstance(value, Tensor))
        target = (self._parameters if isinstance(value, Parameter) else self._modules if isinstance(value, Module)
                  else self._buffers if buffer else None)
        for table in (self._parameters, self._buffers, self._modules):
            if table is not target:
                table.pop(name, None)
        if target is self._modules:
            _prefix_names(value, name, self)
        if target is None:
            object.__setattr__(self, name, value)
        else:
            target[name] = value

    def __getattr__(self, name):
        for table in ("_parameters", "_buffers", "_modules"):
            entries = self.__dict__.get(table)
            if entries is not None and name in entries:
                return entries[name]
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __delattr__(self, name):
        """del m.name: a parameter, buffer or child module leaves the module (torch's), any other attribute as usual."""
        for table in (self._parameters, self._buffers, self._modules):
            if name in table:
                del table[name]
                self._non_persistent_buffers_set.discard(name)
                return
        object.__delattr__(self, name)

    def register_buffer(self, name, tensor, persistent=True):
        """torch's register_buffer: state that is not trained, an oa.Tensor or None, in buffers() and, when
        persistent, in state_dict() (a None buffer is in neither). Errors: TypeError for another value; KeyError for
        a name that is empty, holds "." or is another attribute already."""
        if not isinstance(name, str):
            raise TypeError(f"buffer name should be a string. Got {type(name).__name__}")
        if name == "" or "." in name:
            raise KeyError(f"buffer name can't be empty or contain \".\", got: {name!r}")
        if hasattr(self, name) and name not in self._buffers:
            raise KeyError(f"attribute '{name}' already exists")
        if tensor is not None and not isinstance(tensor, Tensor):
            raise TypeError(f"cannot assign '{type(tensor).__name__}' object to buffer '{name}' (oa.Tensor or None "
                            "required)")
        self._buffers[name] = tensor
        if persistent:
            self._non_persistent_buffers_set.discard(name)
        else:
            self._non_persistent_buffers_set.add(name)

    def register_parameter(self, name, param):
        setattr(self, name, param)

    def add_module(self, name, module):
        setattr(self, name, module)

    def forward(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} has no forward")

    def register_forward_pre_hook(self, hook, *, prepend=False, with_kwargs=False):
        """torch's: hook(module, args) runs before forward (args the positional inputs, a tuple) and may return new
        args (a tuple, or one value taken as a 1-tuple) or None; with_kwargs, hook(module, args, kwargs) returns
        (args, kwargs) or None. prepend runs it before the hooks already registered. Returns a handle whose
        remove() unregisters it."""
        return _add_hook(self._forward_pre_hooks, hook, prepend, with_kwargs)

    def register_forward_hook(self, hook, *, prepend=False, with_kwargs=False):
        """torch's: hook(module, args, output) runs after forward (hook(module, args, kwargs, output) with
        with_kwargs) and may return a replacement output, or None to keep it. prepend as register_forward_pre_hook's.
        Returns a handle whose remove() unregisters it."""
        return _add_hook(self._forward_hooks, hook, prepend, with_kwargs)

    def __call__(self, *args, **kwargs):
        if not (self._forward_pre_hooks or self._forward_hooks):
            return self.forward(*args, **kwargs)
        for hook, with_kwargs in list(self._forward_pre_hooks.values()):
            result = hook(self, args, kwargs) if with_kwargs else hook(self, args)
            if result is not None:
                if with_kwargs:
                    args, kwargs = result
                else:
                    args = result if isinstance(result, tuple) else (result,)
        output = self.forward(*args, **kwargs)
        for hook, with_kwargs in list(self._forward_hooks.values()):
            result = hook(self, args, kwargs, output) if with_kwargs else hook(self, args, output)
            if result is not None:
                output = result
        return output

    def named_children(self):
        return iter(self._modules.items())

    def children(self):
        return iter(self._modules.values())

    def named_modules(self, prefix=""):
        """(name, module) for this module ("") and every descendant, depth first."""
        yield prefix, self
        for name, child in self._modules.items():
            yield from child.named_modules(f"{prefix}.{name}" if prefix else name)

    def modules(self):
        return (m for _, m in self.named_modules())

    def _entries(self, table, prefix, recurse):
        """(path, value) of `table`'s entries other than None, own first, then (recurse) each child's; each value
        once, under its first path."""
        seen = set()
        modules = self.named_modules(prefix) if recurse else [(prefix, self)]
        for path, module in modules:
            for name, value in getattr(module, table).items():
                if value is not None and id(value) not in seen:
                    seen.add(id(value))
                    yield (f"{path}.{name}" if path else name), value

    def named_parameters(self, prefix="", recurse=True):
        """(name, Parameter) under prefix, each Parameter once (under its first path), own first, then (recurse)
        the children's (torch's)."""
        return self._entries("_parameters", prefix, recurse)

    def parameters(self, recurse=True):
        return (p for _, p in self.named_parameters(recurse=recurse))

    def named_buffers(self, prefix="", recurse=True):
        """(name, buffer) as named_parameters; non-persistent buffers included (torch's)."""
        return self._entries("_buffers", prefix, recurse)

    def buffers(self, recurse=True):
        return (b for _, b in self.named_buffers(recurse=recurse))

    def get_submodule(self, target):
        """torch's: the module at the dotted path target ("" is self). AttributeError naming the step that is
        missing or not a Module."""
        module = self
        for item in target.split(".") if target else ():
            if not hasattr(module, item):
                raise AttributeError(f"{module._get_name()} has no attribute `{item}`")
            module = getattr(module, item)
            if not isinstance(module, Module):
                raise AttributeError(f"`{item}` is not an nn.Module")
        return module

    def get_parameter(self, target):
        """torch's: the Parameter at the dotted path target ("layer.0.weight"). AttributeError as get_submodule's,
        or naming an attribute that is missing or not a Parameter."""
        return self._entry_at(target, "_parameters", "an nn.Parameter")

    def get_buffer(self, target):
        """torch's: the buffer at the dotted path target. AttributeError as get_parameter's."""
        return self._entry_at(target, "_buffers", "a buffer")

    def _entry_at(self, target, table, what):
        module_path, _, name = target.rpartition(".")
        module = self.get_submodule(module_path)
        entries = getattr(module, table)
        if entries.get(name) is None:
            raise AttributeError(f"`{name}` is not {what}" if hasattr(module, name) else
                                 f"{module._get_name()} has no attribute `{name}`")
        return entries[name]

    def requires_grad_(self, requires_grad=True):
        """torch's: sets requires_grad of every parameter (its children's too); returns self."""
        for p in self.parameters():
            p.requires_grad_(requires_grad)
        return self

    def state_dict(self, *, destination=None, prefix="", keep_vars=False):
        """prefix + name -> tensor (torch's prefix ends with "."), per module its parameters, then its persistent
        buffers (not None), then each child's (PyTorch's order), added to destination when given. The tensors are
        the module's own (no copy) whatever keep_vars says, as torch's keep_vars=True gives (torch's default gives
        detached tensors sharing the storage): oa.save stores a tied tensor once by its identity, and in-place
        writes to an entry need oa.no_grad(), as to the parameter."""
        out = OrderedDict() if destination is None else destination
        for path, module in self.named_modules():
            for name, value in itertools.chain(module._parameters.items(), module._buffers.items()):
                if value is not None and name not in module._non_persistent_buffers_set:
                    out[prefix + (f"{path}.{name}" if path else name)] = value
        return out

    def load_state_dict(self, state_dict, strict=True, assign=False):
        """Overwrites every entry in place from state_dict (shapes and dtypes must
        match; NumPy arrays and CPU torch tensors are copied, cast to the entry's
        dtype). strict: the keys must be exactly state_dict()'s. assign=True (torch's)
        makes an oa.Tensor of the entry's shape and dtype the entry itself rather than copying it (a parameter
        becomes an oa.nn.Parameter of it, requiring grad as the old one or as a given Parameter; a built-in layer's
        buffer is copied, as its C++ layer holds it). Returns (missing_keys, unexpected_keys). Raises KeyError
        (strict) naming the missing and unexpected keys, oa.InvalidArgumentError naming an entry of another shape
        or dtype, TypeError naming an entry that is not an oa.Tensor, a NumPy array or a torch.Tensor."""
        own = self.state_dict()
        missing = [k for k in own if k not in state_dict]
        unexpected = [k for k in state_dict if k not in own]
        if strict and (missing or unexpected):
            raise KeyError(f"load_state_dict: missing keys {missing}, unexpected keys {unexpected}")
        for name, target in own.items():
            if name not in state_dict:
                continue
            value = state_dict[name]
            module_path, _, leaf = name.rpartition(".")
            module = self.get_submodule(module_path)
            if not assign or not isinstance(value, Tensor) or (leaf in module._buffers and isinstance(module, _Native)):
                _native.write(target, value, name)
                continue
            if value.shape != target.shape or value.dtype != target.dtype:
                raise _oa.InvalidArgumentError(f"load_state_dict: '{name}' is {target.dtype.name} "
                                               f"{list(target.shape)}, the assigned tensor {value.dtype.name} "
                                               f"{list(value.shape)}")
            if leaf in module._buffers:
                module._buffers[leaf] = value
            else:
                setattr(module, leaf, value if isinstance(value, Parameter) else
                        Parameter(value, requires_grad=target.requires_grad))
        return missing, unexpected

    def train(self, mode=True):
        object.__setattr__(self, "training", mode)
        for child in self._modules.values():
            child.train(mode)
        return self

    def eval(self):
        return self.train(False)

    def zero_grad(self, set_to_none=True):
        """Clears each parameter's gradient (None), or with set_to_none=False zeroes it in place, as torch."""
        zero_grads(self.parameters(), set_to_none)

    def apply(self, fn):
        """Calls fn on every child module (depth first), then on self; returns self (torch's Module.apply)."""
        for child in self._modules.values():
            child.apply(fn)
        fn(self)
        return self

    def to(self, *args, **kwargs):
        """torch.nn.Module.to(dtype), to(device), to(device, dtype), to(tensor), each with non_blocking
        (accepted; oa's copies are ordered on the device anyway); returns self. dtype float32 is what oa
        keeps parameters in; float16 and bfloat16 raise oa.UnsupportedError (float32 master weights: run
        the model under oa.autocast(oa.float16) or oa.autocast(oa.bfloat16) instead), other dtypes
        TypeError, as torch's. device: an oa.Engine, or "cuda" / "vulkan" (with an optional index) for
        oa.default_engine(), on which every parameter and buffer must already be (oa.UnsupportedError
        otherwise: build the layers with engine=...); "cpu" raises oa.UnsupportedError (oa has no CPU
        device: read values with .numpy()); a tensor gives its engine and dtype."""
        device, dtype = to_arguments(args, kwargs, "oa.nn.Module.to")
        if device is not None:
            _require_engine(self, device)
        if dtype is None or dtype == _oa.dtype.float32:
            return self
        if dtype in (_oa.dtype.float16, _oa.dtype.bfloat16):
            raise _oa.UnsupportedError(f"oa.nn.Module.to(oa.{dtype.name}): oa keeps parameters in float32 (master "
                                       f"weights); run the model under oa.autocast(oa.{dtype.name}) instead")
        raise TypeError(f"oa.nn.Module.to only accepts floating point dtypes, but got desired dtype={dtype!r}")

    def float(self):
        """torch.nn.Module.float: self (parameters and floating buffers are float32)."""
        return self.to(_oa.dtype.float32)

    def half(self):
        """torch.nn.Module.half: oa.UnsupportedError; see to()."""
        return self.to(_oa.dtype.float16)

    def bfloat16(self):
        """torch.nn.Module.bfloat16: oa.UnsupportedError; see to()."""
        return self.to(_oa.dtype.bfloat16)

    def extra_repr(self):
        return ""

    def _get_name(self):
        return type(self).__name__

    def __repr__(self):
        """torch's: Name(extra) alone, else the extra_repr's lines and then "(name): child" each on its own line."""
        extra = self.extra_repr()
        extra = extra.split("\n") if extra else []
        children = [f"({name}): " + repr(child).replace("\n", "\n  ") for name, child in self._modules.items()]
        if len(extra) == 1 and not children:
            return f"{self._get_name()}({extra[0]})"
        return f"{self._get_name()}(" + "".join(f"\n  {line}" for line in extra + children) + (
            "\n)" if extra or children else ")")


class RemovableHandle:
    """What register_forward_hook and register_forward_pre_hook return (torch.utils.hooks.RemovableHandle): remove()
    unregisters the hook (again: nothing); also a context manager removing it on exit."""

    _ids = itertools.count()

    def __init__(self, hooks):
        self.hooks_dict_ref = weakref.ref(hooks)
        self.id = next(self._ids)

    def remove(self):
        hooks = self.hooks_dict_ref()
        if hooks is not None:
            hooks.pop(self.id, None)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _add_hook(hooks, hook, prepend, with_kwargs):
    handle = RemovableHandle(hooks)
    hooks[handle.id] = (hook, with_kwargs)
    if prepend:
        hooks.move_to_end(handle.id, last=False)
    return handle


def zero_grads(parameters, set_to_none):
    """torch's zero_grad of parameters: each gradient None, or with set_to_none=False zeroed in place."""
    with no_grad():
        for p in parameters:
            if set_to_none:
                p.grad = None
            elif p.grad is not None:
                p.grad.zero_()


def _require_engine(module, device):
    """Module.to(device): the module's tensors must already be on `device` (oa moves no module between engines)."""
    device = engine_of(device, "oa.nn.Module.to")
    for name, t in itertools.chain(module.named_parameters(), module.named_buffers()):
        if t.engine != device:
            raise _oa.UnsupportedError(f"oa.nn.Module.to({device!r}): '{name}' is on {t.engine!r}; oa does not move "
                                       "modules between engines (build the layers with engine=...)")


def _prefix_names(child, name, parent):
    """Renames child's parameters "<name>.<path>" (as oa::ml::nn::Module does
    when a child is registered), except those parent already holds (tied)."""
    known = {id(p) for p in parent.parameters()}
    for path, p in child.named_parameters():
        if id(p) not in known:
            _native.set_parameter_name(p, f"{name}.{path}")


class _Native(Module):
    """A C++ layer (oa._oa.nn.NativeModule) seen as a Module: its parameters,
    buffers and children mirrored, forward and train forwarded."""

    def __init__(self, native):
        super().__init__()
        object.__setattr__(self, "_native", native)
        for name, value in native.own_parameters():
            self._parameters[name] = Parameter._of(value)
        for name, value in native.own_buffers():
            self._buffers[name] = value
        for name, child in native.named_children():
            self._modules[name] = _wrap(child)
        for name in self._optional_parameters:
            if name not in self._parameters:
                object.__setattr__(self, name, None)  # as torch's layer built without it

    def __setattr__(self, name, value):
        """A Parameter assigned to a parameter's name replaces it in the C++
        layer too (forward uses it; assigning another module's Parameter ties
        them); the C++ layer checks shape and dtype before anything changes.
        None, and new values for buffers and children, are refused: the C++
        layer would not see them."""
        if name in self._parameters and isinstance(value, Parameter):
            self._native.set_parameter(name, value)
        elif name in self._parameters and value is None:
            raise ValueError(f"oa.nn.{type(self).__name__}: parameter '{name}' cannot be set to None (build the layer "
                             "without it instead)")
        elif name in self._buffers or name in self._modules:
            raise AttributeError(f"oa.nn.{type(self).__name__}: '{name}' cannot be reassigned (a built-in layer's "
                                 f"{'buffer' if name in self._buffers else 'child module'}; write into it in place "
                                 "or build another layer)")
        super().__setattr__(name, value)

    def __delattr__(self, name):
        """Deleting a parameter, buffer or child is refused (AttributeError): the C++ layer would still use it."""
        if name in self._parameters or name in self._buffers or name in self._modules:
            raise AttributeError(f"oa.nn.{self._get_name()}: '{name}' cannot be deleted (a built-in layer's "
                                 "parameter, buffer or child; build the layer without it instead)")
        super().__delattr__(name)

    def _get_name(self):
        """A C++ child without a Python class of its own (a TransformerBlock's norm1, attn, mlp) shows its C++
        type name."""
        return self._native.type_name if type(self) is _Native else type(self).__name__

    def forward(self, input):
        return self._native.forward(input)

    def train(self, mode=True):
        super().train(mode)
        self._native.train(mode)
        return self

    # A layer's constructor arguments: recorded by __init_subclass__ as (name, value, default) in _config,
    # for extra_repr and __deepcopy__. torch's repr shows the first _repr_positional arguments as bare
    # values, then those in _repr_always, those without a default and those set to another value than it.
    _repr_positional = 0
    _repr_always = ()
    # The parameters that torch's layer shows as None when built without them (bias=False, affine=False).
    _optional_parameters = ()

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        init = cls.__dict__.get("__init__")
        if init is None:
            return
        signature = inspect.signature(init)
        parameters = list(signature.parameters.values())[1:]

        @functools.wraps(init)
        def recording(self, *args, **kw):
            if "_config" not in self.__dict__:  # the outermost constructor's arguments
                bound = signature.bind(self, *args, **kw)
                bound.apply_defaults()
                object.__setattr__(self, "_config", [(p.name, bound.arguments[p.name], p.default) for p in parameters
                                                     if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)])
            init(self, *args, **kw)

        cls.__init__ = recording

    def extra_repr(self):
        shown = []
        for i, (name, value, default) in enumerate(self.__dict__.get("_config", ())):
            if name == "engine":
                continue
            if i < self._repr_positional:
                shown.append(repr(value))
            elif name in self._repr_always or default is inspect.Parameter.empty or value != default:
                shown.append(f"{name}={value!r}")
        return ", ".join(shown)

    def __deepcopy__(self, memo):
        """copy.deepcopy(layer): the layer built again from its constructor arguments (drawing no seeds
        from oa.manual_seed's stream) holding device copies of the parameters (requires_grad, names and
        grads kept; a Parameter already copied in `memo`, a tied one, is shared again), buffers and the
        training flags."""
        if "_config" not in self.__dict__:
            raise TypeError(f"copy.deepcopy: this oa.nn.{type(self).__name__} is a part of a built-in layer (its "
                            "C++ child); deep-copy the layer that holds it")
        cls = type(self)
        new = cls.__new__(cls)
        memo[id(self)] = new
        _native.keeping_seed_stream(lambda: cls.__init__(new, **{name: value for name, value, _ in self._config}))
        for old_module, new_module in zip(self.modules(), new.modules()):
            object.__setattr__(new_module, "training", old_module.training)
            if isinstance(new_module, _Native):
                new_module._native.train(old_module.training)
            for name, p in old_module._parameters.items():
                if id(p) in memo:
                    setattr(new_module, name, memo[id(p)])
                else:
                    memo[id(p)] = copied = new_module._parameters[name]
                    _native.write(copied, p, name)
                    copied.requires_grad = p.requires_grad
                    _native.set_parameter_name(copied, _native.parameter_name(p))
                    if p.grad is not None:
                        copied.grad = p.grad.detach().clone()
            for name, b in old_module._buffers.items():
                _native.write(new_module._buffers[name], b, name)
        for name, value in self.__dict__.items():
            if name not in new.__dict__:
                object.__setattr__(new, name, copy.deepcopy(value, memo))
        return new



def _wrap(native):
    """A C++ layer's child as a Module: a Linear (showing its features, as torch's) or a _Native."""
    if native.type_name != "Linear":
        return _Native(native)
    linear = Linear.__new__(Linear)
    _Native.__init__(linear, native)
    linear.out_features, linear.in_features = linear.weight.shape
    return linear


class Linear(_Native):
    """torch.nn.Linear: weight [out, in], bias [out], U(-1/sqrt(in), 1/sqrt(in))
    (oa::ml::nn::Linear). x [..., in] -> [..., out]."""

    def __init__(self, in_features, out_features, bias=True, engine=None):
        super().__init__(_native.linear(in_features, out_features, bias, engine))
        self.in_features, self.out_features = in_features, out_features

    _optional_parameters = ("bias",)

    def extra_repr(self):
        return f"in_features={self.in_features}, out_features={self.out_features}, bias={self.bias is not None}"


def _convolution(name, factory, spatial, doc):
    """Conv1d and Conv2d: torch's constructor arguments over the C++ constructor `factory`; padding 'same' runs
    oa.nn.functional's convolution (the C++ layer is built unpadded), 'valid' is 0."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1, bias=True,
                 padding_mode="zeros", engine=None):
        _zeros_only(padding_mode, name)
        if isinstance(padding, str):
            functional.padding_totals(kernel_size, stride, padding, dilation, spatial, "oa.nn." + name)
        _Native.__init__(self, factory(in_channels, out_channels, kernel_size, stride,
                                       0 if isinstance(padding, str) else padding, dilation, groups, bias, engine))
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups

    def forward(self, input):
        if self.padding != "same":
            return self._native.forward(input)
        return getattr(functional, name.lower())(input, self.weight, self.bias, self.stride, "same", self.dilation,
                                                 self.groups)

    return type(name, (_Native,), {"__init__": __init__, "forward": forward, "__doc__": doc, "_repr_positional": 2,
                                   "_repr_always": ("kernel_size", "stride"), "_optional_parameters": ("bias",)})


Conv1d = _convolution("Conv1d", _native.conv1d, 1,
                      "torch.nn.Conv1d (oa::ml::nn::Conv1d): x [N, C, L] -> [N, O, L_out]; padding an int, 'valid' or "
                      "'same' (stride 1 only, as torch); padding_mode 'zeros' only.")
Conv2d = _convolution("Conv2d", _native.conv2d, 2,
                      "torch.nn.Conv2d (oa::ml::nn::Conv2d): x [N, C, H, W] -> [N, O, H_out, W_out]; padding ints, "
                      "'valid' or 'same' (stride 1 only, as torch); padding_mode 'zeros' only.")


def _transposed(name, factory, doc):
    """ConvTranspose1d and ConvTranspose2d: torch's constructor arguments over the C++ constructor `factory`."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, padding_mode="zeros", engine=None):
        _zeros_only(padding_mode, name)
        _Native.__init__(self, factory(in_channels, out_channels, kernel_size, stride, padding, output_padding, groups,
                                       bias, dilation, engine))

    return type(name, (_Native,), {"__init__": __init__, "__doc__": doc, "_repr_positional": 2,
                                   "_repr_always": ("kernel_size", "stride"), "_optional_parameters": ("bias",)})


ConvTranspose1d = _transposed("ConvTranspose1d", _native.conv_transpose1d,
                              "torch.nn.ConvTranspose1d (oa::ml::nn::ConvTranspose1d): weight [C, O / groups, K]; x "
                              "[N, C, L] -> [N, O, L_out]; padding_mode 'zeros' only.")
ConvTranspose2d = _transposed("ConvTranspose2d", _native.conv_transpose2d,
                              "torch.nn.ConvTranspose2d (oa::ml::nn::ConvTranspose2d): weight [C, O / groups, KH, KW]; "
                              "x [N, C, H, W] -> [N, O, H_out, W_out]; padding_mode 'zeros' only.")


def _recurrent(name, factory, doc):
    """LSTM and GRU: torch's constructor arguments over the C++ constructor
    `factory`; forward(input, hx=None) returns (output, h_n) for GRU and
    (output, (h_n, c_n)) for LSTM, as torch does."""
    lstm = name == "LSTM"

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, engine=None):
        if bidirectional:
            raise ValueError(f"oa.nn.{name}: bidirectional is not supported")
        _Native.__init__(self, factory(input_size, hidden_size, num_layers, bias, batch_first, dropout, engine))
        self.input_size, self.hidden_size, self.num_layers = input_size, hidden_size, num_layers
        self.batch_first = batch_first

    def forward(self, input, hx=None):
        if not lstm:
            # torch.nn.GRU's hx is one tensor; a NumPy array is not taken as one here (only operators and oa.tensor
            # take arrays), nor is LSTM's (h, c) pair.
            if hx is not None and not isinstance(hx, Tensor):
                raise TypeError(f"oa.nn.GRU: hx must be an oa.Tensor h0 of shape [num_layers, B, H] or None; got "
                                f"{type(hx).__name__}" + (f" of {len(hx)} items (a tuple (h0, c0) is LSTM's state, not "
                                                          f"GRU's)" if isinstance(hx, (tuple, list)) else "")
                                + (" (convert it with oa.tensor)" if type(hx).__module__ == "numpy" else ""))
            return self._native.forward_with_state(input, hx)
        if hx is None:
            return self._native.forward_with_state(input, None, None)
        if not isinstance(hx, (tuple, list)) or len(hx) != 2:
            raise TypeError(f"oa.nn.LSTM: hx must be a tuple (h0, c0) of [num_layers, B, H] tensors or None; got "
                            f"{type(hx).__name__}" + (f" of {len(hx)} items" if isinstance(hx, (tuple, list)) else ""))
        for name, state in zip(("h0", "c0"), hx):
            if not isinstance(state, Tensor):
                raise TypeError(f"oa.nn.LSTM: hx must be a tuple (h0, c0) of [num_layers, B, H] tensors or None; its "
                                f"{name} is {type(state).__name__}")
        return self._native.forward_with_state(input, hx[0], hx[1])

    def extra_repr(self):
        return f"{self.input_size}, {self.hidden_size}, num_layers={self.num_layers}, batch_first={self.batch_first}"

    forward.__doc__ = (f"forward(input, hx=None): input [T, B, I] ([B, T, I] with batch_first); hx "
                       + ("(h0, c0), each" if lstm else "h0") + " [num_layers, B, H] or None (zeros). Returns (output "
                       "[T, B, H] ([B, T, H]), " + ("(h_n, c_n)" if lstm else "h_n") + "), as torch.nn." + name + ".")
    return type(name, (_Native,), {"__init__": __init__, "forward": forward, "extra_repr": extra_repr, "__doc__": doc})


LSTM = _recurrent("LSTM", _native.lstm,
                  "torch.nn.LSTM (oa::ml::nn::LSTM): input [T, B, I] ([B, T, I] with batch_first), hx = (h0, c0) "
                  "[num_layers, B, H] or None -> (output [T, B, H], (h_n, c_n)); parameters weight_ih_l{k} [4H, I], "
                  "weight_hh_l{k} [4H, H], bias_ih_l{k}, bias_hh_l{k} [4H] (gates i, f, g, o). No bidirectional.")
GRU = _recurrent("GRU", _native.gru,
                 "torch.nn.GRU (oa::ml::nn::GRU): input [T, B, I] ([B, T, I] with batch_first), h0 [num_layers, B, H] "
                 "or None -> (output [T, B, H], h_n); parameters weight_ih_l{k} [3H, I], weight_hh_l{k} [3H, H], "
                 "bias_ih_l{k}, bias_hh_l{k} [3H] (gates r, z, n). No bidirectional.")


def _zeros_only(padding_mode, layer):
    if padding_mode != "zeros":
        raise ValueError(f"oa.nn.{layer}: padding_mode '{padding_mode}': only 'zeros' is supported")


def _last_axis(normalized_shape, layer):
    """D from normalized_shape D or [D] (the norms act on the last axis only)."""
    if isinstance(normalized_shape, int):
        return normalized_shape
    if len(normalized_shape) != 1:
        raise ValueError(f"oa.nn.{layer}: normalized_shape {normalized_shape}: only the last axis is supported")
    return normalized_shape[0]


class LayerNorm(_Native):
    """torch.nn.LayerNorm over the last axis (normalized_shape = D or [D]; oa::ml::nn::LayerNorm)."""

    _repr_positional, _repr_always = 1, ("eps", "elementwise_affine")
    _optional_parameters = ("weight", "bias")

    def __init__(self, normalized_shape, eps=1e-5, elementwise_affine=True, bias=True, engine=None):
        super().__init__(_native.layer_norm(_last_axis(normalized_shape, "LayerNorm"), eps, elementwise_affine, bias, engine))


class RMSNorm(_Native):
    """torch.nn.RMSNorm over the last axis (normalized_shape = D or [D]; oa::ml::nn::RMSNorm); eps None
    is the float32 machine epsilon, as PyTorch's."""

    _repr_positional, _repr_always = 1, ("eps", "elementwise_affine")
    _optional_parameters = ("weight",)

    def __init__(self, normalized_shape, eps=None, elementwise_affine=True, engine=None):
        super().__init__(_native.rms_norm(_last_axis(normalized_shape, "RMSNorm"), eps, elementwise_affine, engine))


class GroupNorm(_Native):
    """torch.nn.GroupNorm (oa::ml::nn::GroupNorm): [N, C, *] normalised over each (sample, group of
    C / num_groups channels); weight 1 and bias 0 per channel when affine."""

    _repr_positional, _repr_always = 2, ("eps", "affine")
    _optional_parameters = ("weight", "bias")

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, engine=None):
        super().__init__(_native.group_norm(num_groups, num_channels, eps, affine, engine))


class InstanceNorm2d(_Native):
    """torch.nn.InstanceNorm2d (oa::ml::nn::InstanceNorm2d): [N, C, H, W] normalised over each (sample,
    channel); affine off by default; track_running_stats False only (PyTorch's default)."""

    _repr_positional, _repr_always = 1, ("eps", "momentum", "affine", "track_running_stats")
    _optional_parameters = ("weight", "bias")

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=False, track_running_stats=False, engine=None):
        if track_running_stats:
            raise ValueError("oa.nn.InstanceNorm2d: track_running_stats=True is not supported")
        super().__init__(_native.instance_norm2d(num_features, eps, affine, engine))


def _batch_norm(name, factory, shapes):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True, engine=None):
        if not track_running_stats:
            raise ValueError(f"oa.nn.{name}: track_running_stats=False is not supported")
        _Native.__init__(self, factory(num_features, eps, momentum, affine, engine))

    doc = (f"torch.nn.{name} (oa::ml::nn::{name}) of {shapes}: batch statistics in training (running_mean and "
           "running_var updated in place, num_batches_tracked, an int32 scalar, counting the training batches, all on the GPU; "
           "momentum None averages the batches' statistics), running statistics in eval; track_running_stats "
           "True only.")
    return type(name, (_Native,), {"__init__": __init__, "__doc__": doc, "_repr_positional": 1,
                                   "_repr_always": ("eps", "momentum", "affine", "track_running_stats"),
                                   "_optional_parameters": ("weight", "bias")})


BatchNorm1d = _batch_norm("BatchNorm1d", _native.batch_norm1d, "[N, C] or [N, C, L]")
BatchNorm2d = _batch_norm("BatchNorm2d", _native.batch_norm2d, "[N, C, H, W]")


class Embedding(_Native):
    """torch.nn.Embedding (oa::ml::nn::Embedding): weight N(0, 1); int32 indices [...] -> [..., D]. padding_idx
    (in [-V, V)): its row starts as zeros and gets no gradient, as torch; kept (and shown by repr) as its index in
    [0, V), as torch. Errors: oa.InvalidArgumentError for a padding_idx out of range, and for max_norm,
    scale_grad_by_freq=True or sparse=True (not supported)."""

    def __init__(self, num_embeddings, embedding_dim, padding_idx=None, max_norm=None, norm_type=2.0,
                 scale_grad_by_freq=False, sparse=False, engine=None):
        functional.unsupported_embedding_options(max_norm, scale_grad_by_freq, sparse, "oa.nn.Embedding")
        if padding_idx is not None:
            padding_idx = functional.padding_index(padding_idx, num_embeddings, "oa.nn.Embedding")
        super().__init__(_native.embedding(num_embeddings, embedding_dim, engine))
        self.num_embeddings, self.embedding_dim, self.padding_idx = num_embeddings, embedding_dim, padding_idx
        if padding_idx is not None:
            with no_grad():
                self.weight[padding_idx] = 0.0

    def forward(self, input):
        if self.padding_idx is None:
            return self._native.forward(input)
        return functional.embedding(input, self.weight, padding_idx=self.padding_idx)

    def extra_repr(self):
        padding = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"{self.num_embeddings}, {self.embedding_dim}{padding}"


class Dropout(_Native):
    """torch.nn.Dropout (oa::ml::nn::Dropout): the k-th training call uses the k-th seed of a stream
    seeded from oa.manual_seed's stream at construction; identity in eval."""

    _repr_always = ("p",)

    def __init__(self, p=0.5):
        super().__init__(_native.dropout(p))


class MultiheadAttention(_Native):
    """torch.nn.MultiheadAttention (oa::ml::nn::MultiHeadAttention) with torch's parameters: in_proj_weight
    [3E, E] (the rows of q, then k, then v), in_proj_bias [3E] and out_proj, a Linear(E, E) (out_proj.weight,
    out_proj.bias), so that named_parameters(), state_dict() and load_state_dict() take torch's keys. They are the
    C++ layer's storage (its child qkv's parameters, its own in the kdim / vdim form, and its child proj):
    optimizers and the forward see the same values; bias=False leaves out in_proj_bias and out_proj.bias (None),
    as torch's. kdim and vdim (default embed_dim) are the last extents of key and value; when either differs from
    embed_dim, torch's separate q_proj_weight [E, E], k_proj_weight [E, kdim] and v_proj_weight [E, vdim] replace
    in_proj_weight (None then; q_proj_weight, k_proj_weight and v_proj_weight are None in the other form), in
    torch's order q_proj_weight, k_proj_weight, v_proj_weight, in_proj_bias, out_proj, so that such a torch
    state_dict loads as it is. Initialised as torch's: in_proj_weight (or the three) xavier-uniform,
    out_proj.weight as Linear's, both biases zeros. causal is fixed at construction (oa's argument: query i sees
    keys j <= i + S - L). add_bias_kv=True and add_zero_attn=True raise NotImplementedError naming the argument.

    forward(query, key=query, value=query, key_padding_mask=None, need_weights=True, attn_mask=None,
    average_attn_weights=True, is_causal=None) -> (output, weights), as torch's: query [L, N, E] ([N, L, E] with
    batch_first) or unbatched [L, E]; key [S, N, kdim] and value [S, N, vdim] ([N, S, kdim] and [N, S, vdim], or
    [S, kdim] and [S, vdim] unbatched); output has query's shape. weights (float32) are the attention
    probabilities, after dropout in training as torch's: [N, L, S] averaged over the heads, [N, num_heads, L, S]
    with average_attn_weights=False, without N for unbatched input;
    gradients flow through them as through the output. They are materialised (N * num_heads * L * S floats);
    need_weights=False returns (output, None) on the flash path, which stores no L x S matrix: pass it where the
    weights are not used. key_padding_mask [N, S] ([S] unbatched; bool: True = ignored, or float: added) and
    attn_mask ([L, S] or [N * num_heads, L, S], [num_heads, L, S] unbatched; bool: True = not allowed, or float:
    added; a float mask of any float dtype is added in float32) as torch's; a query that may see no key gives zeros, and zero weights (torch: NaN). is_causal
    is torch's hint that attn_mask is the causal mask: with attn_mask given, the mask is applied (as torch's
    result); is_causal=False changes nothing (a module built with causal=True stays causal). Errors:
    oa.InvalidArgumentError naming the module, the argument and the shapes for other shapes (a key whose last
    extent is not kdim, a value's not vdim); RuntimeError for is_causal=True without attn_mask on a module built
    with causal=False, as torch's ("Need attn_mask if specifying the is_causal hint")."""

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, add_bias_kv=False, add_zero_attn=False, kdim=None,
                 vdim=None, batch_first=False, causal=False, engine=None):
        for name, value in (("add_bias_kv", add_bias_kv), ("add_zero_attn", add_zero_attn)):
            if value:
                raise NotImplementedError(f"oa.nn.MultiheadAttention: {name}={value!r} is not supported (oa's layer "
                                          "adds no bias_k, bias_v or zero attention rows)")
        kdim = embed_dim if kdim is None else kdim
        vdim = embed_dim if vdim is None else vdim
        super().__init__(_native.multihead_attention(embed_dim, num_heads, causal, dropout, bias, kdim, vdim, engine))
        # The C++ child qkv (the packed form; None in the separate form), read by __setattr__.
        object.__setattr__(self, "_in_proj", self._modules.pop("qkv", None))
        self.embed_dim, self.num_heads, self.batch_first, self.causal = embed_dim, num_heads, batch_first, causal
        self.kdim, self.vdim, self.dropout = kdim, vdim, dropout
        self._qkv_same_embed_dim = kdim == embed_dim and vdim == embed_dim
        self.head_dim = embed_dim // num_heads
        # The C++ children under torch's names: qkv's parameters (the packed form) as in_proj_*, proj as the Linear
        # out_proj. The separate form's parameters are the C++ layer's own, already under torch's names.
        if self._in_proj is not None:
            for name, p in self._in_proj.named_parameters():
                self._parameters[f"in_proj_{name}"] = p
                _native.set_parameter_name(p, f"in_proj_{name}")
        # torch's entries of the other projection form, of bias=False and of add_bias_kv: None, as torch's.
        for name in ("in_proj_weight", "q_proj_weight", "k_proj_weight", "v_proj_weight", "in_proj_bias", "bias_k",
                     "bias_v"):
            if name not in self._parameters:
                object.__setattr__(self, name, None)
        out_proj = self._modules.pop("proj")
        self._modules["out_proj"] = out_proj
        for name, p in out_proj.named_parameters():
            _native.set_parameter_name(p, f"out_proj.{name}")
        # torch's _reset_parameters: in_proj_weight xavier-uniform (the C++ layer draws the separate weights so),
        # both biases zeros (out_proj.weight as Linear's).
        if self._in_proj is not None:
            init.xavier_uniform_(self.in_proj_weight)
        if bias:
            init.zeros_(self.in_proj_bias)
            init.zeros_(out_proj.bias)

    def __setattr__(self, name, value):
        """in_proj_weight and in_proj_bias of the packed form take a Parameter of their shape and dtype
        (oa.InvalidArgumentError naming both otherwise), as the C++ child qkv's weight and bias."""
        if (self._in_proj is not None and name in self._parameters and name.startswith("in_proj_")
                and isinstance(value, Parameter)):
            old = self._parameters[name]
            if value.shape != old.shape or value.dtype != old.dtype:
                raise _oa.InvalidArgumentError(
                    f"oa.nn.MultiheadAttention: parameter '{name}' is {old.dtype.name} {list(old.shape)}, the new "
                    f"Parameter is {value.dtype.name} {list(value.shape)}")
            self._in_proj._native.set_parameter(name[len("in_proj_"):], value)
            self._parameters[name] = value
        else:
            super().__setattr__(name, value)

    def forward(self, query, key=None, value=None, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=None):
        if is_causal and attn_mask is None and not self.causal:
            raise RuntimeError("oa.nn.MultiheadAttention: Need attn_mask if specifying the is_causal hint (as torch); "
                               "pass the causal mask as attn_mask, or build the module with causal=True")
        key = query if key is None else key
        value = query if value is None else value
        self_attention = key is query and value is query and key_padding_mask is None and attn_mask is None
        # Checked in the caller's layout, before the transpose that batch_first=False needs.
        unbatched = isinstance(query, Tensor) and query.dim() == 2
        n = 0 if self.batch_first else 1  # the batch axis
        # The layout named by errors: query [L, N, E], key [S, N, kdim], value [S, N, vdim] (N first with batch_first,
        # no N unbatched).
        layout = lambda seq, dim: f"[{seq}, {dim}]" if unbatched else (
            f"[N, {seq}, {dim}]" if self.batch_first else f"[{seq}, N, {dim}]")
        for name, t, seq, dim, size in (("query", query, "L", "E", self.embed_dim),
                                        ("key", key, "S", "kdim", self.kdim), ("value", value, "S", "vdim", self.vdim)):
            if not isinstance(t, Tensor):
                continue
            if unbatched and (t.dim() != 2 or t.shape[1] != size or (name == "query" and t.shape[0] < 1)):
                raise _oa.InvalidArgumentError(
                    f"oa.nn.MultiheadAttention: {name} {list(t.shape)} must be {layout(seq, dim)} with {dim} = {size} "
                    f"and, for the query, L >= 1, as query {list(query.shape)} is unbatched")
            if not unbatched and (t.dim() != 3 or t.shape[2] != size or t.shape[n] < 1 or (
                    name == "query" and t.shape[1 - n] < 1)):
                raise _oa.InvalidArgumentError(
                    f"oa.nn.MultiheadAttention: {name} {list(t.shape)} must be {layout(seq, dim)} with {dim} = {size}, "
                    f"N >= 1 and, for the query, L >= 1 (batch_first={self.batch_first})")
        if all(isinstance(t, Tensor) for t in (query, key, value)) and (
                key.shape[:-1] != value.shape[:-1] or (not unbatched and key.shape[n] != query.shape[n])):
            expected = f"{layout('S', 'kdim')} and {layout('S', 'vdim')} with one S" + ("" if unbatched else (
                f" and the N of query {list(query.shape)} (batch_first={self.batch_first})"))
            raise _oa.InvalidArgumentError(f"oa.nn.MultiheadAttention: key {list(key.shape)} and value "
                                           f"{list(value.shape)} must be {expected}")
        if unbatched:
            # One batch of N = 1: a [S] key_padding_mask is [1, S], a [num_heads, L, S] attn_mask is
            # [N * num_heads, L, S].
            query, key, value = (t.unsqueeze(n) if isinstance(t, Tensor) else t for t in (query, key, value))
            if isinstance(key_padding_mask, Tensor):
                key_padding_mask = key_padding_mask.unsqueeze(0)
        # Float masks of any float dtype (torch takes the query's, e.g. float16 under autocast) are added in float32.
        key_padding_mask, attn_mask = (m.float() if isinstance(m, Tensor) and m.is_floating_point() else m
                                       for m in (key_padding_mask, attn_mask))
        batch_major = (lambda t: t) if self.batch_first else (lambda t: t.transpose(0, 1))
        weights = None
        if need_weights:
            y, weights = self._native.forward_with_weights(batch_major(query), batch_major(key), batch_major(value),
                                                           key_padding_mask, attn_mask)
            if average_attn_weights:
                weights = weights.mean(1)
            if unbatched:
                weights = weights.squeeze(0)
        elif self_attention:
            y = self._native.forward(batch_major(query))
        else:
            y = self._native.forward_masked(batch_major(query), batch_major(key), batch_major(value), key_padding_mask,
                                            attn_mask)
        y = batch_major(y)
        return (y.squeeze(n) if unbatched else y), weights


class TransformerBlock(_Native):
    """A pre-norm Transformer block (oa::ml::nn::TransformerBlock; GPT-2's): x [B, S, D] ->
    x + attn(norm1(x)), then + mlp(norm2(x)) with mlp = Linear(D, 4D), GELU, Linear(4D, D).
    Children norm1, attn (qkv, proj), norm2, mlp (0, 1, 2); causal attention when causal."""

    def __init__(self, embed_dim, num_heads, causal=False, dropout=0.0, engine=None):
        super().__init__(_native.transformer_block(embed_dim, num_heads, causal, dropout, engine))


class MaxPool2d(_Native):
    """torch.nn.MaxPool2d (oa::ml::nn::MaxPool2d): [N, C, H, W] -> [N, C, OH, OW] (or unbatched, 16-bit, as
    oa.nn.functional.max_pool2d); stride None is the kernel size; padding counts as -inf; ceil_mode as the
    functional's. Errors: oa.InvalidArgumentError for dilation other than 1 or return_indices=True (not
    supported)."""

    _repr_always = ("kernel_size", "stride", "padding")

    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        functional.max_pool_unsupported(dilation, return_indices, "oa.nn.MaxPool2d")
        super().__init__(_native.max_pool2d(kernel_size, stride, padding))
        self.kernel_size, self.stride, self.padding, self.ceil_mode = kernel_size, stride, padding, ceil_mode

    def forward(self, input):
        return functional.max_pool2d(input, self.kernel_size, self.stride, self.padding, ceil_mode=self.ceil_mode)


class AvgPool2d(_Native):
    """torch.nn.AvgPool2d (oa::ml::nn::AvgPool2d): [N, C, H, W] -> [N, C, OH, OW] (or unbatched, 16-bit, as
    oa.nn.functional.avg_pool2d); stride None is the kernel size; ceil_mode, count_include_pad and
    divisor_override as the functional's."""

    _repr_always = ("kernel_size", "stride", "padding")

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__(_native.avg_pool2d(kernel_size, stride, padding))
        self.kernel_size, self.stride, self.padding = kernel_size, stride, padding
        self.options = dict(ceil_mode=ceil_mode, count_include_pad=count_include_pad, divisor_override=divisor_override)

    def forward(self, input):
        return functional.avg_pool2d(input, self.kernel_size, self.stride, self.padding, **self.options)


class AdaptiveAvgPool2d(Module):
    """torch.nn.AdaptiveAvgPool2d: oa.nn.functional.adaptive_avg_pool2d(input, output_size) of [N, C, H, W] or
    [C, H, W]. Errors: the functional's, when called."""

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def forward(self, input):
        return functional.adaptive_avg_pool2d(input, self.output_size)

    def extra_repr(self):
        return f"output_size={self.output_size!r}"


class Flatten(_Native):
    """torch.nn.Flatten (oa::ml::nn::Flatten): axes start_dim .. end_dim merged into one."""

    _repr_always = ("start_dim", "end_dim")

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__(_native.flatten(start_dim, end_dim))


class Upsample(Module):
    """torch.nn.Upsample: oa.nn.functional.interpolate(input, size, scale_factor, mode, align_corners,
    recompute_scale_factor) of input [N, C, L], [N, C, H, W] or [N, C, D, H, W]; scale_factor kept as a float (or a
    tuple of floats), as torch. Errors: interpolate's, when called."""

    def __init__(self, size=None, scale_factor=None, mode="nearest", align_corners=None, recompute_scale_factor=None):
        super().__init__()
        self.size, self.mode, self.align_corners = size, mode, align_corners
        self.scale_factor = (tuple(float(f) for f in scale_factor) if isinstance(scale_factor, (tuple, list))
                             else None if scale_factor is None else float(scale_factor))
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input):
        return functional.interpolate(input, self.size, self.scale_factor, self.mode, self.align_corners,
                                      self.recompute_scale_factor)

    def extra_repr(self):
        shown = f"scale_factor={self.scale_factor!r}" if self.scale_factor is not None else f"size={self.size!r}"
        return f"{shown}, mode={self.mode!r}"


class UpsamplingNearest2d(Upsample):
    """torch.nn.UpsamplingNearest2d: Upsample(size, scale_factor, mode='nearest') of [N, C, H, W]."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """torch.nn.UpsamplingBilinear2d: Upsample(size, scale_factor, mode='bilinear', align_corners=True) of
    [N, C, H, W]."""

    def __init__(self, size=None, scale_factor=None):
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)


class Identity(Module):
    """torch.nn.Identity: forward returns its input itself (any shape); constructor arguments are ignored, as torch's."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, input):
        return input


def _optional_buffer(module, name, tensor):
    """Registers `tensor` as buffer `name` of `module` (as torch's losses keep their weights), or sets it None."""
    if tensor is not None:
        module.register_buffer(name, tensor)
    else:
        setattr(module, name, None)


class _Loss(Module):
    """The losses' common part (torch.nn.modules.loss._Loss): refuses the legacy size_average and reduce (TypeError
    naming the loss) and keeps `reduction`."""

    def __init__(self, size_average, reduce, reduction):
        super().__init__()
        functional.no_legacy_reduction(size_average, reduce, "oa.nn." + type(self).__name__)
        self.reduction = reduction


class CrossEntropyLoss(_Loss):
    """torch.nn.CrossEntropyLoss over oa.nn.functional.cross_entropy: logits [N, C] and int32 class indices [N]
    give a scalar (reduction 'mean' over the targets not equal to ignore_index, or 'sum') or [N] ('none');
    logits [N, C, d1, ...] take targets [N, d1, ...] (losses of that shape for 'none'), and float32 targets of the
    logits' shape are class probabilities (the mean is over positions; ignore_index does not apply);
    label_smoothing in [0, 1] mixes the target with the uniform distribution; weight [C] (a buffer, as torch's)
    scales each class's terms, as the functional's. Errors: the functional's (oa.InvalidArgumentError for shapes,
    dtypes, an unknown reduction; TypeError for size_average or reduce; a class index outside [0, C) other than
    ignore_index raises oa.OutOfRangeError at the next synchronize() or host read, as the index lives on the
    device)."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                 label_smoothing=0.0):
        super().__init__(size_average, reduce, reduction)
        _optional_buffer(self, "weight", weight)
        self.ignore_index, self.label_smoothing = ignore_index, label_smoothing

    def forward(self, input, target):
        return functional.cross_entropy(input, target, weight=self.weight, ignore_index=self.ignore_index,
                                        reduction=self.reduction, label_smoothing=self.label_smoothing)


class NLLLoss(_Loss):
    """torch.nn.NLLLoss over oa.nn.functional.nll_loss: log-probabilities [N, C] (or [N, C, d1, ...], or [C])
    against int32 class indices; weight [C] (a buffer, as torch's), ignore_index and reduction as the functional's.
    Errors: the functional's."""

    def __init__(self, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)
        _optional_buffer(self, "weight", weight)
        self.ignore_index = ignore_index

    def forward(self, input, target):
        return functional.nll_loss(input, target, weight=self.weight, ignore_index=self.ignore_index,
                                   reduction=self.reduction)


class L1Loss(_Loss):
    """torch.nn.L1Loss over oa.nn.functional.l1_loss: |input - target| broadcast to one shape, its mean
    (reduction 'mean'), sum ('sum') or the elementwise values ('none'). Errors: the functional's."""

    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)

    def forward(self, input, target):
        return functional.l1_loss(input, target, reduction=self.reduction)


class BCEWithLogitsLoss(_Loss):
    """torch.nn.BCEWithLogitsLoss over oa.nn.functional.binary_cross_entropy_with_logits: sigmoid and binary cross
    entropy in one stable form; weight (broadcast over the batch) and pos_weight (per class) are buffers, as torch's.
    Errors: the functional's."""

    def __init__(self, weight=None, size_average=None, reduce=None, reduction="mean", pos_weight=None):
        super().__init__(size_average, reduce, reduction)
        _optional_buffer(self, "weight", weight)
        _optional_buffer(self, "pos_weight", pos_weight)

    def forward(self, input, target):
        return functional.binary_cross_entropy_with_logits(input, target, weight=self.weight, reduction=self.reduction,
                                                           pos_weight=self.pos_weight)


class MSELoss(_Loss):
    """torch.nn.MSELoss over oa.nn.functional.mse_loss: (input - target)^2 broadcast to one shape (warning when the
    shapes differ), its mean (reduction 'mean'), sum ('sum') or the elementwise values ('none'). Errors: the
    functional's."""

    def __init__(self, size_average=None, reduce=None, reduction="mean"):
        super().__init__(size_average, reduce, reduction)

    def forward(self, input, target):
        return functional.mse_loss(input, target, reduction=self.reduction)


class SmoothL1Loss(_Loss):
    """torch.nn.SmoothL1Loss over oa.nn.functional.smooth_l1_loss (beta, reduction). Errors: the functional's."""

    def __init__(self, size_average=None, reduce=None, reduction="mean", beta=1.0):
        super().__init__(size_average, reduce, reduction)
        self.beta = beta

    def forward(self, input, target):
        return functional.smooth_l1_loss(input, target, reduction=self.reduction, beta=self.beta)


class HuberLoss(_Loss):
    """torch.nn.HuberLoss over oa.nn.functional.huber_loss (reduction, delta). Errors: the functional's."""

    def __init__(self, reduction="mean", delta=1.0):
        super().__init__(None, None, reduction)
        self.delta = delta

    def forward(self, input, target):
        return functional.huber_loss(input, target, reduction=self.reduction, delta=self.delta)


class KLDivLoss(_Loss):
    """torch.nn.KLDivLoss over oa.nn.functional.kl_div (reduction, including 'batchmean', and log_target). Errors:
    the functional's."""

    def __init__(self, size_average=None, reduce=None, reduction="mean", log_target=False):
        super().__init__(size_average, reduce, reduction)
        self.log_target = log_target

    def forward(self, input, target):
        return functional.kl_div(input, target, reduction=self.reduction, log_target=self.log_target)


class CosineSimilarity(Module):
    """torch.nn.CosineSimilarity(dim=1, eps=1e-08): oa.nn.functional.cosine_similarity(x1, x2, dim, eps)."""

    def __init__(self, dim=1, eps=1e-8):
        super().__init__()
        self.dim, self.eps = dim, eps

    def forward(self, x1, x2):
        return functional.cosine_similarity(x1, x2, self.dim, self.eps)


def _activation(name, factory, doc):
    return type(name, (_Native,), {"__init__": lambda self: _Native.__init__(self, factory()), "__doc__": doc})


ReLU = _activation("ReLU", _native.relu, "max(x, 0) (oa::ml::nn::ReLU).")


class GELU(_Native):
    """torch.nn.GELU: exact (approximate='none'; oa::ml::nn::GELU) or torch's tanh approximation
    (approximate='tanh'), as oa.nn.functional.gelu."""

    _repr_always = ("approximate",)

    def __init__(self, approximate="none"):
        super().__init__(_native.gelu())
        self.approximate = approximate

    def forward(self, input):
        return functional.gelu(input, self.approximate)


SiLU = _activation("SiLU", _native.silu, "x * sigmoid(x) (oa::ml::nn::SiLU).")
Tanh = _activation("Tanh", _native.tanh, "tanh(x) (oa::ml::nn::Tanh).")
Sigmoid = _activation("Sigmoid", _native.sigmoid, "1 / (1 + exp(-x)) (oa::ml::nn::Sigmoid).")


class _Pointwise(Module):
    """A module over oa.nn.functional's `function` called with the constructor's arguments: `options`, (name,
    default) pairs in torch's order, shown by repr as torch's. inplace (where torch's module has it) is accepted and
    shown; oa computes out of place (the input is not modified)."""

    function = None
    options = ()

    def __init__(self, *args, **kwargs):
        super().__init__()
        names, values = [name for name, _ in self.options], dict(self.options)
        if len(args) > len(names) or any(name not in values for name in kwargs):
            raise TypeError(f"oa.nn.{self._get_name()} takes {names}, not {args} and {list(kwargs)}")
        values.update(zip(names, args), **kwargs)
        for name, value in values.items():
            setattr(self, name, value)

    def _arguments(self):
        return {name: getattr(self, name) for name, _ in self.options if name != "inplace"}

    def forward(self, input):
        return type(self).function(input, **self._arguments())

    def extra_repr(self):
        shown = [f"{name}={value}" for name, value in self._arguments().items()]
        return ", ".join(shown + (["inplace=True"] if getattr(self, "inplace", False) else []))


def _pointwise(name, function, options, doc):
    return type(name, (_Pointwise,), {"function": function, "options": options, "__doc__": doc})


Softmax = _pointwise("Softmax", functional.softmax, (("dim", None),),
                     "torch.nn.Softmax(dim=None): oa.nn.functional.softmax(input, dim).")
LogSoftmax = _pointwise("LogSoftmax", functional.log_softmax, (("dim", None),),
                        "torch.nn.LogSoftmax(dim=None): oa.nn.functional.log_softmax(input, dim).")
LeakyReLU = _pointwise("LeakyReLU", functional.leaky_relu, (("negative_slope", 0.01), ("inplace", False)),
                       "torch.nn.LeakyReLU(negative_slope=0.01, inplace=False): x, or negative_slope x below 0.")
ELU = _pointwise("ELU", functional.elu, (("alpha", 1.0), ("inplace", False)),
                 "torch.nn.ELU(alpha=1.0, inplace=False): x, or alpha (exp(x) - 1) below 0.")
Softplus = _pointwise("Softplus", functional.softplus, (("beta", 1.0), ("threshold", 20.0)),
                      "torch.nn.Softplus(beta=1.0, threshold=20.0): oa.nn.functional.softplus.")
Mish = _pointwise("Mish", functional.mish, (("inplace", False),), "torch.nn.Mish(inplace=False): x tanh(softplus(x)).")
Hardswish = _pointwise("Hardswish", functional.hardswish, (("inplace", False),),
                       "torch.nn.Hardswish(inplace=False): x relu6(x + 3) / 6.")


class _Chain(Module):
    """Children in order, appended under their position ("0", "1", ...): what
    Sequential and ModuleList share."""

    def __len__(self):
        return len(self._modules)

    def __iter__(self):
        return iter(self._modules.values())

    def append(self, module):
        self.add_module(str(len(self)), _require_module(module, f"{type(self).__name__}.append"))
        return self


class Sequential(_Chain):
    """torch.nn.Sequential: Sequential(m0, m1, ...) names its children "0",
    "1", ...; Sequential(OrderedDict(name=module, ...)) keeps the given names.
    forward applies them in order (any Modules, Python or built-in)."""

    def __init__(self, *modules):
        super().__init__()
        if len(modules) == 1 and isinstance(modules[0], OrderedDict):
            for name, m in modules[0].items():
                self.add_module(name, _require_module(m, "Sequential"))
        else:
            for i, m in enumerate(modules):
                self.add_module(str(i), _require_module(m, "Sequential"))

    def __getitem__(self, i):
        if isinstance(i, slice):
            return _holding(Sequential(), list(self._modules.items())[i])
        return list(self._modules.values())[i]

    def forward(self, input):
        for m in self._modules.values():
            input = m(input)
        return input


def _holding(container, named_modules):
    """container holding the (name, module) pairs without renaming their
    parameters: a slice of a Sequential (names kept) or ModuleList (renumbered), as torch's."""
    for name, m in named_modules:
        container._modules[name] = m
    return container


def _require_module(value, op):
    if not isinstance(value, Module):
        raise TypeError(f"oa.nn.{op}: {type(value).__name__} is not an oa.nn.Module")
    return value


class ModuleList(_Chain):
    """torch.nn.ModuleList: a list of child modules named "0", "1", ... (so
    parameters(), state_dict(), train() and eval() see them); indexing, len,
    iteration, append, extend and insert (renumbering as torch). No forward."""

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.extend(modules)

    def _index(self, i):
        n = len(self._modules)
        if not -n <= i < n:
            raise IndexError(f"oa.nn.ModuleList: index {i} is out of range for {n} modules")
        return i % n

    def __getitem__(self, i):
        if isinstance(i, slice):
            return _holding(ModuleList(), ((str(k), m) for k, m in enumerate(list(self._modules.values())[i])))
        return self._modules[str(self._index(i))]

    def __setitem__(self, i, module):
        self.add_module(str(self._index(i)), _require_module(module, "ModuleList"))

    def extend(self, modules):
        for m in modules:
            self.append(m)
        return self

    def insert(self, index, module):
        children = list(self._modules.values())
        children.insert(index, _require_module(module, "ModuleList.insert"))
        self._modules.clear()
        for i, m in enumerate(children):
            self.add_module(str(i), m)


def _as_parameter(value):
    """torch's parameter containers' entries: a Parameter as it is, another tensor as a new Parameter of it."""
    return value if isinstance(value, Parameter) or not isinstance(value, Tensor) else Parameter(value)


def _parameter_lines(items):
    """torch's repr lines of a ParameterList's or ParameterDict's (name, entry) items."""
    return "\n".join(f"  ({name}): " + (f"{'Parameter' if isinstance(p, Parameter) else 'Tensor'} containing: "
                                        f"[{p.dtype!r} of size {'x'.join(map(str, p.shape))}]"
                                        if isinstance(p, Tensor) else f"Object of type: {type(p).__name__}")
                     for name, p in items)


class ParameterList(Module):
    """torch.nn.ParameterList: parameters named "0", "1", ... (a tensor that is not a Parameter becomes one), so
    parameters() and state_dict() see them; indexing (negative too), assignment, len, iteration, append and extend."""

    def __init__(self, values=None):
        super().__init__()
        self.extend(values or ())

    def _index(self, i):
        n = len(self._parameters)
        if not -n <= i < n:
            raise IndexError(f"oa.nn.ParameterList: index {i} is out of range for {n} parameters")
        return str(i % n)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return ParameterList(list(self._parameters.values())[i])
        return self._parameters[self._index(i)]

    def __setitem__(self, i, param):
        setattr(self, self._index(i), _as_parameter(param))

    def __len__(self):
        return len(self._parameters)

    def __iter__(self):
        return iter(self._parameters.values())

    def append(self, value):
        setattr(self, str(len(self)), _as_parameter(value))
        return self

    def extend(self, values):
        for value in values:
            self.append(value)
        return self

    def extra_repr(self):
        return _parameter_lines(self._parameters.items())


class _Dict(Module):
    """What ModuleDict and ParameterDict share: a dict of the module's table `_table` (its entries in insertion
    order, so parameters(), state_dict(), train() and eval() see them); the classes define __setitem__."""

    _table = None

    def _entries_of(self):
        return self.__dict__[self._table]

    def __getitem__(self, name):
        return self._entries_of()[name]

    def __delitem__(self, name):
        del self._entries_of()[name]

    def __contains__(self, name):
        return name in self._entries_of()

    def __len__(self):
        return len(self._entries_of())

    def __iter__(self):
        return iter(self._entries_of())

    def keys(self):
        return self._entries_of().keys()

    def items(self):
        return self._entries_of().items()

    def values(self):
        return self._entries_of().values()

    def update(self, entries):
        """From a mapping or from (name, value) pairs."""
        for name, value in entries.items() if hasattr(entries, "items") else entries:
            self[name] = value

    def pop(self, name):
        return self._entries_of().pop(name)

    def clear(self):
        self._entries_of().clear()


class ParameterDict(_Dict):
    """torch.nn.ParameterDict: parameters by name (a tensor that is not a Parameter becomes one); d[name],
    d[name] = p, del, in, len, iteration over the names, keys, items, values, get, update, pop and clear."""

    _table = "_parameters"

    def __init__(self, parameters=None):
        super().__init__()
        self.update(parameters or {})

    def __setitem__(self, name, param):
        setattr(self, name, _as_parameter(param))

    def get(self, name, default=None):
        return self._parameters.get(name, default)

    def extra_repr(self):
        return _parameter_lines(self._parameters.items())


class ModuleDict(_Dict):
    """torch.nn.ModuleDict: child modules by name; d[name], d[name] = m, del, in, len, iteration over the names,
    keys, items, values, update, pop and clear. No forward."""

    _table = "_modules"

    def __init__(self, modules=None):
        super().__init__()
        if modules is not None:
            self.update(modules)

    def __setitem__(self, name, module):
        self.add_module(name, _require_module(module, "ModuleDict"))
