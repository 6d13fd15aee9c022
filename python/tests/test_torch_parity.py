"""oa.nn.functional, a few oa.nn modules and oa.optim against PyTorch (CPU, f32).

The same float32 inputs go through oa and torch; forward values and the input
(or parameter) gradients of sum(output * W), for a fixed W, must agree:
forward |oa - torch| <= 1e-5 * max(1, max |torch|) + 1e-4 * |torch|, gradients
the same with 1e-4 and 1e-3 (both sides accumulate in f32, in different orders).
torch 1.13 has no scaled_dot_product_attention: its torch side is composed from
torch's softmax and matmul under torch's documented definition.
"""
import math

import numpy as np
import pytest

import oa
import oa.nn.functional as F
from reference import assert_close, values

torch = pytest.importorskip("torch", reason="PyTorch is not installed (Debian: apt-get install python3-torch)")
TF = torch.nn.functional

FORWARD = dict(rtol=1e-4, atol=1e-5)
GRADIENT = dict(rtol=1e-3, atol=1e-4)


def compare(oa_fn, torch_fn, inputs, seed=99):
    """oa_fn(*oa tensors) against torch_fn(*torch tensors): forward and every input's gradient."""
    oa_in = [oa.tensor(x, requires_grad=True) for x in inputs]
    torch_in = [torch.tensor(x, requires_grad=True) for x in inputs]
    got, want = oa_fn(*oa_in), torch_fn(*torch_in)
    assert_close(got.numpy(), want.detach().numpy(), **FORWARD)
    weights = values(tuple(want.shape), seed)
    got.backward(oa.tensor(weights))
    (want * torch.tensor(weights)).sum().backward()
    for i, (a, b) in enumerate(zip(oa_in, torch_in)):
        assert a.grad is not None, f"input {i} got no gradient"
        assert_close(a.grad.numpy(), b.grad.numpy(), **GRADIENT)


@pytest.mark.parametrize("kw", [
    dict(),
    dict(stride=2, padding=1),
    dict(stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2),
])
def test_conv2d(kw):
    compare(lambda x, w, b: F.conv2d(x, w, b, **kw), lambda x, w, b: TF.conv2d(x, w, b, **kw),
            [values((2, 4, 7, 6), 1), values((6, 2, 3, 3), 2) if kw.get("groups") else values((6, 4, 3, 3), 2),
             values((6,), 3)])


