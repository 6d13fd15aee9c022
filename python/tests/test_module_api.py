"""torch.nn.Module's API past the basics: hooks, requires_grad_, get_submodule / get_parameter, non-persistent
buffers, state_dict(prefix=) and load_state_dict(assign=), del of entries, and torch's repr layout."""
from collections import OrderedDict

import numpy as np
import pytest

import oa
from oa import nn
from reference import assert_close, values


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
        self.scale = nn.Parameter(oa.ones(4))
        self.register_buffer("count", oa.zeros(1))
        self.register_buffer("cache", oa.zeros(2), persistent=False)

    def forward(self, x):
        return self.body(x) * self.scale


def test_forward_hooks_replace_inputs_and_outputs_and_remove():
    net, calls = Net(), []
    x = oa.tensor(values((2, 3), 1))
    plain = net(x).numpy()
    pre = net.register_forward_pre_hook(lambda m, args: (args[0] * 2,))
    post = net.register_forward_hook(lambda m, args, out: calls.append(args[0].shape) or out + 1)
    first = net.register_forward_pre_hook(lambda m, args: calls.append("first"), prepend=True)
    assert_close(net(x).numpy(), net.forward(x * 2).numpy() + 1)
    assert calls == ["first", (2, 3)]
    for handle in (pre, post, first):
        handle.remove()
        handle.remove()  # a second remove does nothing, as torch's
    np.testing.assert_array_equal(net(x).numpy(), plain)
    # with_kwargs, a single value returned by a pre-hook, and a hook on a built-in layer.
    lin = nn.Linear(3, 2)
    with lin.register_forward_pre_hook(lambda m, args: args[0] * 0):
        assert_close(lin(x).numpy(), np.broadcast_to(lin.bias.numpy(), (2, 2)))
    assert_close(lin(x).numpy(), x.numpy() @ lin.weight.numpy().T + lin.bias.numpy())
    seen = []
    lin.register_forward_hook(lambda m, args, kwargs, out: seen.append(kwargs) or None, with_kwargs=True)
    lin(x)
    assert seen == [{}]


def test_requires_grad_get_submodule_and_get_parameter():
    net = Net()
    assert net.requires_grad_(False) is net and not any(p.requires_grad for p in net.parameters())
    net.requires_grad_()
    assert all(p.requires_grad for p in net.parameters())
    # A built-in layer's parameters are the C++ layer's: frozen, its forward gives them no gradient.
    lin, x = nn.Linear(3, 2).requires_grad_(False), oa.tensor(values((4, 3), 3), requires_grad=True)
    lin(x).sum().backward()
    assert lin.weight.grad is None and lin.bias.grad is None and x.grad is not None
    assert net.get_submodule("body.0") is net.body[0] and net.get_submodule("") is net
    assert net.get_parameter("body.0.weight") is net.body[0].weight and net.get_parameter("scale") is net.scale
    assert net.get_buffer("count") is net.count
    with pytest.raises(AttributeError, match="Sequential has no attribute `5`"):
        net.get_submodule("body.5")
    with pytest.raises(AttributeError, match="`scale` is not an nn.Module"):
        net.get_submodule("scale.x")
    with pytest.raises(AttributeError, match="`count` is not an nn.Parameter"):
        net.get_parameter("count")
    with pytest.raises(AttributeError, match="`scale` is not a buffer"):
        net.get_buffer("scale")


def test_parameters_recurse_and_prefix():
    net = Net()
    assert [n for n, _ in net.named_parameters(recurse=False)] == ["scale"]
    assert [n for n, _ in net.named_parameters(prefix="m")] == ["m.scale", "m.body.0.weight", "m.body.0.bias"]
    assert len(list(net.parameters(recurse=False))) == 1
    assert [n for n, _ in net.named_buffers()] == ["count", "cache"]
    assert [n for n, _ in nn.BatchNorm1d(2).named_buffers(prefix="bn")] == [
        "bn.running_mean", "bn.running_var", "bn.num_batches_tracked"]


def test_non_persistent_buffers_state_dict_prefix_and_load_assign():
    net = Net()
    assert list(net.state_dict()) == ["scale", "count", "body.0.weight", "body.0.bias"]
    assert list(net.state_dict(prefix="net.")) == ["net.scale", "net.count", "net.body.0.weight", "net.body.0.bias"]
    assert net.state_dict(keep_vars=True)["scale"] is net.scale
    net.count = oa.ones(1)  # a tensor assigned to a buffer's name stays a buffer
    assert "count" in dict(net.named_buffers()) and "count" in net.state_dict()
    with pytest.raises(KeyError, match="already exists"):
        net.register_buffer("scale", oa.zeros(1))
    with pytest.raises(TypeError, match="buffer 'b'"):
        net.register_buffer("b", 3)
    source = Net()
    state = {k: v.detach().clone() for k, v in source.state_dict().items()}
    net.load_state_dict(state, assign=True)
    assert net.body[0].weight is not source.body[0].weight and isinstance(net.body[0].weight, nn.Parameter)
    assert net.body[0].weight.requires_grad and net.count is state["count"]
    x = oa.tensor(values((2, 3), 2))
    assert_close(net(x).numpy(), source(x).numpy())
    net(x).sum().backward()  # the assigned parameters train, in the C++ Linear too
    assert net.body[0].weight.grad is not None
    with pytest.raises(oa.InvalidArgumentError, match="'scale' is float32 \\[4\\], the assigned tensor float32 \\[3\\]"):
        net.load_state_dict({**state, "scale": oa.zeros(3)}, assign=True)


def test_del_removes_entries_and_builtin_layers_refuse():
    net = Net()
    del net.scale, net.count, net.cache
    net.add_module("extra", nn.ReLU())
    del net.extra
    assert list(net.state_dict()) == ["body.0.weight", "body.0.bias"]
    assert not hasattr(net, "scale") and not hasattr(net, "extra")
    net.plain = 3
    del net.plain
    with pytest.raises(AttributeError, match="'weight' cannot be deleted"):
        del net.body[0].weight


def test_multihead_attention_torch_attributes():
    mha = nn.MultiheadAttention(8, 2, dropout=0.25)
    assert mha.dropout == 0.25 and mha._qkv_same_embed_dim
    assert not nn.MultiheadAttention(8, 2, kdim=4)._qkv_same_embed_dim


def test_repr_puts_extra_repr_on_its_own_line_and_names_native_children():
    class WithExtra(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(2, 3)

        def extra_repr(self):
            return "alpha=1\nbeta=2"

    assert repr(WithExtra()) == ("WithExtra(\n  alpha=1\n  beta=2\n  (lin): Linear(in_features=2, out_features=3, "
                                 "bias=True)\n)")
    assert repr(nn.Module()) == "Module()"
    assert repr(nn.MultiheadAttention(8, 2)) == ("MultiheadAttention(\n  embed_dim=8, num_heads=2\n  (out_proj): "
                                                 "Linear(in_features=8, out_features=8, bias=True)\n)")
    text = repr(nn.TransformerBlock(8, 2))
    assert "_Native" not in text
    assert text.startswith("TransformerBlock(\n  embed_dim=8, num_heads=2\n  (norm1): LayerNorm(")
    assert "(attn): MultiHeadAttention(\n    (qkv): Linear(in_features=8, out_features=24, bias=True)" in text
    assert "(mlp): Sequential(\n    (0): Linear(in_features=8, out_features=32, bias=True)\n    (1): GELU()" in text
