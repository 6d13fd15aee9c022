"""oa.nn modules, oa.optim and oa.save / oa.load."""
import copy
import json
import math
import struct

import numpy as np
import pytest

import oa
from reference import assert_close, check_gradients, values

nn = oa.nn
F = oa.nn.functional


class Xor(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(2, 8)
        self.act = nn.Tanh()
        self.out = nn.Linear(8, 1)

    def forward(self, x):
        return self.out(self.act(self.hidden(x)))


def test_module_subclass_trains_xor():
    oa.manual_seed(0)
    model = Xor()
    x = oa.tensor([[0.0, 0.0], [0.0, 1.0], [1.0, 0.0], [1.0, 1.0]])
    y = oa.tensor([[0.0], [1.0], [1.0], [0.0]])
    opt = oa.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
    for _ in range(300):
        opt.zero_grad()
        loss = F.mse_loss(model(x), y)
        loss.backward()
        opt.step()
    assert loss.item() < 0.01
    np.testing.assert_array_equal(model(x).numpy() > 0.5, y.numpy() > 0.5)


def test_names_state_dict_and_modes():
    oa.manual_seed(1)
    model = nn.Sequential(nn.Conv2d(1, 2, 3, padding=1), nn.BatchNorm2d(2), nn.ReLU(), Xor())
    names = [n for n, _ in model.named_parameters()]
    assert names == ["0.weight", "0.bias", "1.weight", "1.bias", "3.hidden.weight", "3.hidden.bias", "3.out.weight",
                     "3.out.bias"]
    assert list(model.state_dict()) == names[:4] + ["1.running_mean", "1.running_var", "1.num_batches_tracked"] + names[4:]
    assert [type(m).__name__ for m in model.children()] == ["Conv2d", "BatchNorm2d", "ReLU", "Xor"]
    assert len(list(model.modules())) == 8
    assert model[0].weight.shape == (2, 1, 3, 3)
    model.eval()
    assert not model[3].hidden.training
    # The running statistics move only in training mode.
    x = oa.tensor(values((2, 2, 4, 4), seed=2))
    model[1](x)
    assert_close(model[1].running_mean.numpy(), np.zeros(2))
    model.train()
    model[1](x)
    assert np.abs(model[1].running_mean.numpy()).max() > 0


def test_same_seed_same_initialisation_and_linear_bounds():
    oa.manual_seed(7)
    a = nn.Linear(16, 4)
    oa.manual_seed(7)
    b = nn.Linear(16, 4)
    np.testing.assert_array_equal(a.weight.numpy(), b.weight.numpy())
    w = a.weight.numpy()
    assert np.abs(w).max() <= 0.25 and np.abs(w).max() > 0.15  # U(-1/sqrt(16), 1/sqrt(16))
    x = values((3, 16), seed=3)
    assert_close(a(oa.tensor(x)).numpy(), x @ w.T + a.bias.numpy())


def test_layers_forward_shapes():
    oa.manual_seed(2)
    assert nn.Conv1d(2, 3, 3)(oa.randn(1, 2, 8)).shape == (1, 3, 6)
    assert nn.ConvTranspose2d(2, 3, 2, stride=2)(oa.randn(1, 2, 3, 3)).shape == (1, 3, 6, 6)
    assert nn.LayerNorm(5)(oa.randn(2, 5)).shape == (2, 5)
    emb = nn.Embedding(10, 4)
    assert emb(oa.tensor([[1, 2, 9]])).shape == (1, 3, 4)
    drop = nn.Dropout(0.5)
    x = oa.ones(100)
    assert (drop(x).numpy() == 0).any()
    drop.eval()
    np.testing.assert_array_equal(drop(x).numpy(), np.ones(100))
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    out, weights = mha(oa.randn(2, 5, 8), need_weights=False)
    assert out.shape == (2, 5, 8) and weights is None
    assert [n for n, _ in mha.named_parameters()] == ["in_proj_weight", "in_proj_bias", "out_proj.weight",
                                                      "out_proj.bias"]
    assert nn.MultiheadAttention(8, 2)(oa.randn(5, 2, 8))[0].shape == (5, 2, 8)
    for act, ref in [(nn.ReLU(), lambda v: np.maximum(v, 0)), (nn.Tanh(), np.tanh),
                     (nn.Sigmoid(), lambda v: 1 / (1 + np.exp(-v))), (nn.SiLU(), lambda v: v / (1 + np.exp(-v)))]:
        v = values((6,), seed=4)
        assert_close(act(oa.tensor(v)).numpy(), ref(v))
    assert nn.GELU()(oa.zeros(3)).shape == (3,)
    assert nn.Flatten()(oa.zeros(2, 3, 4, 5)).shape == (2, 60)
    assert nn.Flatten(0, 1)(oa.zeros(2, 3, 4)).shape == (6, 4)


def test_transformer_block_is_pre_norm_and_causal():
    oa.manual_seed(3)
    d = 8
    block = nn.TransformerBlock(d, 2, causal=True)
    names = [n for n, _ in block.named_parameters()]
    assert names == ["norm1.weight", "norm1.bias", "attn.qkv.weight", "attn.qkv.bias", "attn.proj.weight",
                     "attn.proj.bias", "norm2.weight", "norm2.bias", "mlp.0.weight", "mlp.0.bias", "mlp.2.weight",
                     "mlp.2.bias"]
    assert sum(p.numel() for p in block.parameters()) == 12 * d * d + 13 * d
    x = values((2, 5, d), 41)
    changed = x.copy()
    changed[:, 3:] += 1.0  # later positions change; a causal block's first three outputs do not
    a, b = block(oa.tensor(x)).numpy(), block(oa.tensor(changed)).numpy()
    assert a.shape == (2, 5, d)
    np.testing.assert_allclose(a[:, :3], b[:, :3], rtol=1e-5, atol=1e-5)
    assert not np.allclose(a[:, 3:], b[:, 3:])
    with pytest.raises(oa.InvalidArgumentError):
        nn.TransformerBlock(6, 4)


def test_norm_modules():
    x = values((3, 4, 2, 2), 30, -2, 2)
    x64 = x.astype(np.float64)
    gn = nn.GroupNorm(2, 4)
    assert [n for n, _ in gn.named_parameters()] == ["weight", "bias"]
    g = x64.reshape(3, 2, -1)
    expected = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + 1e-5)).reshape(x.shape)
    assert_close(gn(oa.tensor(x)).numpy(), expected)
    inorm = nn.InstanceNorm2d(4)
    assert list(inorm.named_parameters()) == []
    p = x64.reshape(3, 4, -1)
    expected = ((p - p.mean(-1, keepdims=True)) / np.sqrt(p.var(-1, keepdims=True) + 1e-5)).reshape(x.shape)
    assert_close(inorm(oa.tensor(x)).numpy(), expected)
    with pytest.raises(ValueError, match="track_running_stats"):
        nn.InstanceNorm2d(4, track_running_stats=True)
    bn = nn.BatchNorm1d(4, momentum=0.5)
    v = x.reshape(3, 4, 4)
    v64 = v.astype(np.float64)
    m, var = v64.mean(axis=(0, 2)), v64.var(axis=(0, 2))
    assert_close(bn(oa.tensor(v)).numpy(), (v64 - m[None, :, None]) / np.sqrt(var[None, :, None] + 1e-5))
    assert_close(bn.running_mean.numpy(), 0.5 * m)
    assert list(bn.state_dict()) == ["weight", "bias", "running_mean", "running_var", "num_batches_tracked"]
    assert bn.num_batches_tracked.dtype == oa.int32 and bn.num_batches_tracked.shape == ()
    assert bn.num_batches_tracked.item() == 1
    flat = v[:, :, 0]
    bn.eval()
    assert_close(bn(oa.tensor(flat)).numpy(), (flat - 0.5 * m) / np.sqrt(bn.running_var.numpy() + 1e-5))
    rms = nn.RMSNorm([4], eps=1e-6)
    assert_close(rms(oa.tensor(flat)).numpy(), flat / np.sqrt((flat.astype(np.float64) ** 2).mean(-1, keepdims=True) + 1e-6))


