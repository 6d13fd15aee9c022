"""Torch behaviours across the API: copy_ across engines, the gradient of binary_cross_entropy_with_logits at 0,
arange's and full's dtypes, MultiheadAttention's is_causal hint, format() of a 0-d tensor, the gradient-mode
context managers, and NumPy integers as dims and sizes."""
import numpy as np
import pytest

import oa
import oa.nn.functional as F
from reference import assert_close, values


def test_copy_from_another_engine_is_refused():
    other = oa.Engine()
    dst = oa.ones(4)
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.Tensor.copy_: src \[4\] lives on another engine than x \[4\]"):
        dst.copy_(oa.full((4,), 5.0, engine=other))
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.Tensor.copy_: src \[1\] lives on another engine than x \[4\]"):
        dst.copy_(oa.full((1,), 5.0, engine=other))  # broadcast too
    np.testing.assert_array_equal(dst.numpy(), np.ones(4, np.float32))  # nothing written
    dst.copy_(oa.full((4,), 5.0))
    np.testing.assert_array_equal(dst.numpy(), np.full(4, 5, np.float32))


def bce_reference(x, t, pos_weight=1.0, weight=1.0):
    """The loss and its gradient in x, in float64: -w [p t log s(x) + (1 - t) log(1 - s(x))]."""
    log_sigmoid = -np.logaddexp(0.0, -x)
    log_one_minus = -np.logaddexp(0.0, x)
    loss = -weight * (pos_weight * t * log_sigmoid + (1 - t) * log_one_minus)
    sigmoid = np.exp(log_sigmoid)
    grad = weight * ((1 - t) * sigmoid - pos_weight * t * (1 - sigmoid))
    return loss, grad


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("pos_weight", [None, 2.5])
def test_binary_cross_entropy_with_logits_value_and_gradient_everywhere(reduction, pos_weight):
    x = np.array([0.0, 1e-8, -1e-8, 3.0, -3.0, 100.0, -100.0, 1e4, -1e4], np.float32)
    t = np.tile(np.array([0.0, 1.0, 0.3], np.float32), 3)
    weight = np.linspace(0.5, 1.5, 9).astype(np.float32)
    loss, grad = bce_reference(x.astype(np.float64), t.astype(np.float64), 1.0 if pos_weight is None else pos_weight,
                               weight.astype(np.float64))
    logits = oa.tensor(x, requires_grad=True)
    out = F.binary_cross_entropy_with_logits(logits, oa.tensor(t), weight=oa.tensor(weight), reduction=reduction,
                                             pos_weight=None if pos_weight is None else oa.tensor([pos_weight]))
    scale = {"none": 1.0, "sum": 1.0, "mean": 1 / 9}[reduction]
    want = loss if reduction == "none" else loss.sum() * scale
    assert np.all(np.isfinite(out.numpy()))
    assert_close(out.numpy(), want.astype(np.float32), rtol=1e-5, atol=1e-6)
    (out.sum() if reduction == "none" else out).backward()
    got = logits.grad.numpy()
    assert np.all(np.isfinite(got))
    assert_close(got, (grad * scale).astype(np.float32), rtol=1e-5, atol=1e-7)


def test_bce_with_logits_loss_at_zero_logits_steps_by_sigmoid_minus_target():
    head = oa.zeros(4, requires_grad=True)
    target = oa.tensor([0.0, 1.0, 0.25, 1.0])
    oa.nn.BCEWithLogitsLoss(reduction="sum")(head, target).backward()
    np.testing.assert_allclose(head.grad.numpy(), 0.5 - target.numpy(), rtol=1e-6)