@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1, dilation=2, groups=3)])
def test_conv1d(kw):
    groups = kw.get("groups", 1)
    compare(lambda x, w, b: F.conv1d(x, w, b, **kw), lambda x, w, b: TF.conv1d(x, w, b, **kw),
            [values((2, 3, 11), 4), values((6, 3 // groups, 3), 5), values((6,), 6)])


@pytest.mark.parametrize("kw", [
    dict(),
    dict(stride=2, padding=(1, 0), output_padding=(1, 0), groups=2),
    dict(stride=(1, 2), padding=1, output_padding=(0, 1), dilation=(2, 1)),
])
def test_conv_transpose2d(kw):
    compare(lambda x, w, b: F.conv_transpose2d(x, w, b, **kw), lambda x, w, b: TF.conv_transpose2d(x, w, b, **kw),
            [values((2, 4, 3, 4), 7), values((4, 3, 2, 3), 8), values((3 * kw.get("groups", 1),), 9)])


@pytest.mark.parametrize("kw", [dict(), dict(stride=2, padding=1, output_padding=1, groups=3, dilation=2)])
def test_conv_transpose1d(kw):
    compare(lambda x, w, b: F.conv_transpose1d(x, w, b, **kw), lambda x, w, b: TF.conv_transpose1d(x, w, b, **kw),
            [values((2, 3, 5), 10), values((3, 2, 3), 11), values((2 * kw.get("groups", 1),), 12)])


@pytest.mark.parametrize("shapes", [((2, 1, 3, 4), (5, 4, 6)), ((4,), (4,)), ((3,), (2, 3, 5)), ((2, 3, 4), (4,))], ids=str)
def test_matmul_broadcasting(shapes):
    compare(oa.matmul, torch.matmul, [values(shapes[0], 30), values(shapes[1], 31)])


def test_linear():
    compare(F.linear, TF.linear, [values((2, 3, 5), 13), values((4, 5), 14), values((4,), 15)])
    compare(F.linear, TF.linear, [values((3, 5), 16), values((4, 5), 17)])


@pytest.mark.parametrize("name", ["relu", "gelu", "silu"])
def test_activations(name):
    x = values((3, 17), 18, -4, 4)
    x[np.abs(x) < 1e-3] = 0.5  # relu's kink
    compare(getattr(F, name), getattr(TF, name), [x])


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax(name):
    compare(lambda x: getattr(F, name)(x, dim=-1), lambda x: getattr(TF, name)(x, dim=-1),
            [values((2, 3, 9), 19, -5, 5)])


def test_layer_norm():
    x, w, b = values((3, 4, 10), 20, -3, 3), values((10,), 21), values((10,), 22)
    compare(lambda x, w, b: F.layer_norm(x, [10], w, b, eps=1e-3), lambda x, w, b: TF.layer_norm(x, [10], w, b, 1e-3),
            [x, w, b])
    compare(lambda x: F.layer_norm(x, [10]), lambda x: TF.layer_norm(x, [10]), [x])


def test_embedding():
    idx = np.array([[4, 0, 2], [2, 2, 1]], dtype=np.int32)
    compare(lambda w: F.embedding(oa.tensor(idx), w), lambda w: TF.embedding(torch.tensor(idx, dtype=torch.long), w),
            [values((5, 3), 23)])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
@pytest.mark.parametrize("ignore_index", [-100, 2])
def test_cross_entropy(reduction, label_smoothing, ignore_index):
    target = np.array([1, 3, -100, 0, 2, 2], dtype=np.int32)
    kw = dict(ignore_index=ignore_index, reduction=reduction, label_smoothing=label_smoothing)
    if ignore_index != -100:
        target[2] = 1
    compare(lambda x: F.cross_entropy(x, oa.tensor(target), **kw),
            lambda x: TF.cross_entropy(x, torch.tensor(target, dtype=torch.long), **kw),
            [values((6, 4), 24, -3, 3)])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [(4,), (3, 4, 5), (2, 4, 3, 2)], ids=str)
def test_cross_entropy_other_shapes(reduction, shape):
    """torch's [C] and [N, C, d1, ...] forms with class indices (one ignored), label smoothing 0.1."""
    rng = np.random.default_rng(sum(shape))
    target = rng.integers(0, 4, size=shape[:1] + shape[2:] if len(shape) > 1 else ()).astype(np.int32)
    if target.ndim:
        target.flat[1] = -100
    kw = dict(reduction=reduction, label_smoothing=0.1)
    compare(lambda x: F.cross_entropy(x, oa.tensor(target), **kw),
            lambda x: TF.cross_entropy(x, torch.tensor(target, dtype=torch.long), **kw),
            [values(shape, 31, -3, 3)])


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [(5, 4), (2, 3, 4), (3,)], ids=str)
def test_cross_entropy_class_probabilities(reduction, shape):
    """Float targets of the logits' shape: gradients to both logits and targets."""
    probabilities = np.exp(values(shape, 32))
    probabilities /= probabilities.sum(axis=1 if len(shape) > 1 else 0, keepdims=True)
    kw = dict(reduction=reduction, label_smoothing=0.2)
    compare(lambda x, p: F.cross_entropy(x, p, **kw), lambda x, p: TF.cross_entropy(x, p, **kw),
            [values(shape, 33, -3, 3), probabilities.astype(np.float32)])


def test_cross_entropy_shape_errors():
    with pytest.raises(oa.InvalidArgumentError, match=r"targets of shape.*\[2, 4, 3\].*\[2, 4\]"):
        F.cross_entropy(oa.ones(2, 4, 3), oa.tensor(np.zeros((2, 4), np.int32)))
    with pytest.raises(oa.InvalidArgumentError, match=r"logits' shape \[2, 4\]; found \[2, 3\]"):
        F.cross_entropy(oa.ones(2, 4), oa.ones(2, 3))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss(reduction):
    compare(lambda a, b: F.mse_loss(a, b, reduction=reduction), lambda a, b: TF.mse_loss(a, b, reduction=reduction),
            [values((3, 5), 25), values((3, 5), 26)])


@pytest.mark.parametrize("kw", [dict(), dict(reduction="sum", label_smoothing=0.1), dict(reduction="none", ignore_index=1)])
def test_loss_modules(kw):
    target = np.array([1, 3, 0, 2, 1, 2], dtype=np.int32)
    loss_oa, loss_torch = oa.nn.CrossEntropyLoss(**kw), torch.nn.CrossEntropyLoss(**kw)
    compare(lambda x: loss_oa(x, oa.tensor(target)), lambda x: loss_torch(x, torch.tensor(target, dtype=torch.long)),
            [values((6, 4), 27, -3, 3)])
    reduction = kw.get("reduction", "mean")
    mse_oa, mse_torch = oa.nn.MSELoss(reduction=reduction), torch.nn.MSELoss(reduction=reduction)
    compare(mse_oa, mse_torch, [values((3, 5), 28), values((3, 5), 29)])
    with pytest.raises(TypeError):
        oa.nn.CrossEntropyLoss(oa.ones(4))  # class weights: the functional has none
    with pytest.raises(ValueError):
        oa.nn.MSELoss(reduction="avg")(oa.ones(2), oa.ones(2))
    with pytest.raises(ValueError):
        oa.nn.CrossEntropyLoss()(oa.ones(6, 4), oa.tensor(target[:5]))


def test_flatten_and_identity_modules():
    compare(oa.nn.Flatten(), torch.nn.Flatten(), [values((2, 3, 4, 5), 30)])
    compare(oa.nn.Flatten(0, 2), torch.nn.Flatten(0, 2), [values((2, 3, 4, 5), 31)])
    compare(oa.nn.Identity(3, bias=False), torch.nn.Identity(3, bias=False), [values((2, 3), 32)])
    x = oa.ones(2)
    assert oa.nn.Identity()(x) is x
    assert list(oa.nn.Identity().parameters()) == [] and oa.nn.Identity().state_dict() == {}


@pytest.mark.parametrize("kw", [dict(kernel_size=2), dict(kernel_size=(3, 2), stride=(2, 1), padding=1)])
@pytest.mark.parametrize("pool", ["max_pool2d", "avg_pool2d"])
def test_pooling(pool, kw):
    # Distinct values: max pooling's gradient has no ties to break.
    x = np.random.default_rng(27).permutation(2 * 3 * 7 * 6).reshape(2, 3, 7, 6).astype(np.float32) / 50
    compare(lambda x: getattr(F, pool)(x, **kw), lambda x: getattr(TF, pool)(x, **kw), [x])


def torch_attention(q, k, v, attn_mask=None, is_causal=False, scale=None):
    """torch's scaled_dot_product_attention (torch >= 2.0) where it exists, else its
    documented definition: causal keeps key j for query i where j <= i (top-left)."""
    if hasattr(TF, "scaled_dot_product_attention"):
        extra = {} if scale is None else dict(scale=scale)
        return TF.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, is_causal=is_causal, **extra)
    scale = 1 / q.shape[-1] ** 0.5 if scale is None else scale
    s = q @ k.transpose(-2, -1) * scale
    if is_causal:
        s = s.masked_fill(torch.ones(q.shape[-2], k.shape[-2], dtype=torch.bool).tril().logical_not(), float("-inf"))
    if attn_mask is not None:
        s = s + attn_mask
    return torch.softmax(s, dim=-1) @ v


def attention_inputs(sq, sk):
    return [values((2, 2, sq, 4), 28), values((2, 2, sk, 4), 29), values((2, 2, sk, 3), 30)]


@pytest.mark.parametrize("kw", [dict(), dict(is_causal=True), dict(scale=0.3)])
def test_scaled_dot_product_attention(kw):
    compare(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **kw), lambda q, k, v: torch_attention(q, k, v, **kw),
            attention_inputs(5, 5))
    compare(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, **kw), lambda q, k, v: torch_attention(q, k, v, **kw),
            attention_inputs(3, 6) if not kw.get("is_causal") else attention_inputs(6, 6))