def test_module_dtype_moves():
    model = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    assert model.float() is model and model.to(oa.float32) is model
    assert all(p.dtype == oa.float32 for p in model.parameters())
    for move in (model.half, model.bfloat16, lambda: model.to(oa.float16)):
        with pytest.raises(oa.UnsupportedError, match="oa.autocast"):
            move()
    with pytest.raises(TypeError, match="floating point"):
        model.to(oa.int32)
    assert model.to(oa.float32, non_blocking=True) is model and model.to(dtype=oa.float32, non_blocking=True) is model


def test_engine_equality_and_module_to_device():
    e = oa.default_engine()
    assert (e == None) is False and (e != None) is True and e != "cpu"  # noqa: E711 (Python's fallback, no TypeError)
    assert e in [None, e] and e == oa.default_engine() and None not in [e]
    model = nn.Sequential(nn.Linear(3, 2), nn.BatchNorm1d(2))
    for device in (e, "cuda", "cuda:0", "vulkan", oa.zeros(1)):
        assert model.to(device) is model
    assert model.to(e, oa.float32, non_blocking=True) is model and model.to(device=e, dtype=oa.float32) is model
    with pytest.raises(oa.UnsupportedError, match=r"oa has no CPU device.*\.numpy\(\)"):
        model.to("cpu")
    with pytest.raises(oa.UnsupportedError, match="float32"):
        model.to(e, oa.float16)
    with pytest.raises(oa.UnsupportedError, match="not an oa device"):
        model.to("mps")
    with pytest.raises(TypeError, match="oa.nn.Module.to: expected a dtype"):
        model.to(3)


def test_batch_norm_momentum_none_averages_and_counts_batches():
    # torch.nn.BatchNorm1d(momentum=None): the running statistics are the plain average of the batches'.
    bn = nn.BatchNorm1d(3, momentum=None)
    batches = [values((5, 3), 40 + i, -2, 3) for i in range(3)]
    for b in batches:
        bn(oa.tensor(b))
    assert bn.num_batches_tracked.item() == 3
    b64 = [b.astype(np.float64) for b in batches]
    assert_close(bn.running_mean.numpy(), np.mean([b.mean(0) for b in b64], axis=0))
    assert_close(bn.running_var.numpy(), np.mean([b.var(0, ddof=1) for b in b64], axis=0))
    bn.eval()
    bn(oa.tensor(batches[0]))
    assert bn.num_batches_tracked.item() == 3
    # A torch-style state_dict (int64 counter) loads, and counting goes on from it.
    other = nn.BatchNorm1d(3, momentum=None)
    state = {k: v.numpy() for k, v in bn.state_dict().items() if k != "num_batches_tracked"}
    other.load_state_dict({**state, "num_batches_tracked": np.array(9, dtype=np.int64)})
    assert other.num_batches_tracked.item() == 9
    other(oa.tensor(batches[1]))
    assert other.num_batches_tracked.item() == 10
    want = 0.9 * bn.running_mean.numpy().astype(np.float64) + 0.1 * b64[1].mean(0)
    assert_close(other.running_mean.numpy(), want)


def test_multihead_attention_masks():
    oa.manual_seed(3)
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    q, k = values((2, 3, 8), 31), values((2, 4, 8), 32)
    padding = np.array([[False, False, True, False], [False, True, True, False]])
    out, _ = mha(oa.tensor(q), oa.tensor(k), oa.tensor(k), key_padding_mask=oa.tensor(padding))
    # Padded keys do not matter: replacing them changes nothing.
    k2 = k.copy()
    k2[padding] = 5.0
    out2, _ = mha(oa.tensor(q), oa.tensor(k2), oa.tensor(k2), key_padding_mask=oa.tensor(padding))
    assert_close(out.numpy(), out2.numpy())
    # The same mask as a float attn_mask per head ([B * H, Sq, Sk], -inf where padded).
    additive = np.repeat(np.where(padding, -np.inf, 0.0).astype(np.float32), 2 * 3, axis=0).reshape(2, 2, 3, 4)
    out3, _ = mha(oa.tensor(q), oa.tensor(k), oa.tensor(k), attn_mask=oa.tensor(additive.reshape(4, 3, 4)))
    assert_close(out.numpy(), out3.numpy())
    # A float16 mask (the query's dtype under autocast in torch) is added as float32.
    out4, _ = mha(oa.tensor(q), oa.tensor(k), oa.tensor(k), attn_mask=oa.tensor(additive.reshape(4, 3, 4)).half(),
                  key_padding_mask=oa.tensor(np.where(padding, -np.inf, 0.0)).half())
    assert_close(out.numpy(), out4.numpy())
    # NumPy: softmax(q k^T / sqrt(dh) + mask) v per head, with the module's weights.
    w, b = mha.in_proj_weight.numpy().astype(np.float64), mha.in_proj_bias.numpy().astype(np.float64)
    heads = lambda t: t.reshape(2, -1, 2, 4).transpose(0, 2, 1, 3)
    qh, kh, vh = heads(q @ w[:8].T + b[:8]), heads(k @ w[8:16].T + b[8:16]), heads(k @ w[16:].T + b[16:])
    s = qh @ kh.transpose(0, 1, 3, 2) / 2.0 + np.where(padding, -np.inf, 0.0)[:, None, None, :]
    p = np.exp(s - s.max(-1, keepdims=True))
    o = ((p / p.sum(-1, keepdims=True)) @ vh).transpose(0, 2, 1, 3).reshape(2, 3, 8)
    assert_close(out.numpy(), o @ mha.out_proj.weight.numpy().T + mha.out_proj.bias.numpy())