def test_arange_infers_int32_from_ints_and_counts_in_double():
    assert oa.arange(5).dtype == oa.int32
    assert oa.arange(1, 7, 2).dtype == oa.int32
    assert oa.arange(5.0).dtype == oa.arange(0, 5, 0.5).dtype == oa.float32
    assert oa.arange(np.int64(3)).dtype == oa.int32
    np.testing.assert_array_equal(oa.arange(16777219)[-3:].numpy(), [16777216, 16777217, 16777218])
    np.testing.assert_array_equal(oa.arange(5, -3, -2).numpy(), [5, 3, 1, -1])
    np.testing.assert_allclose(oa.arange(0.1, 0.4, 0.1).numpy(), np.arange(0.1, 0.4, 0.1), rtol=1e-6)  # 4 elements
    assert oa.arange(0.1, 0.4, 0.1).shape == (4,)
    assert oa.arange(0.1, 0.4, 0.1, dtype=oa.int32).shape == (4,)
    assert oa.arange(5, dtype=oa.float32).dtype == oa.float32
    assert oa.arange(4, dtype=oa.float16).dtype == oa.float16
    # An int32 arange indexes as torch's int64 one does.
    np.testing.assert_array_equal(oa.nn.Embedding(10, 4)(oa.arange(5)).shape, (5, 4))
    x = oa.tensor(values((3, 2), 1))
    np.testing.assert_array_equal(x[oa.arange(2)].numpy(), values((3, 2), 1)[:2])
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.arange: values from 0 to 3000000000 by 1 do not fit int32"):
        oa.arange(3000000000)
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.arange: .*step nonzero"):
        oa.arange(0, 3, 0)
    with pytest.raises(TypeError, match=r"oa.arange: end must be a number"):
        oa.arange(0, "3")
    assert oa.arange(2**31 - 1, 2**31 - 3, -1).numpy().tolist() == [2**31 - 1, 2**31 - 2]


def test_full_infers_bool_int32_and_float32():
    assert oa.full((2,), True).dtype == oa.bool
    assert oa.full((2,), 3).dtype == oa.int32
    assert oa.full((2,), np.int64(3)).dtype == oa.int32
    assert oa.full((2,), 3.0).dtype == oa.float32
    assert oa.full((2,), 3, dtype=oa.float32).dtype == oa.float32
    np.testing.assert_array_equal(oa.full((2,), 16777217).numpy(), [16777217, 16777217])
    np.testing.assert_array_equal(oa.full((2,), True).numpy(), [True, True])
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.full: value 4294967296 cannot be converted to type int32"):
        oa.full((2,), 2**32)


def test_multihead_attention_takes_the_is_causal_hint_with_a_mask():
    mha = oa.nn.MultiheadAttention(8, 2, batch_first=True)
    q = oa.tensor(values((2, 5, 8), 3))
    mask = oa.tensor(np.triu(np.ones((5, 5), bool), 1))
    hinted, hinted_weights = mha(q, q, q, attn_mask=mask, is_causal=True)
    plain, plain_weights = mha(q, q, q, attn_mask=mask)
    np.testing.assert_array_equal(hinted.numpy(), plain.numpy())
    np.testing.assert_array_equal(hinted_weights.numpy(), plain_weights.numpy())
    causal = oa.nn.MultiheadAttention(8, 2, batch_first=True, causal=True)
    causal.load_state_dict(mha.state_dict())
    assert_close(causal(q, q, q, is_causal=True)[0].numpy(), plain.numpy())
    assert_close(causal(q, q, q, is_causal=False)[0].numpy(), plain.numpy())  # no hint: still causal
    with pytest.raises(RuntimeError, match=r"oa.nn.MultiheadAttention: Need attn_mask if specifying the is_causal hint"):
        mha(q, q, q, is_causal=True)


def test_format_of_a_tensor():
    loss = oa.tensor(1.23456)
    assert f"{loss:.4f}" == "1.2346"
    assert f"{oa.tensor(7, dtype=oa.int32):03d}" == "007"
    assert f"{oa.tensor(True)}" == "True"
    x = oa.tensor([1.0, 2.0])
    assert f"{x}" == str(x) == format(x, "")
    with pytest.raises(TypeError):
        format(x, ".2f")


