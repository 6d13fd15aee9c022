"""Independent f64 NumPy oracles for the Python tests, and the gradient check.

The oracles are written from the PyTorch definitions (direct loops and sums),
not from oa's kernels. check_gradients compares oa's forward with the oracle
and oa's input gradients with central finite differences of the oracle, in f64
(as tests/support/gradcheck.hpp does for the C++ suite).
"""
import math

import numpy as np

import oa


def values(shape, seed, low=-1.0, high=1.0):
    """Deterministic float32 test values in [low, high)."""
    return np.random.default_rng(seed).uniform(low, high, size=shape).astype(np.float32)


def assert_close(actual, expected, rtol=1e-4, atol=1e-5):
    """|actual - expected| <= atol * max(1, max |expected|) + rtol * |expected|."""
    actual = np.asarray(actual, dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    assert actual.shape == expected.shape, f"shape {actual.shape} != {expected.shape}"
    scale = max(1.0, float(np.max(np.abs(expected)))) if expected.size else 1.0
    np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol * scale)


def check_gradients(oa_fn, ref_fn, inputs, needs_grad=None, step=1e-6, rtol=2e-3, atol=2e-4, seed=99):
    """Forward and input gradients of oa_fn(*tensors) against ref_fn(*f64 arrays).

    The loss is sum(output * W) for fixed W in [-1, 1): oa backpropagates it
    with output.backward(W); the oracle's gradient is a central difference of
    sum(ref_fn(x) * W) in f64 for every element of every input that needs one.
    """
    needs_grad = needs_grad or [True] * len(inputs)
    tensors = [oa.tensor(x, requires_grad=g) for x, g in zip(inputs, needs_grad)]
    out = oa_fn(*tensors)
    f64 = [x.astype(np.float64) for x in inputs]
    expected = ref_fn(*f64)
    assert_close(out.numpy(), expected)
    weights = values(expected.shape, seed)
    out.backward(oa.tensor(weights))
    for i, (t, need) in enumerate(zip(tensors, needs_grad)):
        if not need:
            continue
        numeric = np.zeros_like(f64[i])
        flat = numeric.reshape(-1)
        for j in range(flat.size):
            h = step * max(1.0, abs(f64[i].reshape(-1)[j]))
            plus = [x.copy() for x in f64]
            minus = [x.copy() for x in f64]
            plus[i].reshape(-1)[j] += h
            minus[i].reshape(-1)[j] -= h
            flat[j] = (np.sum(ref_fn(*plus) * weights) - np.sum(ref_fn(*minus) * weights)) / (2 * h)
        assert t.grad is not None, f"input {i} got no gradient"
        assert_close(t.grad.numpy(), numeric, rtol=rtol, atol=atol)


# ── Oracles ──────────────────────────────────────────────────────────────────


def conv2d(x, w, b=None, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1):
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    (sh, sw), (ph, pw), (dh, dw) = stride, padding, dilation
    xp = np.zeros((n, c, h + 2 * ph, wd + 2 * pw))
    xp[:, :, ph : ph + h, pw : pw + wd] = x
    oh = (h + 2 * ph - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + 2 * pw - dw * (kw - 1) - 1) // sw + 1
    og = o // groups
    out = np.zeros((n, o, oh, ow))
    for oc in range(o):
        g = oc // og
        for ky in range(kh):
            for kx in range(kw):
                patch = xp[:, g * cg : (g + 1) * cg, ky * dh : ky * dh + sh * oh : sh, kx * dw : kx * dw + sw * ow : sw]
                out[:, oc] += np.einsum("nchw,c->nhw", patch[:, :, :oh, :ow], w[oc, :, ky, kx])
    if b is not None:
        out += b.reshape(1, o, 1, 1)
    return out