def mha_reference(mha, q, k, v, mask=None):
    """float64 torch.nn.MultiheadAttention of batch-first q [N, L, E], k [N, S, kdim] and v [N, S, vdim] with mha's
    parameters (an oa MultiheadAttention of 2 heads, or a state_dict of NumPy arrays under torch's keys: in_proj_weight,
    or q_proj_weight, k_proj_weight and v_proj_weight; without the biases when it has none) and an additive mask
    broadcasting to [N, H, L, S]: (output [N, L, E], weights per head [N, H, L, S])."""
    n, l, e = q.shape
    heads = 2
    state = {name: np.asarray(t.numpy() if isinstance(t, oa.Tensor) else t, np.float64)
             for name, t in (mha.state_dict() if isinstance(mha, nn.Module) else mha).items()}
    w = ([state["in_proj_weight"][i * e:(i + 1) * e] for i in range(3)] if "in_proj_weight" in state else
         [state[f"{part}_proj_weight"] for part in "qkv"])
    wo = state["out_proj.weight"]
    b, bo = state.get("in_proj_bias", np.zeros(3 * e)), state.get("out_proj.bias", np.zeros(e))
    split = lambda t: t.reshape(n, -1, heads, e // heads).transpose(0, 2, 1, 3)
    qh, kh, vh = (split(t @ w[i].T + b[i * e:(i + 1) * e]) for i, t in enumerate((q, k, v)))
    s = qh @ kh.transpose(0, 1, 3, 2) / math.sqrt(e // heads) + (0.0 if mask is None else mask)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return (p @ vh).transpose(0, 2, 1, 3).reshape(n, l, e) @ wo.T + bo, p


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("kdim, vdim", [(8, 8), (6, 5)])  # the packed in_proj_weight, torch's separate weights
def test_multihead_attention_returns_torchs_weights_by_default(batch_first, kdim, vdim):
    # torch's need_weights=True default: weights [N, L, S] averaged over heads, [N, H, L, S] with
    # average_attn_weights=False, batch-first whatever batch_first is.
    oa.manual_seed(4)
    mha = nn.MultiheadAttention(8, 2, kdim=kdim, vdim=vdim, batch_first=batch_first)
    q, k, v = values((2, 3, 8), 41), values((2, 4, kdim), 42), values((2, 4, vdim), 43)
    padding = np.array([[False, True, False, False], [False, False, False, True]])
    additive = values((4, 3, 4), 44)  # [N * H, L, S]
    mask = np.where(padding, -np.inf, 0.0)[:, None, None, :] + additive.reshape(2, 2, 3, 4)
    want_out, want_w = mha_reference(mha, q, k, v, mask)
    layout = (lambda t: t) if batch_first else (lambda t: np.ascontiguousarray(t.transpose(1, 0, 2)))
    args = [oa.tensor(layout(t)) for t in (q, k, v)]
    kwargs = dict(key_padding_mask=oa.tensor(padding), attn_mask=oa.tensor(additive))
    out, w = mha(*args, **kwargs)
    assert_close(out.numpy(), layout(want_out))
    assert w.shape == (2, 3, 4) and w.dtype == oa.float32
    assert_close(w.numpy(), want_w.mean(1))
    out, w = mha(*args, average_attn_weights=False, **kwargs)
    assert_close(w.numpy(), want_w)
    fast, none = mha(*args, need_weights=False, **kwargs)
    assert none is None
    assert_close(fast.numpy(), out.numpy())
    # Self-attention with the module's causal mask (bottom-right aligned: query i sees keys j <= i).
    causal = nn.MultiheadAttention(8, 2, batch_first=batch_first, causal=True)
    out, w = causal(args[0])
    want_out, want_w = mha_reference(causal, q, q, q, np.triu(np.full((3, 3), -np.inf), 1))
    assert_close(out.numpy(), layout(want_out))
    assert_close(w.numpy(), want_w.mean(1))


def test_multihead_attention_unbatched():
    # torch's unbatched form: query [L, E], key and value [S, E], key_padding_mask [S], attn_mask [H, L, S];
    # the output [L, E], weights [L, S] or [H, L, S].
    oa.manual_seed(5)
    mha = nn.MultiheadAttention(8, 2)
    q, k = values((3, 8), 45), values((4, 8), 46)
    padding = np.array([False, False, True, False])
    additive = values((2, 3, 4), 47)
    want_out, want_w = mha_reference(mha, q[None], k[None], k[None],
                                     np.where(padding, -np.inf, 0.0) + additive[None])
    for need_weights in (True, False):
        out, w = mha(oa.tensor(q), oa.tensor(k), oa.tensor(k), key_padding_mask=oa.tensor(padding),
                     attn_mask=oa.tensor(additive), need_weights=need_weights)
        assert_close(out.numpy(), want_out[0])
        if need_weights:
            assert_close(w.numpy(), want_w[0].mean(0))
        else:
            assert w is None
    _, w = mha(oa.tensor(q), oa.tensor(k), oa.tensor(k), average_attn_weights=False)
    assert w.shape == (2, 3, 4)
    with pytest.raises(oa.InvalidArgumentError, match=r"MultiheadAttention: key \[1, 4, 8\] must be \[S, kdim\] "
                       r"with kdim = 8 .*as query \[3, 8\] is unbatched"):
        mha(oa.tensor(q), oa.tensor(k[None]), oa.tensor(k[None]))
    with pytest.raises(oa.InvalidArgumentError, match=r"MultiheadAttention: query \[3, 4\] must be \[L, E\] with "
                       r"E = 8"):
        mha(oa.ones(3, 4))
    with pytest.raises(oa.InvalidArgumentError, match=r"key \[4, 8\] and value \[5, 8\] must be \[S, kdim\] and "
                       r"\[S, vdim\] with one S$"):
        mha(oa.tensor(q), oa.tensor(k), oa.ones(5, 8))


def test_multihead_attention_weights_gradients():
    # Finite differences of the float64 reference: through the averaged weights to the query and the key,
    # and through the output (on the materialised path) to the query.
    oa.manual_seed(6)
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    q, k = values((2, 3, 8), 48), values((2, 4, 8), 49)
    check_gradients(lambda a, b: mha(a, b, b)[1], lambda a, b: mha_reference(mha, a, b, b)[1].mean(1), [q, k])
    check_gradients(lambda a: mha(a, oa.tensor(k), oa.tensor(k))[0], lambda a: mha_reference(mha, a, k, k)[0], [q])
    # The parameters' gradients through the output match the flash path's.
    x = oa.tensor(q)
    grads = []
    for need_weights in (True, False):
        mha.zero_grad()
        mha(x, need_weights=need_weights)[0].sum().backward()
        grads.append([p.grad.numpy() for p in mha.parameters()])
    for a, b in zip(*grads):
        assert_close(a, b)


def test_multihead_attention_without_bias():
    oa.manual_seed(7)
    mha = nn.MultiheadAttention(8, 2, bias=False, batch_first=True)
    assert [n for n, _ in mha.named_parameters()] == ["in_proj_weight", "out_proj.weight"]
    assert mha.in_proj_bias is None and mha.out_proj.bias is None
    q, k = values((2, 3, 8), 50), values((2, 4, 8), 51)
    want_out, want_w = mha_reference(mha, q, k, k)
    out, w = mha(oa.tensor(q), oa.tensor(k), oa.tensor(k))
    assert_close(out.numpy(), want_out)
    assert_close(w.numpy(), want_w.mean(1))
    self_out, _ = mha(oa.tensor(q), need_weights=False)
    assert_close(self_out.numpy(), mha_reference(mha, q, q, q)[0])
    assert "bias=False" in repr(mha)


def test_multihead_attention_initialises_as_torch():
    # torch's _reset_parameters: in_proj_weight xavier-uniform over fans (E, 3E), the biases zeros, out_proj.weight
    # as Linear's (kaiming-uniform with a = sqrt(5): bound 1 / sqrt(E)).
    oa.manual_seed(3)
    e = 64
    mha = nn.MultiheadAttention(e, 4)
    w = mha.in_proj_weight.numpy().astype(np.float64)
    bound = np.sqrt(6.0 / (e + 3 * e))
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.98 * bound
    assert abs(w.std() - bound / np.sqrt(3.0)) < 0.03 * bound
    assert not mha.in_proj_bias.numpy().any() and not mha.out_proj.bias.numpy().any()
    wo = mha.out_proj.weight.numpy().astype(np.float64)
    assert np.abs(wo).max() <= 1 / np.sqrt(e) and np.abs(wo).max() > 0.95 / np.sqrt(e)
    assert nn.MultiheadAttention(e, 4, bias=False).in_proj_bias is None


def test_multihead_attention_has_torchs_parameters():
    # torch's names, shapes and order; a torch state_dict (NumPy arrays here) loads into the storage that the
    # forward, the gradients and the optimizers use.
    mha = nn.MultiheadAttention(8, 2, batch_first=True)
    shapes = {"in_proj_weight": (24, 8), "in_proj_bias": (24,), "out_proj.weight": (8, 8), "out_proj.bias": (8,)}
    assert [(n, p.shape) for n, p in mha.named_parameters()] == list(shapes.items())
    assert list(mha.state_dict()) == list(shapes) and len(list(mha.parameters())) == 4
    assert isinstance(mha.out_proj, nn.Linear) and mha.out_proj.weight is mha.state_dict()["out_proj.weight"]
    assert mha.in_proj_weight is mha.state_dict()["in_proj_weight"] and mha.q_proj_weight is None
    assert mha.kdim == mha.vdim == 8 and mha.head_dim == 4 and mha.num_heads == 2
    assert "(out_proj): Linear(in_features=8, out_features=8, bias=True)" in repr(mha)
    state = {name: values(shape, 60 + i) for i, (name, shape) in enumerate(shapes.items())}
    mha.load_state_dict(state)
    q = values((2, 3, 8), 64)
    x = oa.tensor(q)
    out, _ = mha(x)
    assert_close(out.numpy(), mha_reference(state, q, q, q)[0])
    # Gradients of sum(out * W) reach the torch-named parameters: central differences of the float64 reference.
    w = values((2, 3, 8), 65)
    out.backward(oa.tensor(w))
    for name in ("in_proj_bias", "out_proj.bias"):
        numeric = np.zeros(shapes[name])
        for j in range(numeric.size):
            plus, minus = dict(state), dict(state)
            plus[name], minus[name] = state[name].astype(np.float64), state[name].astype(np.float64)
            plus[name][j] += 1e-6
            minus[name][j] -= 1e-6
            numeric[j] = np.sum((mha_reference(plus, q, q, q)[0] - mha_reference(minus, q, q, q)[0]) * w) / 2e-6
        assert_close(dict(mha.named_parameters())[name].grad.numpy(), numeric, rtol=2e-3, atol=2e-4)
    # An optimizer step updates the values the forward uses.
    before = {name: p.numpy().astype(np.float64) for name, p in mha.named_parameters()}
    grads = {name: p.grad.numpy().astype(np.float64) for name, p in mha.named_parameters()}
    oa.optim.SGD(mha.parameters(), lr=0.5).step()
    stepped = {name: before[name] - 0.5 * grads[name] for name in before}
    assert_close(mha(x, need_weights=False)[0].numpy(), mha_reference(stepped, q, q, q)[0])
    # A new Parameter replaces in_proj_weight in the forward too; another shape is refused, naming it.
    mha.in_proj_weight = nn.Parameter(oa.tensor(state["in_proj_weight"]))
    stepped["in_proj_weight"] = state["in_proj_weight"]
    assert_close(mha(x)[0].numpy(), mha_reference(stepped, q, q, q)[0])
    with pytest.raises(oa.InvalidArgumentError, match=r"MultiheadAttention: parameter 'in_proj_weight' is float32 "
                       r"\[24, 8\], the new Parameter is float32 \[8, 8\]"):
        mha.in_proj_weight = nn.Parameter(oa.zeros(8, 8))
    # In a model: prefixed names, and a deep copy keeps them with the values.
    model = nn.Sequential(nn.Linear(8, 8), mha)
    assert [n for n, _ in model.named_parameters()][2:] == ["1." + n for n in shapes]
    dup = copy.deepcopy(mha)
    assert list(dup.state_dict()) == list(shapes)
    for name, t in dup.state_dict().items():
        np.testing.assert_array_equal(t.numpy(), mha.state_dict()[name].numpy())


@pytest.mark.parametrize("argument", ["add_bias_kv", "add_zero_attn"])
def test_multihead_attention_refuses_what_it_lacks(argument):
    with pytest.raises(NotImplementedError, match=rf"MultiheadAttention: {argument}=True is not supported"):
        nn.MultiheadAttention(8, 2, **{argument: True})
    mha = nn.MultiheadAttention(8, 2, kdim=8, vdim=8)  # torch's same-size form: the packed in_proj_weight
    assert mha.in_proj_weight.shape == (24, 8) and mha.k_proj_weight is None


# kdim and vdim other than embed_dim: torch's separate q_proj_weight [E, E], k_proj_weight [E, kdim] and
# v_proj_weight [E, vdim] replace in_proj_weight.
KV_SHAPES = {"q_proj_weight": (8, 8), "k_proj_weight": (8, 6), "v_proj_weight": (8, 5), "in_proj_bias": (24,),
             "out_proj.weight": (8, 8), "out_proj.bias": (8,)}


@pytest.mark.parametrize("batch_first", [True, False])
def test_multihead_attention_kdim_vdim(batch_first):
    # Names, a bool attn_mask, the unbatched form and the inputs' gradients (masks and weights:
    # test_multihead_attention_returns_torchs_weights_by_default).
    oa.manual_seed(9)
    mha = nn.MultiheadAttention(8, 2, kdim=6, vdim=5, batch_first=batch_first)
    assert [(n, p.shape) for n, p in mha.named_parameters()] == list(KV_SHAPES.items())
    assert list(mha.state_dict()) == list(KV_SHAPES) and mha.in_proj_weight is None and mha.bias_k is None
    assert (mha.kdim, mha.vdim) == (6, 5)
    mha.load_state_dict({name: values(shape, 70 + i) for i, (name, shape) in enumerate(KV_SHAPES.items())})
    q, k, v = values((2, 3, 8), 81), values((2, 4, 6), 82), values((2, 4, 5), 83)
    layout = (lambda t: t) if batch_first else (lambda t: np.ascontiguousarray(t.transpose(1, 0, 2)))
    args = [oa.tensor(layout(t)) for t in (q, k, v)]
    # A bool attn_mask [L, S], and the unbatched form.
    hidden = np.array([[False, True, False, False], [False, False, False, False], [True, False, False, True]])
    out, _ = mha(*args, attn_mask=oa.tensor(hidden), need_weights=False)
    assert_close(out.numpy(), layout(mha_reference(mha, q, k, v, np.where(hidden, -np.inf, 0.0))[0]))
    out, w = mha(oa.tensor(q[0]), oa.tensor(k[0]), oa.tensor(v[0]))
    want_out, want_w = mha_reference(mha, q[:1], k[:1], v[:1])
    assert_close(out.numpy(), want_out[0])
    assert_close(w.numpy(), want_w[0].mean(0))
    # Gradients of query, key and value (batch-first here) through the output on both paths, and through the
    # weights.
    to = (lambda t: t) if batch_first else (lambda t: t.transpose(0, 1))
    padding = np.array([[False, True, False, False], [False, False, False, True]])
    padded = np.where(padding, -np.inf, 0.0)[:, None, None, :]
    for need_weights in (True, False):
        check_gradients(lambda a, b, c: to(mha(to(a), to(b), to(c), key_padding_mask=oa.tensor(padding),
                                               need_weights=need_weights)[0]),
                        lambda a, b, c: mha_reference(mha, a, b, c, padded)[0], [q, k, v])
    check_gradients(lambda a, b, c: mha(to(a), to(b), to(c))[1],
                    lambda a, b, c: mha_reference(mha, a, b, c)[1].mean(1), [q, k, v])


def test_multihead_attention_kdim_vdim_parameters():
    # A torch state_dict of the separate form loads as it is; the parameters get the gradients, an optimizer step
    # reaches the forward, and a new Parameter replaces one (another shape is refused, naming both).
    oa.manual_seed(10)
    mha = nn.MultiheadAttention(8, 2, kdim=6, vdim=5, batch_first=True)
    state = {name: values(shape, 90 + i) for i, (name, shape) in enumerate(KV_SHAPES.items())}
    mha.load_state_dict(state)
    for name, t in mha.state_dict().items():
        np.testing.assert_array_equal(t.numpy(), state[name])
    q, k, v = values((2, 3, 8), 96), values((2, 4, 6), 97), values((2, 4, 5), 98)
    out, _ = mha(oa.tensor(q), oa.tensor(k), oa.tensor(v), need_weights=False)
    assert_close(out.numpy(), mha_reference(state, q, k, v)[0])
    w = values((2, 3, 8), 99)
    out.backward(oa.tensor(w))
    loss = lambda s: np.sum(mha_reference(s, q, k, v)[0] * w)
    for name in ("k_proj_weight", "v_proj_weight", "in_proj_bias"):
        numeric = np.zeros(KV_SHAPES[name])
        for j in range(numeric.size):
            plus, minus = dict(state), dict(state)
            plus[name], minus[name] = state[name].astype(np.float64), state[name].astype(np.float64)
            plus[name].reshape(-1)[j] += 1e-6
            minus[name].reshape(-1)[j] -= 1e-6
            numeric.reshape(-1)[j] = (loss(plus) - loss(minus)) / 2e-6
        assert_close(getattr(mha, name).grad.numpy(), numeric, rtol=2e-3, atol=2e-4)
    before = {name: p.numpy().astype(np.float64) for name, p in mha.named_parameters()}
    grads = {name: p.grad.numpy().astype(np.float64) for name, p in mha.named_parameters()}
    oa.optim.SGD(mha.parameters(), lr=0.5).step()
    stepped = {name: before[name] - 0.5 * grads[name] for name in before}
    out, _ = mha(oa.tensor(q), oa.tensor(k), oa.tensor(v))
    assert_close(out.numpy(), mha_reference(stepped, q, k, v)[0])
    mha.k_proj_weight = nn.Parameter(oa.tensor(state["k_proj_weight"]))
    stepped["k_proj_weight"] = state["k_proj_weight"]
    out, _ = mha(oa.tensor(q), oa.tensor(k), oa.tensor(v))
    assert_close(out.numpy(), mha_reference(stepped, q, k, v)[0])
    with pytest.raises(oa.InvalidArgumentError, match=r"k_proj_weight.*\[8, 6\].*\[6, 8\]"):
        mha.k_proj_weight = nn.Parameter(oa.zeros(6, 8))
    dup = copy.deepcopy(mha)
    assert list(dup.state_dict()) == list(KV_SHAPES)
    for name, t in dup.state_dict().items():
        np.testing.assert_array_equal(t.numpy(), mha.state_dict()[name].numpy())
    # bias=False: no in_proj_bias, as torch's.
    plain = nn.MultiheadAttention(8, 2, bias=False, kdim=6, vdim=5)
    assert [n for n, _ in plain.named_parameters()] == ["q_proj_weight", "k_proj_weight", "v_proj_weight",
                                                        "out_proj.weight"]
    assert plain.in_proj_bias is None and plain.in_proj_weight is None


def test_multihead_attention_kdim_vdim_initialises_as_torch():
    # torch's _reset_parameters: q, k and v_proj_weight xavier-uniform over fans (dim, E), the biases zeros.
    oa.manual_seed(11)
    e = 64
    mha = nn.MultiheadAttention(e, 4, kdim=32, vdim=96)
    for name, fan in (("q_proj_weight", e), ("k_proj_weight", 32), ("v_proj_weight", 96)):
        w = getattr(mha, name).numpy().astype(np.float64)
        bound = np.sqrt(6.0 / (e + fan))
        assert np.abs(w).max() <= bound and np.abs(w).max() > 0.97 * bound, name
        assert abs(w.std() - bound / np.sqrt(3.0)) < 0.04 * bound, name
    assert not mha.in_proj_bias.numpy().any() and not mha.out_proj.bias.numpy().any()


@pytest.mark.parametrize("batch_first", [True, False])
def test_multihead_attention_kdim_vdim_errors(batch_first):
    mha = nn.MultiheadAttention(8, 2, kdim=6, vdim=5, batch_first=batch_first)
    layout = "N, S" if batch_first else "S, N"
    q, k, v = oa.ones(2, 3, 8), oa.ones(2, 4, 6), oa.ones(2, 4, 5)
    with pytest.raises(oa.InvalidArgumentError, match=rf"^oa.nn.MultiheadAttention: key \[2, 4, 8\] must be "
                       rf"\[{layout}, kdim\] with kdim = 6"):
        mha(q, oa.ones(2, 4, 8), v)
    with pytest.raises(oa.InvalidArgumentError, match=rf"^oa.nn.MultiheadAttention: value \[2, 4, 6\] must be "
                       rf"\[{layout}, vdim\] with vdim = 5"):
        mha(q, k, oa.ones(2, 4, 6))
    with pytest.raises(oa.InvalidArgumentError, match=r"^oa.nn.MultiheadAttention: key \[2, 3, 8\] must be"):
        mha(q)  # self-attention needs kdim == vdim == embed_dim
    with pytest.raises(oa.InvalidArgumentError, match=rf"^oa.nn.MultiheadAttention: key \[2, 4, 6\] and value "
                       rf"\[2, 5, 5\] must be \[{layout}, kdim\] and \[{layout}, vdim\] with one S"):
        mha(q, k, oa.ones(2, 5, 5))
    with pytest.raises(oa.InvalidArgumentError, match=r"^oa.nn.MultiheadAttention: value \[4, 6\] must be "
                       r"\[S, vdim\] with vdim = 5 .*as query \[3, 8\] is unbatched"):
        mha(oa.ones(3, 8), oa.ones(4, 6), oa.ones(4, 6))


def test_multihead_attention_weights_after_dropout_in_training():
    # As torch, the weights returned in training are the dropped probabilities that the output used.
    oa.manual_seed(8)
    mha = nn.MultiheadAttention(8, 2, dropout=0.5, batch_first=True)
    q = values((2, 5, 8), 52)
    out, w = mha(oa.tensor(q), average_attn_weights=False)
    _, p = mha_reference(mha, q, q, q)
    w = w.numpy()
    kept = w != 0
    assert 0 < kept.sum() < w.size
    assert_close(w[kept], 2 * p[kept])  # kept probabilities scaled by 1 / (1 - p)
    e, wv, bv = 8, mha.in_proj_weight.numpy().astype(np.float64)[16:], mha.in_proj_bias.numpy().astype(np.float64)[16:]
    vh = (q @ wv.T + bv).reshape(2, 5, 2, 4).transpose(0, 2, 1, 3)
    o = (w @ vh).transpose(0, 2, 1, 3).reshape(2, 5, e)
    assert_close(out.numpy(), o @ mha.out_proj.weight.numpy().T + mha.out_proj.bias.numpy())


def test_parameter_and_zero_grad():
    p = nn.Parameter(oa.ones(3))
    assert isinstance(p, oa.Tensor) and p.requires_grad and p.is_leaf
    (p * 2).sum().backward()
    np.testing.assert_array_equal(p.grad.numpy(), [2, 2, 2])
    m = nn.Module()
    m.p = p
    m.zero_grad()
    assert p.grad is None
    for opt in (oa.optim.SGD, oa.optim.Adam, oa.optim.AdamW):
        with pytest.raises(TypeError, match="float32 leaf tensors that require grad"):
            opt([oa.ones(3)])


def test_assigning_a_tensor_to_a_parameter_raises():
    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(oa.ones(2))

        def forward(self, x):
            return x * self.w

    m = Scale()
    w = m.w
    with pytest.raises(TypeError, match=r"cannot assign 'oa.Tensor' as parameter 'w' \(oa.nn.Parameter or None expected\)"):
        m.w = m.w * 0.0
    with pytest.raises(TypeError, match="cannot assign 'builtins.float' as parameter 'w'"):
        m.w = 2.0
    assert m.w is w and list(m.parameters()) == [w]
    np.testing.assert_array_equal(m(oa.full((2,), 3.0)).numpy(), [3, 3])
    m.w = nn.Parameter(oa.full((2,), 2.0))
    assert list(m.parameters()) == [m.w] and m.w is not w
    np.testing.assert_array_equal(m(oa.full((2,), 3.0)).numpy(), [6, 6])
    m.w = None
    assert m.w is None and list(m.parameters()) == []
    lin = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="as parameter 'weight'"):
        lin.weight = lin.weight * 0.0
    assert [name for name, _ in lin.named_parameters()] == ["weight", "bias"]


def test_adamw_matches_the_formula():
    p = nn.Parameter(oa.tensor([1.0, -2.0]))
    opt = oa.optim.AdamW([p], lr=0.1, betas=(0.9, 0.99), eps=1e-8, weight_decay=0.1)
    (p * p).sum().backward()
    opt.step()
    w = np.array([1.0, -2.0])
    g = 2 * w
    w = w * (1 - 0.1 * 0.1)
    m, v = 0.1 * g, 0.01 * g * g
    w = w - 0.1 / 0.1 * m / (np.sqrt(v) / np.sqrt(0.01) + 1e-8)
    assert_close(p.numpy(), w)
    assert opt.steps == 1
    opt.lr = oa.optim.warmup_cosine_lr(5, 1.0, 10, 100)
    assert opt.lr == pytest.approx(0.5)


def test_sgd_nesterov_and_weight_decay():
    p = nn.Parameter(oa.tensor([1.0]))
    opt = oa.optim.SGD([p], lr=0.1, momentum=0.5, weight_decay=0.2, nesterov=True)
    for _ in range(2):
        opt.zero_grad()
        (p * 3.0).sum().backward()
        opt.step()
    w, b = 1.0, None
    for _ in range(2):
        d = 3.0 + 0.2 * w
        b = d if b is None else 0.5 * b + d
        w -= 0.1 * (d + 0.5 * b)
    assert_close(p.numpy(), [w])
    with pytest.raises(ValueError):
        oa.optim.SGD([p], lr=0.1, nesterov=True)


def test_save_load_round_trip(tmp_path):
    oa.manual_seed(3)
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm2d(4))
    path = tmp_path / "model.safetensors"
    oa.save(model.state_dict(), path)
    loaded = oa.load(path)
    assert list(loaded) == list(model.state_dict())
    for name, t in model.state_dict().items():
        np.testing.assert_array_equal(loaded[name].numpy(), t.numpy())
    # The header is safetensors: u64 length, JSON with dtype, shape, data_offsets.
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    assert header["0.weight"]["dtype"] == "F32" and header["0.weight"]["shape"] == [4, 3]
    begin, end = header["0.weight"]["data_offsets"]
    np.testing.assert_array_equal(np.frombuffer(raw[8 + n + begin:8 + n + end], dtype="<f4").reshape(4, 3),
                                  model[0].weight.numpy())
    oa.manual_seed(4)
    other = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm2d(4))
    assert not np.array_equal(other[0].weight.numpy(), model[0].weight.numpy())
    other.load_state_dict(oa.load(path))
    np.testing.assert_array_equal(other[0].weight.numpy(), model[0].weight.numpy())
    with pytest.raises(KeyError):
        other.load_state_dict({"0.weight": loaded["0.weight"]})
    with pytest.raises(ValueError, match="0.bias"):
        other.load_state_dict({**loaded, "0.bias": oa.zeros(5)})