def test_scaled_dot_product_attention_mask():
    mask = np.where(values((3, 6), 31) > 0.5, -np.inf, 0).astype(np.float32)
    mask[:, 0] = 0
    compare(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=oa.tensor(mask), scale=0.7),
            lambda q, k, v: torch_attention(q, k, v, attn_mask=torch.tensor(mask), scale=0.7), attention_inputs(3, 6))


@pytest.mark.parametrize("sq, sk", [(3, 6), (6, 3)])
def test_scaled_dot_product_attention_causal_rectangular(sq, sk):
    # torch's is_causal is top-left (key j for query i where j <= i) whatever the lengths.
    compare(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
            lambda q, k, v: torch_attention(q, k, v, is_causal=True), attention_inputs(sq, sk))


@pytest.mark.parametrize("sq, sk", [(3, 6), (6, 3)])
def test_scaled_dot_product_attention_causal_and_mask(sq, sk):
    # torch refuses attn_mask together with is_causal; oa hides what either hides,
    # which torch computes with the causal part folded into the mask.
    mask = np.where(values((sq, sk), 32) > 0.6, -np.inf, 0).astype(np.float32)
    mask[:, 0] = 0
    causal = np.where(np.tril(np.ones((sq, sk), dtype=bool)), 0, -np.inf).astype(np.float32)
    compare(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, attn_mask=oa.tensor(mask), is_causal=True),
            lambda q, k, v: torch_attention(q, k, v, attn_mask=torch.tensor(mask + causal)), attention_inputs(sq, sk))


# ── Modules: torch's initial parameters copied into oa's ────────────────────

def copy_parameters(oa_module, torch_module):
    own = oa_module.state_dict()
    theirs = {k: v.detach().numpy().copy() for k, v in torch_module.state_dict().items()}
    assert set(own) <= set(theirs), f"{sorted(own)} vs {sorted(theirs)}"
    oa_module.load_state_dict({k: oa.tensor(theirs[k]) for k in own})


def compare_module(oa_module, torch_module, x, forward=lambda m, x: m(x)):
    """Forward, the input's gradient and every parameter's gradient of sum(output * W)."""
    xo, xt = oa.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    got, want = forward(oa_module, xo), forward(torch_module, xt)
    assert_close(got.numpy(), want.detach().numpy(), **FORWARD)
    weights = values(tuple(want.shape), 99)
    got.backward(oa.tensor(weights))
    (want * torch.tensor(weights)).sum().backward()
    assert_close(xo.grad.numpy(), xt.grad.numpy(), **GRADIENT)
    theirs = dict(torch_module.named_parameters())
    for name, p in oa_module.named_parameters():
        assert_close(p.grad.numpy(), theirs[name].grad.numpy(), **GRADIENT)


def test_linear_conv2d_layer_norm_modules():
    torch.manual_seed(0)
    for oa_module, torch_module, x in [
        (oa.nn.Linear(5, 4), torch.nn.Linear(5, 4), values((3, 5), 40)),
        (oa.nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2), torch.nn.Conv2d(4, 6, 3, stride=2, padding=1, groups=2),
         values((2, 4, 6, 5), 41)),
        (oa.nn.LayerNorm(7), torch.nn.LayerNorm(7), values((2, 3, 7), 42)),
    ]:
        with torch.no_grad():  # non-trivial affine parameters
            for p in torch_module.parameters():
                p.add_(torch.tensor(values(tuple(p.shape), 43)))
        copy_parameters(oa_module, torch_module)
        compare_module(oa_module, torch_module, x)


def test_batch_norm2d_train_and_eval():
    torch.manual_seed(0)
    bn_oa, bn_torch = oa.nn.BatchNorm2d(3, momentum=0.3), torch.nn.BatchNorm2d(3, momentum=0.3)
    with torch.no_grad():
        bn_torch.weight.copy_(torch.tensor(values((3,), 44, 0.5, 1.5)))
        bn_torch.bias.copy_(torch.tensor(values((3,), 45)))
    copy_parameters(bn_oa, bn_torch)
    for seed in (46, 47):  # two training steps move the running statistics
        compare_module(bn_oa, bn_torch, values((4, 3, 3, 2), seed, -2, 3))
        bn_oa.zero_grad()
        bn_torch.zero_grad()
    for name in ("running_mean", "running_var"):
        assert_close(getattr(bn_oa, name).numpy(), getattr(bn_torch, name).numpy(), **FORWARD)
    bn_oa.eval()
    bn_torch.eval()
    compare_module(bn_oa, bn_torch, values((2, 3, 3, 2), 48, -2, 3))


@pytest.mark.parametrize("causal, kdim, vdim", [(False, 8, 8), (True, 8, 8), (False, 6, 5)])
def test_multihead_attention(causal, kdim, vdim):
    """torch's state_dict loads as it is (in_proj_weight, or q_proj_weight, k_proj_weight and v_proj_weight when
    kdim / vdim differ from embed_dim; in_proj_bias, out_proj.weight, out_proj.bias): self-attention, or key
    [N, S, kdim] and value [N, S, vdim]."""
    torch.manual_seed(0)
    mha_oa, mha_torch = oa.nn.MultiheadAttention(8, 2, kdim=kdim, vdim=vdim, batch_first=True, causal=causal), \
        torch.nn.MultiheadAttention(8, 2, kdim=kdim, vdim=vdim, batch_first=True)
    with torch.no_grad():
        mha_torch.in_proj_bias.copy_(torch.tensor(values((24,), 49)))
        mha_torch.out_proj.bias.copy_(torch.tensor(values((8,), 50)))
    theirs = dict(mha_torch.named_parameters())
    assert list(mha_oa.state_dict()) == list(mha_torch.state_dict())
    mha_oa.load_state_dict(mha_torch.state_dict())
    mask = torch.ones(5, 5, dtype=torch.bool).triu(1) if causal else None
    inputs = [values((2, 5, 8), 51)] + ([] if kdim == 8 else [values((2, 4, kdim), 52), values((2, 4, vdim), 53)])
    oa_in = [oa.tensor(t, requires_grad=True) for t in inputs]
    torch_in = [torch.tensor(t, requires_grad=True) for t in inputs]
    got, _ = mha_oa(*oa_in)
    want, _ = mha_torch(*(torch_in * 3 if kdim == 8 else torch_in), need_weights=False, attn_mask=mask)
    assert_close(got.numpy(), want.detach().numpy(), **FORWARD)
    weights = values((2, 5, 8), 99)
    got.backward(oa.tensor(weights))
    (want * torch.tensor(weights)).sum().backward()
    for xo, xt in zip(oa_in, torch_in):
        assert_close(xo.grad.numpy(), xt.grad.numpy(), **GRADIENT)
    for k, p in mha_oa.named_parameters():
        assert_close(p.grad.numpy(), theirs[k].grad.numpy(), **GRADIENT)


