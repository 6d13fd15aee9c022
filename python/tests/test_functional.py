"""oa.nn.functional against f64 NumPy oracles, with finite-difference gradients."""
import math

import numpy as np
import pytest

import oa
import oa.nn.functional as F
import reference as ref
from reference import assert_close, check_gradients, values


def test_conv2d():
    x, w, b = values((2, 4, 6, 5), 1), values((6, 2, 3, 2), 2), values((6,), 3)
    kw = dict(stride=(2, 1), padding=1, dilation=(1, 2), groups=2)
    check_gradients(
        lambda x, w, b: F.conv2d(x, w, b, **kw),
        lambda x, w, b: ref.conv2d(x, w, b, stride=(2, 1), padding=(1, 1), dilation=(1, 2), groups=2),
        [x, w, b],
    )
    assert_close(F.conv2d(oa.tensor(x), oa.tensor(w), groups=2).numpy(), ref.conv2d(x, w, groups=2))


def test_conv1d():
    x, w = values((2, 3, 9), 4), values((4, 3, 3), 5)
    out = F.conv1d(oa.tensor(x), oa.tensor(w), stride=2, padding=1, dilation=2)
    expected = ref.conv2d(x[:, :, None], w[:, :, None], stride=(1, 2), padding=(0, 1), dilation=(1, 2))[:, :, 0]
    assert_close(out.numpy(), expected)


def test_conv_transpose2d():
    x, w, b = values((1, 4, 3, 4), 6), values((4, 3, 2, 3), 7), values((6,), 8)
    check_gradients(
        lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, padding=(1, 0), output_padding=(1, 0), groups=2),
        lambda x, w, b: ref.conv_transpose2d(x, w, b, (2, 2), (1, 0), (1, 0), (1, 1), groups=2),
        [x, w, b],
    )


def test_conv_transpose1d():
    x, w = values((2, 3, 5), 9), values((3, 2, 3), 10)
    out = F.conv_transpose1d(oa.tensor(x), oa.tensor(w), stride=2, padding=1, output_padding=1)
    expected = ref.conv_transpose2d(x[:, :, None], w[:, :, None], None, (1, 2), (0, 1), (0, 1))[:, :, 0]
    assert_close(out.numpy(), expected)


def test_linear_and_activations():
    x, w, b = values((3, 5), 11), values((4, 5), 12), values((4,), 13)
    check_gradients(F.linear, lambda x, w, b: x @ w.T + b, [x, w, b])
    assert_close(F.linear(oa.tensor(x), oa.tensor(w)).numpy(), x.astype(np.float64) @ w.T)
    # Away from relu's kink at 0 by more than the difference step.
    a = values((2, 6), 14)
    a[np.abs(a) < 0.05] = 0.3
    check_gradients(F.relu, lambda v: np.maximum(v, 0), [a])
    check_gradients(F.gelu, ref.gelu, [a])
    check_gradients(F.silu, lambda v: v / (1 + np.exp(-v)), [a])
    assert_close(F.sigmoid(oa.tensor(a)).numpy(), 1 / (1 + np.exp(-a.astype(np.float64))))
    assert_close(F.tanh(oa.tensor(a)).numpy(), np.tanh(a.astype(np.float64)))
    with pytest.raises(oa.InvalidArgumentError, match="approximate"):
        F.gelu(oa.tensor(a), approximate="sigmoid")


def test_softmax():
    x = values((3, 7), 15, -3, 3)
    check_gradients(lambda t: F.softmax(t, dim=-1), ref.softmax, [x])
    check_gradients(lambda t: F.log_softmax(t, dim=1), ref.log_softmax, [x])
    # A row of -inf gives zeros, never NaN.
    rows = np.array([[-np.inf, -np.inf], [0.0, 1000.0]], dtype=np.float32)
    assert_close(F.softmax(oa.tensor(rows), -1).numpy(), [[0, 0], [0, 1]])
    mask = np.where(np.arange(7) > 3, -np.inf, 0).astype(np.float32)
    assert_close(F.softmax_scaled_masked(oa.tensor(x), oa.tensor(mask), scale=0.5).numpy(), ref.softmax(0.5 * x + mask))