def test_save_load_bool_and_int32(tmp_path):
    path = tmp_path / "mask.safetensors"
    mask, ids = oa.tensor([[True, False, True], [False, False, True]]), oa.tensor([3, -7])
    oa.save({"mask": mask, "ids": ids}, path)
    loaded = oa.load(path)
    assert loaded["mask"].dtype == oa.bool and loaded["ids"].dtype == oa.int32
    np.testing.assert_array_equal(loaded["mask"].numpy(), mask.numpy())
    np.testing.assert_array_equal(loaded["ids"].numpy(), ids.numpy())
    raw = path.read_bytes()  # safetensors BOOL: one byte an element
    (n,) = struct.unpack("<Q", raw[:8])
    assert json.loads(raw[8:8 + n])["mask"] == {"dtype": "BOOL", "shape": [2, 3], "data_offsets": [0, 6]}


def test_load_state_dict_takes_numpy_arrays_and_names_bad_values():
    model = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    sd = model.state_dict()
    model.load_state_dict({**sd, "0.bias": np.arange(3), "1.running_var": np.full(3, 2.0)})  # cast to float32
    np.testing.assert_array_equal(model[0].bias.numpy(), [0, 1, 2])
    np.testing.assert_array_equal(model[1].running_var.numpy(), [2, 2, 2])
    with pytest.raises(ValueError, match="'0.bias' is f32 \\[3\\] in the module, f32 \\[4\\] in the state_dict"):
        model.load_state_dict({**sd, "0.bias": np.zeros(4, np.float32)})
    with pytest.raises(TypeError, match="'0.bias' must be an oa.Tensor, a NumPy array or a CPU torch.Tensor, not str"):
        model.load_state_dict({**sd, "0.bias": "zeros"})


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _recurrent_reference(lstm, params, x, num_layers, h0, c0=None):
    """torch.nn.LSTM / GRU's equations in f64 over x [T, B, I]: (output, h_n[, c_n])."""
    hn, cn = [], []
    for k in range(num_layers):
        w_ih, w_hh = params[f"weight_ih_l{k}"], params[f"weight_hh_l{k}"]
        b_ih, b_hh = params[f"bias_ih_l{k}"], params[f"bias_hh_l{k}"]
        h = h0[k].copy()
        c = c0[k].copy() if lstm else None
        outs = []
        for t in range(x.shape[0]):
            gx, gh = x[t] @ w_ih.T + b_ih, h @ w_hh.T + b_hh
            if lstm:
                i, f, g, o = np.split(gx + gh, 4, axis=1)
                c = _sigmoid(f) * c + _sigmoid(i) * np.tanh(g)
                h = _sigmoid(o) * np.tanh(c)
            else:
                (xr, xz, xn), (hr, hz, hn_) = np.split(gx, 3, axis=1), np.split(gh, 3, axis=1)
                r, z = _sigmoid(xr + hr), _sigmoid(xz + hz)
                n = np.tanh(xn + r * hn_)
                h = (1 - z) * n + z * h
            outs.append(h)
        x = np.stack(outs)
        hn.append(h)
        cn.append(c)
    return x, np.stack(hn), (np.stack(cn) if lstm else None)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_recurrent_matches_numpy(kind):
    oa.manual_seed(3)
    T, B, I, H, L = 4, 2, 3, 5, 2
    model = getattr(nn, kind)(I, H, num_layers=L, batch_first=True)
    gates = 4 if kind == "LSTM" else 3
    assert list(model.state_dict()) == [f"{w}_l{k}" for k in range(L)
                                        for w in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
    assert model.weight_ih_l1.shape == (gates * H, H)
    params = {name: p.numpy().astype(np.float64) for name, p in model.named_parameters()}
    x, h0, c0 = values((B, T, I), 1), values((L, B, H), 2), values((L, B, H), 3)
    xt = x.transpose(1, 0, 2).astype(np.float64)
    if kind == "LSTM":
        out, (hn, cn) = model(oa.tensor(x), (oa.tensor(h0), oa.tensor(c0)))
        want, want_h, want_c = _recurrent_reference(True, params, xt, L, h0.astype(np.float64), c0.astype(np.float64))
        assert_close(cn.numpy(), want_c)
    else:
        out, hn = model(oa.tensor(x), oa.tensor(h0))
        want, want_h, _ = _recurrent_reference(False, params, xt, L, h0.astype(np.float64))
    assert_close(out.numpy(), want.transpose(1, 0, 2))
    assert_close(hn.numpy(), want_h)
    out, _ = model(oa.tensor(x))  # zero initial state
    out.sum().backward()
    assert all(p.grad is not None for p in model.parameters())


def test_sequential_from_ordered_dict():
    from collections import OrderedDict
    oa.manual_seed(3)
    model = nn.Sequential(OrderedDict(fc=nn.Linear(2, 3), act=nn.ReLU(), out=nn.Linear(3, 1)))
    assert len(model) == 3 and list(dict(model.named_children())) == ["fc", "act", "out"]
    assert list(model.state_dict()) == ["fc.weight", "fc.bias", "out.weight", "out.bias"]
    assert model.fc is model[0] and model[-1] is model.out
    x = values((4, 2), 1)
    w1, b1 = model.fc.weight.numpy(), model.fc.bias.numpy()
    w2, b2 = model.out.weight.numpy(), model.out.bias.numpy()
    want = np.maximum(x @ w1.T + b1, 0) @ w2.T + b2
    assert_close(model(oa.tensor(x)).numpy(), want, rtol=1e-5, atol=1e-6)
    head = model[:2]
    assert isinstance(head, nn.Sequential) and list(dict(head.named_children())) == ["fc", "act"]
    with pytest.raises(TypeError, match="not an oa.nn.Module"):
        nn.Sequential(OrderedDict(fc=3))


def test_module_list():
    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(2, 2) for _ in range(2)])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    model = Stack()
    assert len(model.layers) == 2 and len(list(model.parameters())) == 4
    assert list(model.state_dict()) == ["layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias"]
    first = model.layers[0]
    model.layers.append(nn.Dropout(0.5))
    model.layers.extend([nn.Linear(2, 3)])
    model.layers.insert(1, nn.LayerNorm(2))
    assert [type(m).__name__ for m in model.layers] == ["Linear", "LayerNorm", "Linear", "Dropout", "Linear"]
    assert model.layers[0] is first and model.layers[-1] is model.layers[4]
    assert list(model.state_dict())[:4] == ["layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias"]
    model.eval()
    assert all(not m.training for m in model.layers)
    model.train()
    assert all(m.training for m in model.layers)
    assert [type(m).__name__ for m in model.layers[1:3]] == ["LayerNorm", "Linear"]
    with pytest.raises(IndexError):
        model.layers[5]
    with pytest.raises(TypeError):
        model.layers.append(oa.zeros(2))