# ── Optimizers: ten steps on the same quadratic ─────────────────────────────

@pytest.mark.parametrize("make", [
    lambda lib, ps: lib.optim.SGD(ps, lr=0.05),
    lambda lib, ps: lib.optim.SGD(ps, lr=0.05, momentum=0.9, weight_decay=0.1),
    lambda lib, ps: lib.optim.SGD(ps, lr=0.05, momentum=0.8, dampening=0.3, weight_decay=0.05),
    lambda lib, ps: lib.optim.SGD(ps, lr=0.05, momentum=0.9, weight_decay=0.1, nesterov=True),
    lambda lib, ps: lib.optim.AdamW(ps, lr=0.05, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.1),
    lambda lib, ps: lib.optim.AdamW(ps, lr=0.01, betas=(0.8, 0.999), eps=1e-6, weight_decay=0.0),
    lambda lib, ps: lib.optim.Adam(ps, lr=0.05, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.1),
    lambda lib, ps: lib.optim.Adam(ps, lr=0.01),
    lambda lib, ps: lib.optim.Adam(ps, lr=0.05, betas=(0.9, 0.99), weight_decay=0.1, amsgrad=True),
    lambda lib, ps: lib.optim.AdamW(ps, lr=0.05, betas=(0.8, 0.99), weight_decay=0.1, amsgrad=True),
], ids=["sgd", "sgd-momentum-wd", "sgd-dampening", "sgd-nesterov", "adamw", "adamw-no-wd", "adam-l2", "adam",
        "adam-l2-amsgrad", "adamw-amsgrad"])
def test_optimizer_steps(make):
    start, target, scale = values((4, 3), 60, -2, 2), values((4, 3), 61, -2, 2), values((4, 3), 62, 0.5, 2)
    p_oa, p_torch = oa.nn.Parameter(oa.tensor(start)), torch.nn.Parameter(torch.tensor(start))
    opt_oa, opt_torch = make(oa, [p_oa]), make(torch, [p_torch])
    t_oa, s_oa, t_torch, s_torch = oa.tensor(target), oa.tensor(scale), torch.tensor(target), torch.tensor(scale)
    for _ in range(10):  # the gradients shrink: amsgrad's maximum differs from exp_avg_sq
        opt_oa.zero_grad()
        opt_torch.zero_grad()
        d_oa, d_torch = p_oa - t_oa, p_torch - t_torch
        (d_oa * d_oa * s_oa).sum().backward()
        (d_torch * d_torch * s_torch).sum().backward()
        opt_oa.step()
        opt_torch.step()
        assert_close(p_oa.numpy(), p_torch.detach().numpy(), **FORWARD)


def _outcome(fn):
    """fn()'s value, or the built-in exception class it raised (oa's errors derive from them)."""
    try:
        return fn()
    except (RuntimeError, ValueError, TypeError) as e:
        return next(c for c in (RuntimeError, ValueError, TypeError) if isinstance(e, c))


@pytest.mark.parametrize("data", [[0.0], [-1.0], 2.5, [[0]], [3], [True], False, [0.0, 2.0], [], [[1, 2]]])
def test_python_conversions_match_torch(data):
    x, t = oa.tensor(np.asarray(data)), torch.tensor(np.asarray(data))
    for conversion in (bool, int, float, lambda v: [10, 20, 30, 40][v]):
        assert _outcome(lambda: conversion(x)) == _outcome(lambda: conversion(t))
    if x.dtype.is_floating_point:  # oa compares floating tensors with numbers
        assert _outcome(lambda: bool(x > 0)) == _outcome(lambda: bool(t > 0))


def test_list_index_matches_torch():
    a, b = oa.ones(2), oa.zeros(2)
    ta, tb = torch.ones(2), torch.zeros(2)
    assert [a, b].index(a) == [ta, tb].index(ta) == 0
    assert _outcome(lambda: [a, b].index(b)) == _outcome(lambda: [ta, tb].index(tb)) == RuntimeError


def test_module_containers_match_torch():
    from collections import OrderedDict
    ours = oa.nn.Sequential(OrderedDict(fc=oa.nn.Linear(2, 3), act=oa.nn.ReLU(), out=oa.nn.Linear(3, 1)))
    theirs = torch.nn.Sequential(OrderedDict(fc=torch.nn.Linear(2, 3), act=torch.nn.ReLU(), out=torch.nn.Linear(3, 1)))
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert list(ours[1:].state_dict()) == list(theirs[1:].state_dict())
    lists = []
    for nn_ in (oa.nn, torch.nn):
        lst = nn_.ModuleList([nn_.Linear(2, 2)])
        lst.append(nn_.ReLU())
        lst.insert(0, nn_.Linear(2, 3))
        lst.extend([nn_.Linear(2, 1)])
        lists.append(lst)
    assert list(lists[0].state_dict()) == list(lists[1].state_dict())
    assert [type(m).__name__ for m in lists[0][1:]] == [type(m).__name__ for m in lists[1][1:]]
    dicts = [nn_.ModuleDict({"b": nn_.Linear(2, 2), "a": nn_.Tanh()}) for nn_ in (oa.nn, torch.nn)]
    assert list(dicts[0].state_dict()) == list(dicts[1].state_dict()) and list(dicts[0]) == list(dicts[1])