# Along any axis (moved last and back), as torch: F., the Tensor methods.
@pytest.mark.parametrize("dim", [0, 1, -3, -2, 2, -1])
def test_softmax_any_dim(dim):
    x = values((3, 4, 5), 16, -3, 3)

    def along(f):  # the last-axis oracle along `dim`
        return lambda a: np.moveaxis(f(np.moveaxis(a, dim, -1)), -1, dim)

    check_gradients(lambda t: F.softmax(t, dim), along(ref.softmax), [x])
    check_gradients(lambda t: F.log_softmax(t, dim=dim), along(ref.log_softmax), [x])
    assert_close(oa.tensor(x).softmax(dim).numpy(), along(ref.softmax)(x.astype(np.float64)))
    assert_close(oa.tensor(x).log_softmax(dim).numpy(), along(ref.log_softmax)(x.astype(np.float64)))


# float16 / bfloat16 input, as torch: computed in float32, the result (and
# gradient) rounded once to the input's dtype; any dim.
@pytest.mark.parametrize("dtype, eps", [(oa.float16, 2.0**-11), (oa.bfloat16, 2.0**-8)])
@pytest.mark.parametrize("dim", [0, -1])
def test_softmax_16_bit(dtype, eps, dim):
    x = np.round(values((2, 3, 4), 17, -3, 3) * 8) / 8  # exact in both dtypes
    w = np.round(values((2, 3, 4), 18) * 8) / 8
    along = {"softmax": lambda a: np.moveaxis(ref.softmax(np.moveaxis(a, dim, -1)), -1, dim),
             "log_softmax": lambda a: np.moveaxis(ref.log_softmax(np.moveaxis(a, dim, -1)), -1, dim)}
    for name, oracle in along.items():
        y = getattr(F, name)(oa.tensor(x, dtype=dtype), dim)
        assert y.dtype == dtype
        assert_close(y.float().numpy(), oracle(x.astype(np.float64)), rtol=2 * eps, atol=2 * eps)
        # The gradient through a cast from a float32 leaf, against central differences of the oracle.
        leaf = oa.tensor(x, requires_grad=True)
        getattr(F, name)(leaf.to(dtype), dim).float().backward(oa.tensor(w))
        h, numeric = 1e-6, np.zeros(x.shape)
        for i in np.ndindex(x.shape):
            e = np.zeros(x.shape)
            e[i] = h
            numeric[i] = ((oracle(x + e) - oracle(x - e)) * w).sum() / (2 * h)
        assert_close(leaf.grad.numpy(), numeric, rtol=8 * eps, atol=8 * eps)


def test_softmax_refuses_non_float_input_before_any_work():
    x = oa.ones(2, 3, 4, dtype=oa.int32)
    for f, name in [(F.softmax, "softmax"), (F.log_softmax, "log_softmax")]:
        with pytest.raises(oa.InvalidArgumentError, match=rf"oa::ml::{name}: x must be f32, f16 or bf16; found i32 \[2, 3, 4\]"):
            f(x, 0)


def test_softmax_dim_out_of_range():
    with pytest.raises(oa.InvalidArgumentError, match=r"oa::ml::softmax: dim 3 .*\[3, 4\]"):
        F.softmax(oa.tensor(values((3, 4), 1)), dim=3)
    with pytest.raises(oa.InvalidArgumentError, match=r"oa::ml::log_softmax: dim -3"):
        oa.tensor(values((3, 4), 1)).log_softmax(-3)


def test_norms():
    x, w, b = values((4, 6), 16, -2, 2), values((6,), 17), values((6,), 18)
    check_gradients(lambda x, w, b: F.layer_norm(x, [6], w, b, eps=1e-3), lambda x, w, b: ref.layer_norm(x, w, b, 1e-3),
                    [x, w, b])
    assert_close(F.layer_norm(oa.tensor(x), 6).numpy(), ref.layer_norm(x.astype(np.float64)))
    rms = lambda x, w: x / np.sqrt((x * x).mean(-1, keepdims=True) + 1e-6) * w
    check_gradients(lambda x, w: F.rms_norm(x, (6,), w, eps=1e-6), rms, [x, w])
    with pytest.raises(oa.InvalidArgumentError, match="normalized_shape"):
        F.layer_norm(oa.tensor(x), [4, 6])


def _central_differences(oracle, args, k, w, h=1e-6):
    """d/d args[k] of sum(oracle(*args) * w), by central differences."""
    numeric = np.zeros(args[k].shape)
    for i in np.ndindex(args[k].shape):
        e = np.zeros(args[k].shape)
        e[i] = h
        plus, minus = list(args), list(args)
        plus[k], minus[k] = args[k] + e, args[k] - e
        numeric[i] = ((oracle(*plus) - oracle(*minus)) * w).sum() / (2 * h)
    return numeric