def test_module_dict():
    d = nn.ModuleDict({"enc": nn.Linear(2, 3), "act": nn.ReLU()})
    d["dec"] = nn.Linear(3, 2)
    assert list(d) == ["enc", "act", "dec"] and list(d.keys()) == ["enc", "act", "dec"] and len(d) == 3
    assert "enc" in d and "nope" not in d
    assert [type(m).__name__ for m in d.values()] == ["Linear", "ReLU", "Linear"]
    assert dict(d.items())["dec"] is d["dec"]
    assert list(d.state_dict()) == ["enc.weight", "enc.bias", "dec.weight", "dec.bias"]
    assert len(list(d.parameters())) == 4
    d.update([("extra", nn.Tanh())])
    del d["act"]
    assert list(d) == ["enc", "dec", "extra"]
    d.eval()
    assert not d["enc"].training
    x = oa.tensor(values((1, 2), 2))
    out = d["dec"](d["enc"](x))
    assert out.shape == (1, 2)


@pytest.mark.parametrize("make, x", [
    (lambda: nn.Embedding(6, 4), np.array([[0, 5, 2]], np.int32)),
    (lambda: nn.RMSNorm(5), values((2, 5), 30)),
    (lambda: nn.MultiheadAttention(8, 2, batch_first=True), values((2, 3, 8), 31)),
    (lambda: nn.TransformerBlock(8, 2, causal=True), values((2, 3, 8), 32)),
], ids=["embedding", "rms-norm", "multihead-attention", "transformer-block"])
def test_assigned_parameters_drive_forward(make, x):
    """Layers without a torch 1.13 twin: every parameter replaced by a new Parameter gives what the same
    layer computes with those values loaded in place, gradients landing on the new Parameters."""
    assigned, loaded = make(), make()
    new = {name: values(tuple(p.shape), seed, 0.5, 1.5)
           for seed, (name, p) in enumerate(assigned.named_parameters(), 33)}
    for name, v in new.items():
        *owners, last = name.split(".")
        module = assigned
        for owner in owners:
            module = getattr(module, owner)
        setattr(module, last, nn.Parameter(oa.tensor(v)))
    loaded.load_state_dict({**loaded.state_dict(), **{k: oa.tensor(v) for k, v in new.items()}})
    outputs = []
    for m in (assigned, loaded):
        y = m(oa.tensor(x))
        y = y[0] if isinstance(y, tuple) else y
        (y * y).sum().backward()
        outputs.append(y.numpy())
    assert_close(outputs[0], outputs[1], rtol=0, atol=0)
    theirs = dict(loaded.named_parameters())
    for name, p in assigned.named_parameters():
        np.testing.assert_array_equal(p.numpy(), new[name])
        assert_close(p.grad.numpy(), theirs[name].grad.numpy(), rtol=0, atol=0)