def test_in_place_ops_match_torch():
    start = values((2, 3), 5)
    other = values((3,), 6)
    results = []
    for lib in (oa, torch):
        x = lib.tensor(start)
        y = lib.tensor(other)
        alias = x
        x += y
        x *= 2.0
        x -= 0.25
        x /= lib.tensor(other) + 3.0
        x.add_(1.5).mul_(y).sub_(y).div_(4.0)
        assert alias is x
        results.append(x.numpy().copy())
        x.copy_(y)
        results.append(x.numpy().copy())
        x.fill_(-2.0)
        results.append(x.numpy().copy())
    for a, b in zip(results[:3], results[3:]):
        assert_close(a, b, **FORWARD)
    for lib in (oa, torch):
        leaf = lib.ones(2, requires_grad=True)
        with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
            leaf += 1
        with lib.no_grad():
            leaf += 1
        assert leaf.is_leaf and leaf.requires_grad
        assert leaf.detach().numpy().tolist() == [2.0, 2.0]


def test_pow_alpha_and_matmul_assignment_match_torch():
    start, other = values((2, 3), 7), values((3,), 8)
    results = []
    for lib in (oa, torch):
        x, y = lib.tensor(start), lib.tensor(other)
        flat = x.view(6)
        x **= 2
        x.pow_(lib.tensor([1.0, 0.5, 2.0]) + 0.0 * y)
        x.add_(y, alpha=-0.5).sub_(y, alpha=2.0).add_(1.5, alpha=2.0).sub_(0.25, alpha=-4.0)
        results += [flat.numpy().copy(), x.add(y, alpha=3.0).numpy(), x.sub(y, alpha=-2.0).numpy(),
                    lib.add(x, 2.0, alpha=0.5).numpy(), lib.sub(x, y, alpha=0.5).numpy()]
        # x @= m rebinds x (torch 1.13 has no __imatmul__): the old tensor and its views keep their values.
        alias = x
        x @= lib.ones(3, 4)
        assert x is not alias and tuple(x.shape) == (2, 4)
    half = len(results) // 2
    for a, b in zip(results[:half], results[half:]):
        assert_close(a, b, **FORWARD)


def test_parameter_assignments_match_torch():
    grads = []
    for lib in (oa, torch):
        lin = lib.nn.Linear(2, 2)
        with pytest.raises(TypeError, match=r"cannot assign '.*' as parameter 'weight' \(.*Parameter or None expected\)"):
            lin.weight = lin.weight * 0.0
        assert [name for name, _ in lin.named_parameters()] == ["weight", "bias"]
        p = lib.nn.Parameter(lib.ones(2))
        (p * 3).sum().backward()
        p.grad += 1
        p.grad = p.grad * 2
        (p * 3).sum().backward()
        grads.append(p.grad.numpy().copy())
        with pytest.raises((RuntimeError, ValueError)):
            p.grad = lib.ones(3)
        with pytest.raises(TypeError):
            p.grad = 5
    np.testing.assert_array_equal(grads[0], grads[1])


def test_conversions_match_torch():
    pred, target = np.array([1, 2, 3, 0]), np.array([1, 0, 3, 3])
    ours = (oa.tensor(pred) == oa.tensor(target)).float().mean().item()
    theirs = (torch.tensor(pred) == torch.tensor(target)).float().mean().item()
    assert ours == theirs
    x = np.array([0.0, -0.5, 2.0], np.float32)
    np.testing.assert_array_equal(oa.tensor(x).bool().numpy(), torch.tensor(x).bool().numpy())
    np.testing.assert_array_equal(oa.zeros(2, dtype=oa.int32).numpy(), torch.zeros(2, dtype=torch.int32).numpy())
    np.testing.assert_array_equal(oa.full((2,), 3, dtype=oa.int32).numpy(), torch.full((2,), 3, dtype=torch.int32).numpy())


# ── Assigning Parameters to built-in layers; tied weights ───────────────────

def assign(module, path, value):
    """module.<path> = value for a dotted path ("qkv.weight")."""
    *owners, name = path.split(".")
    for owner in owners:
        module = getattr(module, owner)
    setattr(module, name, value)


@pytest.mark.parametrize("make, x, forward", [
    (lambda lib: lib.nn.Linear(5, 4), values((3, 5), 70), None),
    (lambda lib: lib.nn.Conv1d(4, 6, 3, padding=1, groups=2), values((2, 4, 7), 71), None),
    (lambda lib: lib.nn.Conv2d(4, 6, 3, stride=2, padding=1), values((2, 4, 6, 5), 72), None),
    (lambda lib: lib.nn.ConvTranspose2d(4, 6, 3, stride=2, padding=1, output_padding=1), values((2, 4, 3, 3), 73), None),
    (lambda lib: lib.nn.LayerNorm(7), values((2, 3, 7), 74), None),
    (lambda lib: lib.nn.GroupNorm(2, 4), values((2, 4, 3, 3), 75), None),
    (lambda lib: lib.nn.InstanceNorm2d(3, affine=True), values((2, 3, 4, 4), 76), None),
    (lambda lib: lib.nn.BatchNorm1d(3), values((4, 3, 5), 77), None),
    (lambda lib: lib.nn.BatchNorm2d(3), values((4, 3, 3, 2), 78), None),
    (lambda lib: lib.nn.LSTM(3, 4, num_layers=2), values((5, 2, 3), 79), lambda m, x: m(x)[0]),
    (lambda lib: lib.nn.GRU(3, 4, num_layers=2, batch_first=True), values((2, 5, 3), 80), lambda m, x: m(x)[0]),
], ids=["linear", "conv1d", "conv2d", "conv-transpose2d", "layer-norm", "group-norm", "instance-norm2d", "batch-norm1d",
        "batch-norm2d", "lstm", "gru"])