def test_grad_mode_context_managers():
    w = oa.ones(2, requires_grad=True)
    assert oa.is_grad_enabled()
    with oa.no_grad():
        with oa.enable_grad():
            assert oa.is_grad_enabled() and (w * 2).requires_grad
        assert not oa.is_grad_enabled()
        with oa.set_grad_enabled(True):
            assert (w * 2).requires_grad
        assert not oa.is_grad_enabled()
    with oa.set_grad_enabled(False):
        assert not (w * 2).requires_grad
    assert oa.is_grad_enabled()
    oa.set_grad_enabled(False)  # a plain call sets the mode until set again
    try:
        assert not oa.is_grad_enabled() and not (w * 2).requires_grad
    finally:
        oa.set_grad_enabled(True)
    with oa.inference_mode():
        assert not (w * 2).requires_grad
        with oa.inference_mode(False):
            assert (w * 2).requires_grad
    assert oa.is_grad_enabled()

    @oa.enable_grad()
    def doubled(v):
        return v * 2

    @oa.set_grad_enabled(False)
    def tripled(v):
        return v * 3

    @oa.inference_mode
    def quadrupled(v):
        return v * 4

    assert oa.is_grad_enabled()  # making the decorators changed nothing
    with oa.no_grad():
        assert doubled(w).requires_grad
    assert not tripled(w).requires_grad and not quadrupled(w).requires_grad
    assert oa.is_grad_enabled()
    with pytest.raises(TypeError, match="oa.set_grad_enabled: mode must be a bool"):
        oa.set_grad_enabled("no")
    with pytest.raises(TypeError, match="oa.enable_grad takes no arguments"):
        oa.enable_grad(3)


def test_numpy_integers_as_dims_and_sizes():
    a = values((2, 3, 4), 5)
    x = oa.tensor(a)
    i0, i1, i2 = np.int64(0), np.int64(1), np.int32(2)
    assert [p.shape for p in x.split(i2, dim=i1)] == [(2, 2, 4), (2, 1, 4)]
    assert [p.shape for p in x.split([np.int64(1), np.int64(2)], i1)] == [(2, 1, 4), (2, 2, 4)]
    assert [p.shape for p in oa.split(x, i2)] == [(2, 3, 4)]
    assert_close(x.sum(i1).numpy(), a.sum(1))
    assert_close(x.mean((i0, i2)).numpy(), a.mean((0, 2)))
    assert_close(oa.amax(x, dim=i2).numpy(), a.max(2))
    assert_close(x.max(i1).values.numpy(), a.max(1))
    np.testing.assert_array_equal(x.argmax(i1).numpy(), a.argmax(1))
    assert_close(x.std(i1).numpy(), a.std(1, ddof=1), rtol=1e-4)
    assert x.reshape(np.int64(6), i2 * 2).shape == (6, 4)
    assert x.view((np.int64(4), np.int64(-1))).shape == (4, 6)
    assert x.permute(i2, i0, i1).shape == (4, 2, 3)
    assert x.transpose(i0, i2).shape == (4, 3, 2)
    assert [p.shape for p in x.chunk(i2, i2)] == [(2, 3, 2), (2, 3, 2)]
    assert x.unsqueeze(i1).squeeze(i1).flatten(i1).shape == (2, 12)
    assert x.size(i2) == 4 and oa.cat([x, x], i1).shape == (2, 6, 4)
    assert_close(oa.softmax(x, i1).numpy().sum(1), np.ones((2, 4)))
    assert_close(x[i1].numpy(), a[1])
    assert oa.zeros(np.int64(2), i2).shape == (2, 2)
    with pytest.raises(TypeError, match="oa.Tensor.sum: dim must be None, an int or a tuple of ints"):
        x.sum(np.bool_(True))
    with pytest.raises(TypeError, match="oa.Tensor.sum: dim must be None, an int or a tuple of ints"):
        x.sum(1.0)
    with pytest.raises(TypeError, match="oa.Tensor.sum: dim must be None, an int or a tuple of ints"):
        x.sum(np.array([1]))  # an array is not an int, though it has __index__