def test_bad_parameter_assignments_leave_the_layer_unchanged():
    lin, x = nn.Linear(2, 3), oa.tensor(values((4, 2), 40))
    before, params = lin(x).numpy(), list(lin.named_parameters())
    with pytest.raises(ValueError, match=r"Linear: set_parameter: parameter 'weight' is f32 \[3, 2\], "
                                         r"the new Parameter '.*' is f32 \[2, 2\]"):
        lin.weight = nn.Parameter(oa.zeros(2, 2))
    with pytest.raises(ValueError, match=r"Linear: parameter 'bias' cannot be set to None"):
        lin.bias = None
    rnn = nn.LSTM(2, 3)
    with pytest.raises(ValueError, match=r"LSTM: set_parameter: parameter 'bias_hh_l0' is f32 \[12\], .* f32 \[9\]"):
        rnn.bias_hh_l0 = nn.Parameter(oa.zeros(9))
    bn, block = nn.BatchNorm2d(3), nn.TransformerBlock(8, 2)
    with pytest.raises(AttributeError, match=r"BatchNorm2d: 'running_mean' cannot be reassigned \(a built-in layer's buffer"):
        bn.running_mean = oa.ones(3)
    with pytest.raises(AttributeError, match=r"TransformerBlock: 'attn' cannot be reassigned \(a built-in layer's child"):
        block.attn = nn.MultiheadAttention(8, 2)
    assert list(lin.named_parameters()) == params and lin.bias is params[1][1]
    np.testing.assert_array_equal(lin(x).numpy(), before)
    assert [n for n, _ in block.named_parameters()][:4] == ["norm1.weight", "norm1.bias", "attn.qkv.weight", "attn.qkv.bias"]