def test_assigned_parameters_drive_forward_as_torch(make, x, forward):
    """Every parameter replaced by a new Parameter in both libraries: forward and gradients then agree (the
    new values differ from the initial ones, so a layer still computing with its old weights fails)."""
    torch.manual_seed(0)
    oa_module, torch_module = make(oa), make(torch)
    for seed, (name, p) in enumerate(list(torch_module.named_parameters()), 81):
        new = values(tuple(p.shape), seed, 0.5, 1.5)
        assign(torch_module, name, torch.nn.Parameter(torch.tensor(new)))
        assign(oa_module, name, oa.nn.Parameter(oa.tensor(new)))
    assert [n for n, _ in oa_module.named_parameters()] == [n for n, _ in torch_module.named_parameters()]
    compare_module(oa_module, torch_module, x, *([forward] if forward else []))


class TinyLM:
    """Embedding -> LayerNorm -> Linear head tied to the embedding (GPT-2's `head.weight = emb.weight`),
    built the same way in oa and torch."""

    @staticmethod
    def make(lib, vocab=7, dim=4):
        class Model(lib.nn.Module):
            def __init__(self):
                super().__init__()
                self.emb = lib.nn.Embedding(vocab, dim)
                self.norm = lib.nn.LayerNorm(dim)
                self.head = lib.nn.Linear(dim, vocab, bias=False)
                self.head.weight = self.emb.weight

            def forward(self, idx):
                return self.head(self.norm(self.emb(idx)))

        return Model()

    @staticmethod
    def loss(lib, model, idx, targets):
        logits = model(idx)
        return lib.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


def test_tied_embedding_and_head_match_torch(tmp_path):
    torch.manual_seed(0)
    ours, theirs = TinyLM.make(oa), TinyLM.make(torch)
    with torch.no_grad():
        theirs.norm.weight.copy_(torch.tensor(values((4,), 90, 0.5, 1.5)))
    ours.load_state_dict({k: oa.tensor(v.detach().numpy().copy()) for k, v in theirs.state_dict().items()})
    assert ours.head.weight is ours.emb.weight
    # One Parameter, listed once under its first path; state_dict keeps both keys (as torch's).
    assert [n for n, _ in ours.named_parameters()] == [n for n, _ in theirs.named_parameters()] == \
        ["emb.weight", "norm.weight", "norm.bias"]
    assert list(ours.state_dict()) == list(theirs.state_dict())
    idx, targets = np.array([[0, 3, 5], [6, 1, 2]], np.int32), np.array([[3, 5, 1], [1, 2, 0]], np.int32)
    data = {oa: (oa.tensor(idx), oa.tensor(targets)), torch: (torch.tensor(idx, dtype=torch.long),
                                                              torch.tensor(targets, dtype=torch.long))}
    opt_oa, opt_torch = oa.optim.AdamW(ours.parameters(), lr=0.1), torch.optim.AdamW(theirs.parameters(), lr=0.1)
    for _ in range(3):
        losses = []
        for lib, model, opt in ((oa, ours, opt_oa), (torch, theirs, opt_torch)):
            opt.zero_grad()
            loss = TinyLM.loss(lib, model, *data[lib])
            loss.backward()
            losses.append(loss.item())
        assert_close(losses[0], losses[1], **FORWARD)
        # The tied weight's gradient sums the embedding's and the head's uses (torch's).
        assert_close(ours.emb.weight.grad.numpy(), theirs.emb.weight.grad.numpy(), **GRADIENT)
        opt_oa.step()
        opt_torch.step()
        assert ours.head.weight is ours.emb.weight
        assert_close(ours.emb.weight.numpy(), theirs.emb.weight.detach().numpy(), **FORWARD)
    # The gradient is the sum of both uses: the untied model's two gradients add up to it.
    state = {k: oa.tensor(v.numpy()) for k, v in ours.state_dict().items()}
    untied = TinyLM.make(oa)
    untied.head.weight = oa.nn.Parameter(oa.tensor(ours.emb.weight.numpy()))
    untied.load_state_dict(state)
    assert untied.head.weight is not untied.emb.weight
    TinyLM.loss(oa, untied, *data[oa]).backward()
    ours.zero_grad()
    TinyLM.loss(oa, ours, *data[oa]).backward()
    assert_close(ours.emb.weight.grad.numpy(), untied.emb.weight.grad.numpy() + untied.head.weight.grad.numpy(),
                 **GRADIENT)
    # Round trip through a file: both keys saved, loaded back into a tied model (still tied, same loss).
    oa.save(ours.state_dict(), tmp_path / "tied.safetensors")
    loaded = oa.load(tmp_path / "tied.safetensors")
    assert sorted(loaded) == sorted(theirs.state_dict())
    again = TinyLM.make(oa)
    again.load_state_dict(loaded)
    assert again.head.weight is again.emb.weight
    assert TinyLM.loss(oa, again, *data[oa]).item() == TinyLM.loss(oa, ours, *data[oa]).item()


# ── Optimizer state: torch's state_dict structure, and resuming bit for bit ──

OPTIMIZERS = {
    "sgd": lambda lib, ps: lib.optim.SGD(ps, lr=0.05, momentum=0.9, weight_decay=0.01),
    "sgd-plain": lambda lib, ps: lib.optim.SGD(ps, lr=0.05),
    "adamw": lambda lib, ps: lib.optim.AdamW(ps, lr=0.02, betas=(0.8, 0.99), weight_decay=0.1),
    "adam": lambda lib, ps: lib.optim.Adam(ps, lr=0.02, weight_decay=0.05),
    "adam-amsgrad": lambda lib, ps: lib.optim.Adam(ps, lr=0.02, weight_decay=0.05, amsgrad=True),
    "adamw-amsgrad": lambda lib, ps: lib.optim.AdamW(ps, lr=0.02, amsgrad=True),
}


def _train(lib, params, opt, steps, seed):
    """`steps` updates of a quadratic loss on params whose gradient misses the second parameter every other step."""
    for s in range(steps):
        opt.zero_grad(**({"set_to_none": True} if lib is torch else {}))  # oa's zero_grad clears, as torch 2's
        target = lib.tensor(values((4, 3), seed + s))
        loss = ((params[0] - target) ** 2).sum()
        if s % 2 == 0:
            loss = loss + (params[1] * params[1]).sum()
        loss.backward()
        opt.step()