# float16 / bfloat16 x, as torch's F.layer_norm: computed in float32, y (and
# x's gradient) rounded once to x's dtype; weight and bias float32 (torch's
# mixed-dtype form, their gradients float32) or x's dtype.
@pytest.mark.parametrize("dtype, eps", [(oa.float16, 2.0**-11), (oa.bfloat16, 2.0**-8)])
@pytest.mark.parametrize("params", ["float32", "same", "none"])
def test_layer_norm_16_bit(dtype, eps, params):
    x = np.round(values((3, 5), 21, -3, 3) * 8) / 8  # exact in both dtypes
    w, b = np.round(values((5,), 22, 0.5, 1.5) * 8) / 8, np.round(values((5,), 23) * 8) / 8
    g = np.round(values((3, 5), 24) * 8) / 8
    oracle = (lambda x, w, b: ref.layer_norm(x, w, b, 1e-5)) if params != "none" else (lambda x, w, b: ref.layer_norm(x, eps=1e-5))
    leaf, wl, bl = (oa.tensor(a, requires_grad=True) for a in (x, w, b))
    weight, bias = (wl.to(dtype), bl.to(dtype)) if params == "same" else (wl, bl) if params == "float32" else (None, None)
    y = F.layer_norm(leaf.to(dtype), [5], weight, bias)
    assert y.dtype == dtype
    assert_close(y.float().numpy(), oracle(x, w, b), rtol=2 * eps, atol=2 * eps)
    y.float().backward(oa.tensor(g))
    assert_close(leaf.grad.numpy(), _central_differences(oracle, [x, w, b], 0, g), rtol=8 * eps, atol=8 * eps)
    if params != "none":
        assert_close(wl.grad.numpy(), _central_differences(oracle, [x, w, b], 1, g), rtol=8 * eps, atol=8 * eps)
        assert_close(bl.grad.numpy(), _central_differences(oracle, [x, w, b], 2, g), rtol=8 * eps, atol=8 * eps)
    # Weight and bias of one dtype, f32 or x's: others raise, naming the op and the argument.
    h = oa.tensor(x).to(dtype)
    other, other_name = (oa.bfloat16, "bf16") if dtype == oa.float16 else (oa.float16, "f16")
    with pytest.raises(oa.InvalidArgumentError, match=rf"oa::ml::layer_norm: weight must be f32 or x's dtype .*found {other_name} \[5\]"):
        F.layer_norm(h, [5], oa.tensor(w).to(other))
    with pytest.raises(oa.InvalidArgumentError, match=r"oa::ml::layer_norm: bias must be f32; found"):
        F.layer_norm(h, [5], oa.tensor(w), oa.tensor(b).to(dtype))


def test_batch_norm():
    x, w, b = values((3, 2, 2, 2), 19), values((2,), 20), values((2,), 21)
    x64 = x.astype(np.float64)
    mean, var = oa.zeros(2), oa.ones(2)
    y = F.batch_norm(oa.tensor(x), mean, var, oa.tensor(w), oa.tensor(b), training=True, momentum=0.5, eps=1e-5)
    m = x64.mean(axis=(0, 2, 3))
    v = x64.var(axis=(0, 2, 3))
    expected = (x64 - m.reshape(1, 2, 1, 1)) / np.sqrt(v.reshape(1, 2, 1, 1) + 1e-5) * w.reshape(1, 2, 1, 1)
    assert_close(y.numpy(), expected + b.reshape(1, 2, 1, 1))
    assert_close(mean.numpy(), 0.5 * m)
    assert_close(var.numpy(), 0.5 + 0.5 * x64.var(axis=(0, 2, 3), ddof=1))
    evaluated = F.batch_norm(oa.tensor(x), oa.zeros(2), oa.full([2], 4.0), eps=0.0)
    assert_close(evaluated.numpy(), x64 / 2)


def group_norm_reference(x, groups, w=None, b=None, eps=1e-5):
    n, c = x.shape[:2]
    g = x.reshape(n, groups, -1)
    y = ((g - g.mean(-1, keepdims=True)) / np.sqrt(g.var(-1, keepdims=True) + eps)).reshape(x.shape)
    per_channel = (1, c) + (1,) * (x.ndim - 2)
    return y * (1 if w is None else w.reshape(per_channel)) + (0 if b is None else b.reshape(per_channel))