def test_lstm_takes_hx_as_a_pair_only():
    rnn, x = nn.LSTM(3, 4, num_layers=2), oa.tensor(values((5, 2, 3), 41))
    h = oa.zeros(2, 2, 4)
    out, (hn, cn) = rnn(x, (h, h))
    assert out.shape == (5, 2, 4) and hn.shape == (2, 2, 4) and cn.shape == (2, 2, 4)
    with pytest.raises(TypeError, match=r"LSTM: hx must be a tuple \(h0, c0\).*got Tensor"):
        rnn(x, oa.zeros(2, 2, 2, 4))
    with pytest.raises(TypeError, match=r"LSTM: hx must be a tuple \(h0, c0\).*of 1 items"):
        rnn(x, (h,))
    assert "hx (h0, c0)" in nn.LSTM.forward.__doc__ and "h_n" in nn.GRU.forward.__doc__
    with pytest.raises(TypeError, match=r"LSTM: hx must be a tuple \(h0, c0\).*its c0 is ndarray"):
        rnn(x, (h, np.zeros((2, 2, 4), np.float32)))


def test_gru_takes_hx_as_one_tensor_only():
    """torch.nn.GRU's hx is one tensor h0 [num_layers, B, H]: a tuple (LSTM's form), a NumPy array (modules take
    oa tensors only) or another type raises TypeError naming GRU and hx, not pybind's signature dump."""
    rnn, x = nn.GRU(3, 4, num_layers=2), oa.tensor(values((5, 2, 3), 43))
    h = oa.tensor(values((2, 2, 4), 44))
    out, hn = rnn(x, h)
    assert out.shape == (5, 2, 4) and hn.shape == (2, 2, 4)
    np.testing.assert_array_equal(rnn(x, None)[0].numpy(), rnn(x)[0].numpy())
    for bad, detail in (((h,), r"got tuple of 1 items \(a tuple \(h0, c0\) is LSTM's state"),
                        ([h, h], r"got list of 2 items"),
                        (h.numpy(), r"got ndarray \(convert it with oa.tensor\)"),
                        (1.5, r"got float")):
        with pytest.raises(TypeError, match=r"oa.nn.GRU: hx must be an oa.Tensor h0 of shape \[num_layers, B, H\] or None; "
                           + detail):
            rnn(x, bad)
    with pytest.raises(ValueError, match=r"oa::ml::nn::GRU: h0 must be \[num_layers 2, B 2, hidden_size 4\]"):
        rnn(x, oa.zeros(1, 2, 4))