def _trained(lib, make, seed, steps, train_seed):
    """Parameters [4, 3] and [5] from `seed`, their optimizer, after `steps` updates of _train."""
    params = [lib.nn.Parameter(lib.tensor(values((4, 3), seed))), lib.nn.Parameter(lib.tensor(values((5,), seed + 1)))]
    opt = make(lib, params)
    _train(lib, params, opt, steps, train_seed)
    return params, opt


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_optimizer_state_dict_round_trip(name):
    make = OPTIMIZERS[name]
    ps, opt = _trained(oa, make, 70, 3, 100)
    saved = opt.state_dict()
    # torch's structure and keys.
    want = _trained(torch, make, 70, 3, 100)[1].state_dict()
    assert saved.keys() == want.keys() and list(saved["state"]) == list(want["state"])
    for i, entry in want["state"].items():
        for k, v in entry.items():
            if v is not None:
                assert_close(saved["state"][i][k].numpy(), v.numpy(), **FORWARD)
    assert set(saved["param_groups"][0]) == set(want["param_groups"][0])
    assert saved["param_groups"][0]["params"] == want["param_groups"][0]["params"]
    # A new optimizer over copies of the parameters continues bit for bit.
    snapshot = {i: {k: v.numpy() for k, v in e.items()} for i, e in saved["state"].items()}
    copies = [oa.nn.Parameter(oa.tensor(p.numpy())) for p in ps]
    resumed = make(oa, copies)
    resumed.load_state_dict(saved)
    _train(oa, ps, opt, 4, 200)
    _train(oa, copies, resumed, 4, 200)
    for a, b in zip(ps, copies):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert resumed.lr == opt.lr
    # The saved tensors are copies: training on did not change them.
    for i, entry in saved["state"].items():
        for k, v in entry.items():
            np.testing.assert_array_equal(v.numpy(), snapshot[i][k])


@pytest.mark.parametrize("name", ["sgd", "adamw", "adam", "adam-amsgrad"])
def test_optimizer_loads_torch_state_dict(name):
    make = OPTIMIZERS[name]
    tps, topt = _trained(torch, make, 72, 3, 300)
    sd = topt.state_dict()
    converted = {"state": {i: {k: (oa.tensor(v.numpy()) if isinstance(v, torch.Tensor) else v) for k, v in e.items()}
                           for i, e in sd["state"].items()},
                 "param_groups": sd["param_groups"]}
    # Loaded as oa tensors, and as torch left it (its CPU tensors, read through NumPy), before torch trains on;
    # torch's implementation switches are not compared.
    switched = {"state": sd["state"], "param_groups": [{**sd["param_groups"][0], "foreach": True, "differentiable": True}]}
    resumed = []
    for given in (converted, sd, switched):
        ps = [oa.nn.Parameter(oa.tensor(p.detach().numpy())) for p in tps]
        opt = make(oa, ps)
        opt.load_state_dict(given)
        resumed.append((ps, opt))
    _train(torch, tps, topt, 3, 400)
    for ps, opt in resumed:
        _train(oa, ps, opt, 3, 400)
        for a, b in zip(ps, tps):
            assert_close(a.numpy(), b.detach().numpy(), **FORWARD)


@pytest.mark.parametrize("name", ["sgd", "adamw"])
def test_optimizers_take_leaf_tensors_and_param_groups(name):
    """As torch.optim: any float32 leaf that requires grad is a parameter (updated in place, seen through the
    user's handle), and param_groups[0]['lr'] sets the learning rate, as torch's schedulers do."""
    make = OPTIMIZERS[name]
    runs = {}
    for lib in (oa, torch):
        params = [lib.tensor(values((4, 3), 81), requires_grad=True), lib.tensor(values((5,), 82), requires_grad=True)]
        opt = make(lib, params)
        for s in range(3):
            for group in opt.param_groups:
                group["lr"] = 0.01 * (s + 1)
            _train(lib, params, opt, 1, 600 + s)
        runs[lib] = params, opt
    (ours, opt), (theirs, topt) = runs[oa], runs[torch]
    for a, b in zip(ours, theirs):
        assert_close(a.numpy(), b.detach().numpy(), **FORWARD)
    group = opt.param_groups[0]
    # The keys and values as torch's (values as given, not their float32 roundings), the tensors as given.
    assert set(group) == set(topt.param_groups[0]) and group["lr"] == 0.03
    key, value = ("momentum", 0.9) if name == "sgd" else ("betas", (0.8, 0.99))
    assert group[key] == topt.param_groups[0][key] == value
    assert all(p is q for p, q in zip(group["params"], ours)) and opt.param_groups == opt.param_groups
    group[key] = value  # the value it has: accepted
    group["params"] = list(ours)
    with pytest.raises(ValueError, match=f"'{key}' is fixed at construction"):
        group[key] = 0.5 if name == "sgd" else (0.5, 0.5)
    # Keys of its own, as a scheduler's 'initial_lr', stay with the group.
    group.setdefault("initial_lr", group["lr"])
    assert opt.param_groups[0]["initial_lr"] == 0.03
    del opt.param_groups[0]["initial_lr"]
    assert "initial_lr" not in opt.param_groups[0]
    with pytest.raises(TypeError, match="'lr' cannot be deleted"):
        del group["lr"]
    opt.lr = 0.5  # set on the optimizer: the group reads it
    assert group["lr"] == 0.5
    with pytest.warns(UserWarning, match="the same tensor twice"):
        make(oa, [ours[0], ours[0]])
    with pytest.raises(TypeError, match="requires_grad false"):
        make(oa, [oa.ones(3)])
    with pytest.raises(TypeError, match="computed by an op: true"):
        make(oa, [ours[0] * 2])