def test_group_norm_and_instance_norm():
    x, w, b = values((2, 4, 3, 2), 23, -2, 2), values((4,), 24, 0.5, 1.5), values((4,), 25)
    check_gradients(lambda x, w, b: F.group_norm(x, 2, w, b, eps=1e-5), lambda x, w, b: group_norm_reference(x, 2, w, b),
                    [x, w, b])
    check_gradients(lambda x: F.instance_norm(x), lambda x: group_norm_reference(x, 4), [x])
    with pytest.raises(oa.InvalidArgumentError, match="num_groups"):
        F.group_norm(oa.tensor(x), 3)
    with pytest.raises(oa.InvalidArgumentError, match="running statistics"):
        F.instance_norm(oa.tensor(x), oa.zeros(4), oa.ones(4))


def rope_reference(x, offset=0, base=10000.0):
    s, d = x.shape[-2:]
    angle = (offset + np.arange(s))[:, None] * base ** (-2.0 * np.arange(d // 2) / d)[None, :]
    lo, hi = x[..., : d // 2], x[..., d // 2 :]
    return np.concatenate([lo * np.cos(angle) - hi * np.sin(angle), hi * np.cos(angle) + lo * np.sin(angle)], axis=-1)


def test_rope():
    x = values((2, 2, 5, 8), 26, -2, 2)
    check_gradients(lambda x: F.rope(x, offset=3), lambda x: rope_reference(x, 3), [x])
    assert_close(F.rope(oa.tensor(x), base=100.0).numpy(), rope_reference(x.astype(np.float64), 0, 100.0))
    with pytest.raises(oa.InvalidArgumentError, match="even D"):
        F.rope(oa.tensor(values((2, 3, 5), 27)))


def test_pooling():
    x = values((2, 3, 5, 6), 22)
    t, x64 = oa.tensor(x), x.astype(np.float64)
    out = F.max_pool2d(t, 2)
    expected = x64[:, :, :4, :6].reshape(2, 3, 2, 2, 3, 2).max(axis=(3, 5))
    assert_close(out.numpy(), expected)
    avg = F.avg_pool2d(t, kernel_size=(3, 2), stride=(2, 2), padding=(1, 0))
    padded = np.pad(x64, ((0, 0), (0, 0), (1, 1), (0, 0)))
    expected = np.array([[[[padded[n, c, 2 * i : 2 * i + 3, 2 * j : 2 * j + 2].mean() for j in range(3)]
                            for i in range(3)] for c in range(3)] for n in range(2)])
    assert_close(avg.numpy(), expected)
    check_gradients(lambda v: F.avg_pool2d(v, 2), lambda v: v.reshape(2, 3, 2, 2, 3, 2).mean(axis=(3, 5)),
                    [x[:, :, :4, :]])
    # The modules are the same ops.
    assert_close(oa.nn.MaxPool2d(2)(t).numpy(), F.max_pool2d(t, 2).numpy(), rtol=0, atol=0)
    assert_close(oa.nn.AvgPool2d((3, 2), stride=2, padding=(1, 0))(t).numpy(), avg.numpy(), rtol=0, atol=0)
    with pytest.raises(oa.InvalidArgumentError, match="oa.nn.MaxPool2d: kernel_size"):
        oa.nn.MaxPool2d((2, 2, 2))


def test_accuracy():
    logits = values((6, 4), 31)
    logits[2] = [0.5, 0.5, 0.1, 0.0]  # a tie: the first arg-maximum counts
    target = np.array([0, 1, 0, 3, 2, 1], dtype=np.int32)
    got = F.accuracy(oa.tensor(logits), oa.tensor(target))
    assert got.shape == () and got.dtype == oa.float32
    assert got.item() == pytest.approx(np.mean(np.argmax(logits, axis=1) == target))


def test_dropout():
    x = np.ones((64, 64), dtype=np.float32)
    t = oa.tensor(x)
    y = F.dropout(t, p=0.25, seed=7).numpy()
    kept = y != 0
    assert abs(kept.mean() - 0.75) < 0.03
    assert_close(y[kept], np.full(kept.sum(), 1 / 0.75))
    np.testing.assert_array_equal(F.dropout(t, 0.25, seed=7).numpy(), y)
    np.testing.assert_array_equal(F.dropout(t, 0.25, training=False).numpy(), x)


def test_embedding():
    w = values((5, 3), 23)
    idx = np.array([[4, 0], [2, 2]])
    assert_close(F.embedding(oa.tensor(idx), oa.tensor(w)).numpy(), w[idx])
    wt = oa.tensor(w, requires_grad=True)
    F.embedding(oa.tensor(idx), wt).sum().backward()
    assert_close(wt.grad.numpy(), np.array([[1] * 3, [0] * 3, [2] * 3, [0] * 3, [1] * 3]))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy(reduction):
    logits = values((5, 4), 24, -2, 2)
    target = np.array([1, 3, -100, 0, 2])
    kw = dict(ignore_index=-100, reduction=reduction, label_smoothing=0.1)
    check_gradients(lambda x: F.cross_entropy(x, oa.tensor(target), **kw),
                    lambda x: np.asarray(ref.cross_entropy(x, target, **kw)), [logits])


def test_cross_entropy_class_index_out_of_range_raises_at_the_next_read():
    # torch raises at the call; oa's targets live on the device: the kernel finds them, the next read raises.
    for bad in (5, -1):
        loss = F.cross_entropy(oa.zeros(2, 3), oa.tensor([0, bad]))
        with pytest.raises(oa.OutOfRangeError, match=f"oa::ml::cross_entropy: index {bad} is out of range for the classes"):
            loss.item()
    x = oa.zeros(2, 3, 4, requires_grad=True)
    loss = oa.nn.CrossEntropyLoss(label_smoothing=0.1)(x, oa.tensor([[0, 1, 2, 3], [2, 1, 0, -100]]))
    with pytest.raises(IndexError, match="index 3"):
        loss.item()
    loss.backward()  # the gradient's kernel checks too
    with pytest.raises(IndexError, match="index 3"):
        x.grad.numpy()
    assert F.cross_entropy(oa.zeros(2, 3), oa.tensor([0, -1]), ignore_index=-1).item() == pytest.approx(math.log(3))


def test_masks_broadcast_against_3d_scores_as_torch():
    """A per-batch mask [B, 1, Sk] lines up with scores [B, Sq, Sk] (no heads axis)."""
    q, k, v = values((3, 4, 8), 31), values((3, 6, 8), 32), values((3, 6, 8), 33)
    for shape in ((3, 1, 6), (1, 4, 6), (4, 6), (6,), (3, 4, 6)):
        mask = np.where(values(shape, 34) > 0.5, -np.inf, 0).astype(np.float32)
        mask[..., 0] = 0
        out = F.scaled_dot_product_attention(oa.tensor(q), oa.tensor(k), oa.tensor(v), attn_mask=oa.tensor(mask))
        assert_close(out.numpy(), ref.attention(q, k, v, mask=mask))
        s = values((3, 4, 6), 35)
        got = F.softmax_scaled_masked(oa.tensor(s), oa.tensor(mask), 0.5).numpy()
        assert_close(got, ref.softmax(0.5 * s + mask))
    with pytest.raises(oa.InvalidArgumentError, match="attn_mask"):
        F.scaled_dot_product_attention(oa.tensor(q), oa.tensor(k), oa.tensor(v), attn_mask=oa.zeros(2, 1, 6))


def test_softmax_scaled_masked_of_no_rows_is_empty():
    for scores, mask in (((0, 3), (3,)), ((2, 0, 3), (3,)), ((2, 0, 0, 3), (1, 3))):
        out = F.softmax_scaled_masked(oa.zeros(*scores), oa.zeros(*mask), 1.0)
        assert out.shape == scores


def test_mse_loss():
    a, b = values((3, 4), 25), values((3, 4), 26)
    check_gradients(F.mse_loss, lambda a, b: np.mean((a - b) ** 2), [a, b])
    check_gradients(lambda a, b: F.mse_loss(a, b, reduction="none"), lambda a, b: (a - b) ** 2, [a, b])
    with pytest.raises(oa.InvalidArgumentError, match="reduction"):
        F.mse_loss(oa.tensor(a), oa.tensor(b), reduction="max")


def test_scaled_dot_product_attention():
    q, k, v = values((1, 2, 3, 4), 27), values((1, 2, 5, 4), 28), values((1, 2, 5, 3), 29)
    check_gradients(lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True),
                    lambda q, k, v: ref.attention(q, k, v, causal=True, top_left=True), [q, k, v])
    mask = np.where(values((3, 5), 30) > 0.6, -np.inf, 0).astype(np.float32)
    mask[:, 0] = 0
    out = F.scaled_dot_product_attention(oa.tensor(q), oa.tensor(k), oa.tensor(v), attn_mask=oa.tensor(mask), scale=0.3)
    assert_close(out.numpy(), ref.attention(q, k, v, mask=mask, scale=0.3))
    flat = [oa.tensor(a.reshape(2, a.shape[2], a.shape[3])) for a in (q, k, v)]
    output, lse = F.flash_attention(*flat, is_causal=True)
    assert_close(output.numpy(), ref.attention(q, k, v, causal=True).reshape(2, 3, 3))
    s = np.einsum("bqd,bkd->bqk", q.reshape(2, 3, 4), k.reshape(2, 5, 4)) / 2
    s = np.where(np.arange(5)[None, :] > np.arange(3)[:, None] + 2, -np.inf, s)
    assert_close(lse.numpy(), np.log(np.exp(s).sum(-1)))
    with pytest.raises(oa.InvalidArgumentError, match="dropout_p"):
        F.scaled_dot_product_attention(*flat, dropout_p=0.1)


def test_batched_products_and_heads():
    a, b = values((2, 3, 4), 31), values((2, 4, 5), 32)
    check_gradients(F.bmm, lambda a, b: a @ b, [a, b])
    bt = values((2, 5, 4), 33)
    assert_close(F.bmm_nt(oa.tensor(a), oa.tensor(bt)).numpy(), a.astype(np.float64) @ bt.transpose(0, 2, 1))
    at = values((2, 4, 3), 34)
    assert_close(F.bmm_tn(oa.tensor(at), oa.tensor(b)).numpy(), at.astype(np.float64).transpose(0, 2, 1) @ b)
    x = values((2 * 3, 8), 35)  # B = 2, S = 3, D = 8, H = 4
    heads = F.split_heads(oa.tensor(x), 2, 3, 4)
    np.testing.assert_array_equal(heads.numpy(), x.reshape(2, 3, 4, 2).transpose(0, 2, 1, 3).reshape(8, 3, 2))
    np.testing.assert_array_equal(F.merge_heads(heads, batch=2, seq_len=3, num_heads=4).numpy(), x)


def test_more_activations_and_elementwise():
    x = values((3, 7), 21, -3, 3)
    t = oa.tensor(x)
    xd = x.astype(np.float64)
    softplus = np.where(xd > 20, xd, np.log1p(np.exp(xd)))
    for got, want in [
        (F.softplus(t), softplus),
        (F.mish(t), xd * np.tanh(softplus)),
        (F.hardswish(t), xd * np.clip(xd + 3, 0, 6) / 6),
        (F.leaky_relu(t, 0.2), np.where(xd > 0, xd, 0.2 * xd)),
        (F.elu(t, alpha=1.5), np.where(xd > 0, xd, 1.5 * np.expm1(xd))),
        (oa.sin(t), np.sin(xd)), (oa.cos(t), np.cos(xd)), (oa.exp2(t), np.exp2(xd)),
        (oa.expm1(t), np.expm1(xd)), (oa.erf(t), [[math.erf(v) for v in row] for row in xd]),
        (oa.log1p(oa.tensor(np.abs(x))), np.log1p(np.abs(xd))),
        (t.floor(), np.floor(xd)), (t.ceil(), np.ceil(xd)), (t.round(), np.round(xd)), (t.sign(), np.sign(xd)),
    ]:
        assert_close(got.numpy(), np.asarray(want))


def test_relu_clamp_maximum_minimum_propagate_nan():
    """A NaN stays NaN through relu, clamp (either bound alone too), maximum
    and minimum, as in torch, so a diverging network shows it; and through a
    Linear-ReLU-Linear stack."""
    nan = float("nan")
    x = oa.tensor([nan, 1.0, -1.0])
    for got, want in [(F.relu(x), [nan, 1.0, 0.0]), (x.clamp(-1, 1), [nan, 1.0, -1.0]),
                      (x.clamp(max=0), [nan, 0.0, -1.0]), (x.clamp(min=0), [nan, 1.0, 0.0]),
                      (oa.maximum(x, oa.zeros(3)), [nan, 1.0, 0.0]),
                      (oa.minimum(oa.zeros(3), x), [nan, 0.0, -1.0])]:
        np.testing.assert_array_equal(got.numpy(), np.array(want, dtype=np.float32))
    oa.manual_seed(0)
    m = oa.nn.Sequential(oa.nn.Linear(3, 4), oa.nn.ReLU(), oa.nn.Linear(4, 2))
    assert np.isnan(m(oa.tensor([[nan, 0.0, 0.0]])).numpy()).all()