def test_deepcopy_makes_new_parameters_with_the_values():

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.ReLU())
            self.emb = nn.Embedding(5, 4)
            self.head = nn.Linear(4, 5, bias=False)
            self.head.weight = self.emb.weight  # tied
            self.scale = nn.Parameter(oa.ones(1))
            self.tag = ["kept"]

    oa.manual_seed(3)
    model = Net()
    model.features[1](oa.randn(2, 4, 3, 3))  # running statistics move
    model.eval()
    model.scale.grad = oa.full([1], 2.0)
    oa.manual_seed(7)
    before = oa.randn(1).item()
    oa.manual_seed(7)
    dup = copy.deepcopy(model)
    assert oa.randn(1).item() == before  # no seeds drawn from oa.manual_seed's stream
    own, copied = model.state_dict(), dup.state_dict()
    assert list(own) == list(copied)
    for name in own:
        assert copied[name] is not own[name]
        np.testing.assert_array_equal(copied[name].numpy(), own[name].numpy())
    assert dup.head.weight is dup.emb.weight and dup.head.weight is not model.emb.weight
    assert [n for n, _ in dup.named_parameters()] == [n for n, _ in model.named_parameters()]
    assert not dup.training and not dup.features[1].training and dup.tag == ["kept"] and dup.tag is not model.tag
    np.testing.assert_array_equal(dup.scale.grad.numpy(), [2.0])
    with oa.no_grad():
        dup.emb.weight += 1.0
    assert not np.array_equal(dup.emb.weight.numpy(), model.emb.weight.numpy())
    x = oa.randn(1, 3, 4, 4, seed=5)
    np.testing.assert_array_equal(copy.deepcopy(model).features(x).numpy(), model.features(x).numpy())
    with pytest.raises(TypeError, match="deep-copy the layer that holds it"):
        copy.deepcopy(nn.MultiheadAttention(4, 2).out_proj)


def test_layer_reprs_show_their_arguments():
    assert repr(nn.Conv2d(3, 16, 3)) == "Conv2d(3, 16, kernel_size=3, stride=1)"
    assert repr(nn.Conv2d(3, 16, (3, 5), stride=2, padding=1, bias=False)) == \
        "Conv2d(3, 16, kernel_size=(3, 5), stride=2, padding=1, bias=False)"
    assert repr(nn.BatchNorm2d(3)) == "BatchNorm2d(3, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)"
    assert repr(nn.Linear(4, 2)) == "Linear(in_features=4, out_features=2, bias=True)"
    assert repr(nn.LayerNorm(8)) == "LayerNorm(8, eps=1e-05, elementwise_affine=True)"
    assert repr(nn.Embedding(10, 3)) == "Embedding(10, 3)"
    assert repr(nn.Dropout()) == "Dropout(p=0.5)"
    assert repr(nn.MaxPool2d(2)) == "MaxPool2d(kernel_size=2, stride=None, padding=0)"
    assert repr(nn.ReLU()) == "ReLU()"
    assert repr(nn.Sequential(nn.Linear(2, 3), nn.GELU())) == \
        "Sequential(\n  (0): Linear(in_features=2, out_features=3, bias=True)\n  (1): GELU(approximate='none')\n)"