def test_optimizer_state_dict_errors():
    ps = [oa.nn.Parameter(oa.tensor(values((4, 3), 74)))]
    opt = oa.optim.AdamW(ps, lr=0.01)
    _train_one = lambda o: (o.zero_grad(), (ps[0] * ps[0]).sum().backward(), o.step())
    _train_one(opt)
    sd = opt.state_dict()
    before = ps[0].numpy()
    other = oa.optim.AdamW(ps, lr=0.01, weight_decay=0.5)
    with pytest.raises(oa.InvalidArgumentError, match="'weight_decay'"):
        other.load_state_dict(sd)
    with pytest.raises(oa.InvalidArgumentError, match="param groups"):
        opt.load_state_dict({"state": {}, "param_groups": []})
    with pytest.raises(oa.InvalidArgumentError, match="'state' and 'param_groups'"):
        opt.load_state_dict({})
    bad = {"state": {0: {**sd["state"][0], "exp_avg": oa.zeros(3, 4)}}, "param_groups": sd["param_groups"]}
    with pytest.raises(oa.InvalidArgumentError, match=r"state\[0\]\['exp_avg'\] is \[3, 4\]; parameter 0's is \[4, 3\]"):
        opt.load_state_dict(bad)
    with pytest.raises(TypeError, match="'lr' must be a number"):
        opt.param_groups[0]["lr"] = "0.1"
    with pytest.raises(oa.InvalidArgumentError, match="parameter 3"):
        opt.load_state_dict({"state": {3: sd["state"][0]}, "param_groups": sd["param_groups"]})
    with pytest.raises(oa.InvalidArgumentError, match="'weight_decay'"):
        oa.optim.Adam(ps, weight_decay=0.1).load_state_dict(oa.optim.Adam(ps).state_dict())
    with pytest.raises(oa.InvalidArgumentError, match="'amsgrad' is False in the state_dict but True"):
        oa.optim.AdamW(ps, amsgrad=True).load_state_dict(sd)
    q = [oa.nn.Parameter(oa.tensor(before))]
    amsgrad = oa.optim.AdamW(q, lr=0.01, amsgrad=True)
    (q[0] * q[0]).sum().backward()
    amsgrad.step()
    with pytest.raises(oa.InvalidArgumentError, match="'amsgrad' is True in the state_dict but False"):
        opt.load_state_dict(amsgrad.state_dict())
    np.testing.assert_array_equal(ps[0].numpy(), before)


def test_adam_without_decay_is_adamw_without_decay():
    a = [oa.nn.Parameter(oa.tensor(values((4, 3), 75))), oa.nn.Parameter(oa.tensor(values((5,), 76)))]
    b = [oa.nn.Parameter(oa.tensor(p.numpy())) for p in a]
    _train(oa, a, oa.optim.Adam(a, lr=0.03), 4, 500)
    _train(oa, b, oa.optim.AdamW(b, lr=0.03, weight_decay=0.0), 4, 500)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.numpy(), y.numpy())
    # The L2 term does not stay in the gradient.
    p = oa.nn.Parameter(oa.tensor(values((3,), 77)))
    opt = oa.optim.Adam([p], weight_decay=0.5)
    (p * 2.0).sum().backward()
    opt.step()
    np.testing.assert_array_equal(p.grad.numpy(), np.full(3, 2.0, np.float32))
    with pytest.raises(oa.InvalidArgumentError):
        oa.optim.Adam([p], weight_decay=-1.0)


def test_grad_scaler_steps_adam_with_weight_decay_as_torch():
    """oa.amp.GradScaler over Adam with L2 decay and amsgrad: torch's Adam on the unscaled gradients, the step with
    an inf gradient skipped (the scale is a power of two, so unscaling is exact)."""
    start, target = values((4, 3), 80, -2, 2), values((4, 3), 81, -2, 2)
    p_oa, p_torch = oa.nn.Parameter(oa.tensor(start)), torch.nn.Parameter(torch.tensor(start))
    opt_oa = oa.optim.Adam([p_oa], lr=0.05, weight_decay=0.1, amsgrad=True)
    opt_torch = torch.optim.Adam([p_torch], lr=0.05, weight_decay=0.1, amsgrad=True)
    scaler = oa.amp.GradScaler(init_scale=1024.0)
    for s in range(6):
        loss = ((p_oa - oa.tensor(target)) ** 2).sum() * (math.inf if s == 2 else 1.0)
        opt_oa.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt_oa)
        scaler.update()
        if s != 2:
            opt_torch.zero_grad()
            ((p_torch - torch.tensor(target)) ** 2).sum().backward()
            opt_torch.step()
        assert_close(p_oa.numpy(), p_torch.detach().numpy(), **FORWARD)
    assert scaler.get_scale() == 512.0
    assert opt_oa.state_dict()["state"][0]["step"].item() == 5


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_optimizer_takes_one_param_group(name):
    """torch's param group form: one group, its keys overriding the arguments, trains as the plain form; several
    groups, unknown keys and what is no tensor raise TypeError saying what is supported."""
    a = [oa.nn.Parameter(oa.tensor(values((4, 3), 78))), oa.nn.Parameter(oa.tensor(values((5,), 79)))]
    b = [oa.nn.Parameter(oa.tensor(p.numpy())) for p in a]
    cls = getattr(oa.optim, name)
    grouped = cls([{"params": a, "lr": 0.03, "weight_decay": 0.01}], lr=0.5)
    assert grouped.lr == pytest.approx(0.03)
    _train(oa, a, grouped, 2, 510)
    _train(oa, b, cls(iter(b), lr=0.03, weight_decay=0.01), 2, 510)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x.numpy(), y.numpy())
    with pytest.raises(TypeError, match="2 param groups given; oa's optimizers hold one set of hyperparameters"):
        cls([{"params": a[:1]}, {"params": a[1:], "lr": 0.1}])
    with pytest.raises(TypeError, match=r"key\(s\) \['initial_lr'\] are not options"):
        cls([{"params": a, "initial_lr": 0.1}])
    with pytest.raises(TypeError, match="needs the key 'params'"):
        cls([{"lr": 0.1}])
    with pytest.raises(TypeError, match="params must be tensors"):
        cls([1.0])
    with pytest.raises(TypeError, match="not a tensor"):
        cls(a[0])