def conv_transpose2d(x, w, b=None, stride=(1, 1), padding=(0, 0), output_padding=(0, 0), dilation=(1, 1), groups=1):
    """The scatter form: every input element adds its kernel-weighted copy."""
    n, c, h, wd = x.shape
    _, og, kh, kw = w.shape
    (sh, sw), (ph, pw), (oph, opw), (dh, dw) = stride, padding, output_padding, dilation
    oh = (h - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1
    ow = (wd - 1) * sw - 2 * pw + dw * (kw - 1) + opw + 1
    full = np.zeros((n, og * groups, oh + 2 * ph + sh + dh * kh, ow + 2 * pw + sw + dw * kw))
    cg = c // groups
    for ic in range(c):
        g = ic // cg
        for ky in range(kh):
            for kx in range(kw):
                for iy in range(h):
                    for ix in range(wd):
                        full[:, g * og : (g + 1) * og, iy * sh + ky * dh, ix * sw + kx * dw] += (
                            x[:, ic, iy, ix][:, None] * w[ic, :, ky, kx][None, :]
                        )
    out = full[:, :, ph : ph + oh, pw : pw + ow]
    if b is not None:
        out = out + b.reshape(1, -1, 1, 1)
    return out


def gelu(x):
    return x * 0.5 * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)


def log_softmax(x):
    m = np.max(x, axis=-1, keepdims=True)
    return x - m - np.log(np.sum(np.exp(x - m), axis=-1, keepdims=True))


def layer_norm(x, w=None, b=None, eps=1e-5):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps)
    return y * (1 if w is None else w) + (0 if b is None else b)


def cross_entropy(logits, target, ignore_index=-100, reduction="mean", label_smoothing=0.0, weight=None):
    """torch's definition: loss_i = -sum_c w_c q_ic log_softmax_ic with q the smoothed one-hot target; 'mean'
    divides by the sum of w over the kept targets (their count without weights)."""
    n, c = logits.shape
    w = np.ones(c) if weight is None else weight
    lsm = log_softmax(logits)
    losses = np.zeros(n)
    kept = 0.0
    for i in range(n):
        if target[i] == ignore_index:
            continue
        q = np.full(c, label_smoothing / c)
        q[target[i]] += 1 - label_smoothing
        losses[i] = -np.sum(w * q * lsm[i])
        kept += w[target[i]]
    if reduction == "none":
        return losses
    return losses.sum() / (kept if reduction == "mean" else 1)


def pool2d(x, kernel, stride, padding, ceil_mode=False, mode="max", count_include_pad=True, divisor_override=None):
    """torch's CPU pooling loops: output extent floor or ceil((n + 2p - k) / s) + 1 (less one where the last window
    starts past the input and the left padding); max over the window's input elements, or their sum over the
    window's size within the padded input (count_include_pad), its size within the input, or divisor_override."""
    n, c, h, w = x.shape
    sizes = []
    for extent, k, s, p in zip((h, w), kernel, stride, padding):
        out = (extent + 2 * p - k + (s - 1 if ceil_mode else 0)) // s + 1
        if ceil_mode and (out - 1) * s >= extent + p:
            out -= 1
        sizes.append(out)
    out = np.zeros((n, c, *sizes))
    for oy in range(sizes[0]):
        for ox in range(sizes[1]):
            y0, x0 = oy * stride[0] - padding[0], ox * stride[1] - padding[1]
            y1, x1 = min(y0 + kernel[0], h + padding[0]), min(x0 + kernel[1], w + padding[1])
            area = (y1 - y0) * (x1 - x0)
            y0, x0, y1, x1 = max(y0, 0), max(x0, 0), min(y1, h), min(x1, w)
            window = x[:, :, y0:y1, x0:x1]
            if mode == "max":
                out[:, :, oy, ox] = window.max(axis=(2, 3))
            else:
                divisor = divisor_override or (area if count_include_pad else (y1 - y0) * (x1 - x0))
                out[:, :, oy, ox] = window.sum(axis=(2, 3)) / divisor
    return out


def attention(q, k, v, mask=None, causal=False, scale=None, top_left=False):
    """softmax(scale q k^T + mask) v over the last two axes; causal aligned
    bottom-right (oa's flash attention), or top-left (torch's is_causal)."""
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = np.einsum("...qd,...kd->...qk", q, k) * scale
    if mask is not None:
        s = s + mask
    if causal:
        sq, sk = s.shape[-2], s.shape[-1]
        hidden = np.arange(sk)[None, :] > np.arange(sq)[:, None] + (0 if top_left else sk - sq)
        s = np.where(hidden, -np.inf, s)
    return np.einsum("...qk,...kd->...qd", softmax(s), v)
