"""torch functions a new user missed, composed in Python over oa's ops, against NumPy float64 oracles with
finite-difference gradients: pooling's ceil_mode, count_include_pad and divisor_override, cross_entropy's class
weights, nll_loss, l1_loss, binary_cross_entropy_with_logits, embedding's padding_idx, pad, normalize, flip,
repeat, unbind, linspace, randint and retain_grad, and their errors."""
import numpy as np
import pytest

import oa
import oa.nn.functional as F
from oa import nn
from reference import assert_close, check_gradients, cross_entropy, log_softmax, pool2d, values

X = values((2, 2, 5, 6), 1)


@pytest.mark.parametrize("kernel, stride, padding, ceil_mode, count_include_pad, divisor",
                         [(2, 2, 0, True, True, None), (3, 2, 1, True, True, None), (3, 2, 1, False, False, None),
                          (3, 2, 1, True, False, None), ((2, 3), (2, 2), (1, 1), True, True, None),
                          (2, 2, 1, False, True, 3)])
def test_pooling_options(kernel, stride, padding, ceil_mode, count_include_pad, divisor):
    pair = lambda v: (v, v) if isinstance(v, int) else v  # noqa: E731
    k, s, p = pair(kernel), pair(stride), pair(padding)
    check_gradients(lambda x: F.avg_pool2d(x, kernel, stride, padding, ceil_mode, count_include_pad, divisor),
                    lambda x: pool2d(x, k, s, p, ceil_mode, "avg", count_include_pad, divisor), [X])
    if divisor is None and count_include_pad:
        check_gradients(lambda x: F.max_pool2d(x, kernel, stride, padding, ceil_mode=ceil_mode),
                        lambda x: pool2d(x, k, s, p, ceil_mode, "max"), [X])
    avg = nn.AvgPool2d(kernel, stride, padding, ceil_mode, count_include_pad, divisor)
    assert_close(avg(oa.tensor(X)).numpy(), pool2d(X.astype(np.float64), k, s, p, ceil_mode, "avg", count_include_pad, divisor))
    assert_close(nn.MaxPool2d(kernel, stride, padding, ceil_mode=ceil_mode)(oa.tensor(X)).numpy(),
                 pool2d(X.astype(np.float64), k, s, p, ceil_mode, "max"))


def test_pooling_refuses_what_it_lacks_by_name():
    x = oa.tensor(X)
    with pytest.raises(oa.InvalidArgumentError, match=r"max_pool2d: dilation 2: only 1 is supported"):
        F.max_pool2d(x, 2, dilation=2)
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.nn.MaxPool2d: return_indices=True is not supported"):
        nn.MaxPool2d(2, return_indices=True)
    with pytest.raises(TypeError, match=r"avg_pool2d\(\) got an unexpected keyword argument 'dilation'"):
        F.avg_pool2d(x, 2, dilation=1)
    with pytest.raises(oa.InvalidArgumentError, match=r"avg_pool2d: divisor_override must be a positive int, not 0"):
        F.avg_pool2d(x, 2, divisor_override=0)
    with pytest.raises(oa.InvalidArgumentError, match=r"avg_pool2d: .*padding \[2, 2\] >= 0 and at most half"):
        F.avg_pool2d(x, 3, padding=2, ceil_mode=True)
    # Defaults given by name take the C++ op.
    assert_close(F.max_pool2d(x, 2, ceil_mode=False, dilation=1, return_indices=False).numpy(),
                 pool2d(X.astype(np.float64), (2, 2), (2, 2), (0, 0)))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
def test_cross_entropy_class_weights(reduction, label_smoothing):
    logits, w = values((5, 4), 2, -2, 2), values((4,), 3, 0.2, 2.0)
    target = np.array([0, 3, -100, 1, 3], np.int32)
    t = oa.tensor(target)
    check_gradients(lambda x, wt: F.cross_entropy(x, t, wt, ignore_index=-100, reduction=reduction,
                                                  label_smoothing=label_smoothing),
                    lambda x, wt: np.asarray(cross_entropy(x, target, -100, reduction, label_smoothing, wt)),
                    [logits, w], needs_grad=[True, False])
    loss = nn.CrossEntropyLoss(oa.tensor(w), reduction=reduction, label_smoothing=label_smoothing)
    assert_close(loss(oa.tensor(logits), t).numpy(), cross_entropy(logits.astype(np.float64), target, -100, reduction,
                                                                   label_smoothing, w.astype(np.float64)))
    assert "weight" in dict(loss.named_buffers())


def test_cross_entropy_weights_over_spatial_and_probability_targets():
    logits, w = values((2, 3, 4), 4, -2, 2), values((3,), 5, 0.5, 1.5)
    target = np.array([[0, 2, 1, 1], [2, 2, 0, 1]], np.int32)
    flat = logits.transpose(0, 2, 1).reshape(8, 3).astype(np.float64)
    got = F.cross_entropy(oa.tensor(logits), oa.tensor(target), oa.tensor(w), reduction="none")
    assert_close(got.numpy(), cross_entropy(flat, target.reshape(8), reduction="none", weight=w).reshape(2, 4))
    one = F.cross_entropy(oa.tensor(logits[0, :, 0]), oa.tensor(np.int32(2)), oa.tensor(w))
    assert one.shape == () and abs(one.item() - (-log_softmax(logits[0, :, 0].astype(np.float64))[2])) < 1e-5
    # Class probabilities: -sum_c w_c q_c log p_c, the mean over positions.
    q = np.abs(values((4, 3), 6))
    q /= q.sum(1, keepdims=True)
    x = values((4, 3), 7)
    check_gradients(lambda a, b: F.cross_entropy(a, b, oa.tensor(w)),
                    lambda a, b: -(w * b * log_softmax(a)).sum() / 4, [x, q])
    with pytest.raises(oa.InvalidArgumentError, match=r"cross_entropy: weight \[2\] must be a tensor of shape \[C\] = \[3\]"):
        F.cross_entropy(oa.tensor(x), oa.tensor(np.int32([0, 1, 2, 0])), oa.ones(2))
    with pytest.raises(TypeError, match=r"cross_entropy: size_average is deprecated in torch and not supported"):
        F.cross_entropy(oa.tensor(x), oa.tensor(np.int32([0, 1, 2, 0])), size_average=True)


def test_nll_loss():
    logp = log_softmax(values((6, 4), 8, -2, 2).astype(np.float64)).astype(np.float32)
    target = np.array([1, 0, 3, -1, 2, 2], np.int32)
    w = values((4,), 9, 0.5, 2.0)

    def oracle(x, weight, reduction):
        kept = target != -1
        picked = -x[np.arange(6), np.where(kept, target, 0)] * weight[np.where(kept, target, 0)] * kept
        return picked if reduction == "none" else picked.sum() / (weight[target[kept]].sum() if reduction == "mean" else 1)

    for reduction in ["mean", "sum", "none"]:
        check_gradients(lambda x: F.nll_loss(x, oa.tensor(target), ignore_index=-1, reduction=reduction),
                        lambda x: np.asarray(oracle(x, np.ones(4), reduction)), [logp])
        check_gradients(lambda x: F.nll_loss(x, oa.tensor(target), oa.tensor(w), ignore_index=-1, reduction=reduction),
                        lambda x: np.asarray(oracle(x, w.astype(np.float64), reduction)), [logp])
    # 16-bit log-probabilities (and logits with class weights) give float32 losses from the rounded values.
    for dtype in (oa.float16, oa.bfloat16):
        x16 = oa.tensor(logp).to(dtype)
        rounded = x16.float().numpy().astype(np.float64)
        got = F.nll_loss(x16, oa.tensor(target), oa.tensor(w), ignore_index=-1)
        assert got.dtype == oa.float32
        assert_close(got.numpy(), oracle(rounded, w.astype(np.float64), "mean"))
        got = F.cross_entropy(x16, oa.tensor(target), oa.tensor(w), ignore_index=-1, reduction="sum")
        assert got.dtype == oa.float32
        assert_close(got.numpy(), oracle(log_softmax(rounded), w.astype(np.float64), "sum"), rtol=1e-2, atol=1e-2)
    with pytest.raises(oa.InvalidArgumentError, match=r"nll_loss: Expected target size \[6\], got \[6, 1\] \(input \[6, 4\]"):
        F.nll_loss(oa.tensor(logp), oa.tensor(target[:, None]))
    with pytest.raises(oa.InvalidArgumentError, match=r"nll_loss: target must hold int32 class indices, not float32"):
        F.nll_loss(oa.tensor(logp), oa.tensor(target.astype(np.float32)))
    with pytest.raises(oa.InvalidArgumentError, match=r"nll_loss: reduction must be 'none', 'mean' or 'sum', not 'avg'"):
        F.nll_loss(oa.tensor(logp), oa.tensor(target), reduction="avg")


def test_l1_loss_and_normalize():
    a, b = values((3, 4), 10), values((3, 4), 11)
    for reduction, reduce in [("mean", np.mean), ("sum", np.sum), ("none", lambda v: v)]:
        check_gradients(lambda x, y: F.l1_loss(x, y, reduction=reduction), lambda x, y: np.asarray(reduce(np.abs(x - y))),
                        [a, b])
    with pytest.raises(oa.InvalidArgumentError, match=r"l1_loss: input \[3, 4\] and target \[3\] do not broadcast"):
        F.l1_loss(oa.tensor(a), oa.tensor(b[0, :3]))
    check_gradients(lambda x: F.normalize(x), lambda x: x / np.sqrt((x * x).sum(1, keepdims=True)), [a])
    check_gradients(lambda x: F.normalize(x, p=1.0, dim=0), lambda x: x / np.abs(x).sum(0, keepdims=True), [a])
    check_gradients(lambda x: F.normalize(x, p=3, dim=1), lambda x: x / (np.abs(x) ** 3).sum(1, keepdims=True) ** (1 / 3),
                    [a])
    with pytest.raises(oa.InvalidArgumentError, match=r"normalize: p must be a positive number or inf, got 0"):
        F.normalize(oa.tensor(a), p=0)
    np.testing.assert_array_equal(F.normalize(oa.zeros(2, 3)).numpy(), np.zeros((2, 3)))


def test_binary_cross_entropy_with_logits_is_stable():
    def oracle(x, t, weight=1.0, pos_weight=1.0):
        log_sig = -np.logaddexp(0, -x)  # log sigmoid(x), exact for any x
        log_one_minus = -np.logaddexp(0, x)
        return -weight * (pos_weight * t * log_sig + (1 - t) * log_one_minus)

    x, t = values((3, 4), 12, -4, 4), np.abs(values((3, 4), 13))
    w, pw = values((4,), 14, 0.5, 2.0), values((4,), 15, 0.5, 3.0)
    check_gradients(lambda a, b: F.binary_cross_entropy_with_logits(a, b), lambda a, b: np.asarray(oracle(a, b).mean()),
                    [x, t])
    check_gradients(lambda a, b: F.binary_cross_entropy_with_logits(a, b, oa.tensor(w), reduction="none",
                                                                   pos_weight=oa.tensor(pw)),
                    lambda a, b: oracle(a, b, w, pw), [x, t])
    extreme = np.array([-200.0, -30.0, 0.0, 30.0, 200.0], np.float32)
    target = np.array([1.0, 0.0, 0.5, 1.0, 0.0], np.float32)
    got = F.binary_cross_entropy_with_logits(oa.tensor(extreme), oa.tensor(target), reduction="none").numpy()
    assert np.all(np.isfinite(got))
    assert_close(got, oracle(extreme.astype(np.float64), target))
    with pytest.raises(oa.InvalidArgumentError, match=r"binary_cross_entropy_with_logits: target \[3\] must have input's"):
        F.binary_cross_entropy_with_logits(oa.tensor(x), oa.tensor(t[0, :3]))


def test_embedding_padding_idx():
    weight = values((5, 3), 16)
    idx = oa.tensor(np.int32([[0, 2, 4], [2, 2, 1]]))
    w = oa.tensor(weight, requires_grad=True)
    out = F.embedding(idx, w, padding_idx=2)
    np.testing.assert_array_equal(out.numpy(), weight[idx.numpy()])
    out.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.array([[1] * 3, [1] * 3, [0] * 3, [0] * 3, [1] * 3], np.float32))
    layer = nn.Embedding(5, 3, padding_idx=-1)
    assert layer.padding_idx == 4 and repr(layer) == "Embedding(5, 3, padding_idx=4)"  # normalised, as torch
    np.testing.assert_array_equal(layer.weight.numpy()[4], np.zeros(3, np.float32))
    layer(oa.tensor(np.int32([4, 0, 4]))).sum().backward()
    np.testing.assert_array_equal(layer.weight.grad.numpy()[[4, 0]], [[0, 0, 0], [1, 1, 1]])
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.nn.Embedding: padding_idx 5 must be an int within num_embeddings 5"):
        nn.Embedding(5, 3, padding_idx=5)
    with pytest.raises(oa.InvalidArgumentError, match=r"embedding: max_norm=1.0 is not supported"):
        F.embedding(idx, w, max_norm=1.0)


@pytest.mark.parametrize("mode, numpy_mode", [("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")])
def test_pad_modes(mode, numpy_mode):
    x = values((2, 3, 4), 17)
    check_gradients(lambda a: F.pad(a, (2, 3), mode=mode), lambda a: np.pad(a, ((0, 0), (0, 0), (2, 3)), numpy_mode), [x])
    x4 = values((1, 2, 4, 5), 18)
    check_gradients(lambda a: F.pad(a, (1, 2, 3, 0), mode=mode),
                    lambda a: np.pad(a, ((0, 0), (0, 0), (3, 0), (1, 2)), numpy_mode), [x4])
    h = oa.tensor(x, dtype=oa.float16)
    np.testing.assert_array_equal(F.pad(h, (1, 1), mode=mode).numpy(),
                                  np.pad(h.numpy(), ((0, 0), (0, 0), (1, 1)), numpy_mode))


def test_pad_constant_and_errors():
    x = values((2, 3, 4), 19)
    check_gradients(lambda a: F.pad(a, (1, 2, 0, 1)), lambda a: np.pad(a, ((0, 0), (0, 1), (1, 2))), [x])
    check_gradients(lambda a: F.pad(a, (-1, 2, 1, -2), value=0.5),
                    lambda a: np.pad(a[:, :-2, 1:], ((0, 0), (1, 0), (0, 2)), constant_values=0.5), [x])
    i = oa.tensor(np.int32([[1, 2]]))
    np.testing.assert_array_equal(F.pad(i, (1, 0, 1, 1), value=7).numpy(), [[7, 7, 7], [7, 1, 2], [7, 7, 7]])
    assert F.pad(oa.tensor([True]), (1, 1)).numpy().tolist() == [False, True, False]
    t = oa.tensor(x)
    for kwargs, message in [(dict(pad=(1,)), r"pad \[1\] must have an even length"),
                            (dict(pad=(1, 1), mode="edge"), r"mode 'edge' must be"),
                            (dict(pad=(4, 0), mode="reflect"), r"pad \[4, 0\] of input \[2, 3, 4\] in mode 'reflect'"),
                            (dict(pad=(1, 1), mode="reflect", value=1.0), r"padding mode 'reflect' doesn't take a value"),
                            (dict(pad=(1, 1, 1, 1, 1, 1), mode="circular"), r"mode 'circular' pads the last 1, 2 or 3"),
                            (dict(pad=(-3, -2)), r"gives axis 2 a negative extent")]:
        with pytest.raises(oa.InvalidArgumentError, match="oa.nn.functional.pad: .*" + message):
            F.pad(t, **kwargs)
    with pytest.raises(TypeError, match=r"oa.nn.functional.pad: pad must be a sequence of ints"):
        F.pad(t, (1.5, 1))


@pytest.mark.parametrize("dtype", [oa.float32, oa.float16, oa.bfloat16, oa.int32, oa.bool], ids=str)
def test_flip_repeat_unbind_every_dtype(dtype):
    a = values((2, 3, 4), 20)
    x = oa.tensor(a > 0) if dtype == oa.bool else oa.tensor(a * 10, dtype=dtype)
    n = x.numpy()
    for dims in [(0,), (2, 0), (-1,), ()]:
        got = oa.flip(x, dims)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got.numpy(), np.flip(n, dims) if dims else n)
    np.testing.assert_array_equal(x.flip(1, 2).numpy(), np.flip(n, (1, 2)))
    for reps in [(2, 1, 3), (1, 2, 1, 2), (0, 1, 1)]:
        got = x.repeat(*reps)
        assert got.dtype == dtype
        np.testing.assert_array_equal(got.numpy(), np.tile(n, reps))
    parts = x.unbind(1)
    assert len(parts) == 3 and all(p.dtype == dtype for p in parts)
    for k, p in enumerate(oa.unbind(x, -1)):
        np.testing.assert_array_equal(p.numpy(), n[..., k])


def test_flip_repeat_unbind_gradients_and_errors():
    a = values((2, 3), 21)
    check_gradients(lambda x: x.flip(0, 1), lambda x: x[::-1, ::-1], [a])
    check_gradients(lambda x: x.repeat(2, 1, 2), lambda x: np.tile(x, (2, 1, 2)), [a])
    check_gradients(lambda x: oa.stack([p * (k + 1) for k, p in enumerate(x.unbind(1))]),
                    lambda x: np.stack([x[:, k] * (k + 1) for k in range(3)]), [a])
    y = oa.tensor(a).flip(0)
    y += 1  # flip returns a new tensor, which in-place ops may write (as torch's)
    np.testing.assert_allclose(y.numpy(), a[::-1] + 1)
    x = oa.tensor(a)
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.flip: dims \[0, -2\] name an axis more than once"):
        oa.flip(x, [0, -2])
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.flip: dims 2 is out of range for x of shape \[2, 3\]"):
        x.flip(2)
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.Tensor.repeat: 1 repeats \[2\] for x of shape \[2, 3\]"):
        x.repeat(2)
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.Tensor.repeat: repeats \[2, -1\] must be >= 0"):
        x.repeat(2, -1)
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.unbind: dim 2 is out of range"):
        oa.unbind(x, 2)
    assert oa.unbind(oa.zeros(0, 2)) == ()


def test_linspace():
    for start, end, steps in [(0, 1, 5), (-3.5, 2.0, 7), (1, -1, 2), (2, 2, 1), (0, 1, 0), (0.0, 10.0, 1000)]:
        got = oa.linspace(start, end, steps)
        assert got.dtype == oa.float32 and got.shape == (steps,)
        assert_close(got.numpy(), np.linspace(start, end, steps), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(oa.linspace(0, 10, 4, dtype=oa.int32).numpy(), [0, 3, 6, 10])
    # One step is start alone, not end.
    np.testing.assert_array_equal(oa.linspace(0, 1, 1).numpy(), [0.0])
    np.testing.assert_array_equal(oa.linspace(3, 9, 1, dtype=oa.int32).numpy(), [3])
    assert oa.linspace(0, 1, 3, requires_grad=True).requires_grad
    with pytest.raises(oa.InvalidArgumentError, match="oa.linspace: number of steps must be non-negative, got -1"):
        oa.linspace(0, 1, -1)
    with pytest.raises(TypeError, match="oa.linspace: steps must be an int, not float"):
        oa.linspace(0, 1, 2.0)


def test_randint():
    x = oa.randint(3, 10, (200, 50), seed=4)
    assert x.dtype == oa.int32 and x.shape == (200, 50)
    n = x.numpy()
    assert n.min() == 3 and n.max() == 9 and set(np.unique(n)) == set(range(3, 10))
    assert abs(np.bincount(n.reshape(-1) - 3).max() / n.size - 1 / 7) < 0.01
    np.testing.assert_array_equal(oa.randint(3, 10, (200, 50), seed=4).numpy(), n)
    oa.manual_seed(7)
    first = oa.randint(5, size=(4,)).numpy()
    oa.manual_seed(7)
    np.testing.assert_array_equal(oa.randint(0, 5, (4,)).numpy(), first)
    assert oa.randint(high=2, size=(3,), low=1).numpy().tolist() == [1, 1, 1]
    assert oa.randint(-2**31, 2**31, (2,), seed=1).dtype == oa.int32
    assert oa.randint(0, 4, (3,), dtype=oa.float32).dtype == oa.float32
    with pytest.raises(oa.InvalidArgumentError, match="oa.randint: low 5 must be less than high 5"):
        oa.randint(5, 5, (2,))
    with pytest.raises(TypeError, match="oa.randint: size must be a tuple of ints, not int"):
        oa.randint(0, 5, 3)
    with pytest.raises(oa.InvalidArgumentError, match=r"outside int32"):
        oa.randint(0, 2**32, (1,))
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.randint: size \[2, -1\] has a negative extent"):
        oa.randint(5, (2, -1))


def test_retain_grad():
    x = oa.tensor(values((3,), 22), requires_grad=True)
    x.retain_grad()  # a leaf: nothing to do, as torch
    y = x * 2
    with pytest.raises(NotImplementedError, match=r"oa.Tensor.retain_grad: this tensor is the result of oa::matrix::"):
        y.retain_grad()
    # The workaround the message gives yields y's gradient and carries it on to x.
    y_leaf = y.detach().requires_grad_()
    (y_leaf * y_leaf).sum().backward()
    y.backward(y_leaf.grad)
    assert_close(y_leaf.grad.numpy(), 2 * y.numpy())
    assert_close(x.grad.numpy(), 8 * x.numpy())


def test_loss_modules_match_their_functionals():
    x, y = values((4, 3), 12), values((4, 3), 13)
    probs = (values((4, 3), 14, 0, 1) > 0.5).astype(np.float32)
    w, pw = values((3,), 15, 0.5, 2.0), values((3,), 16, 0.5, 2.0)
    logp = log_softmax(x.astype(np.float64)).astype(np.float32)
    target = oa.tensor(np.int32([0, 2, 1, 2]))
    pairs = [
        (nn.L1Loss(reduction="sum")(oa.tensor(x), oa.tensor(y)), F.l1_loss(oa.tensor(x), oa.tensor(y), reduction="sum")),
        (nn.NLLLoss(oa.tensor(w), ignore_index=1)(oa.tensor(logp), target),
         F.nll_loss(oa.tensor(logp), target, oa.tensor(w), ignore_index=1)),
        (nn.BCEWithLogitsLoss(oa.tensor(w), pos_weight=oa.tensor(pw))(oa.tensor(x), oa.tensor(probs)),
         F.binary_cross_entropy_with_logits(oa.tensor(x), oa.tensor(probs), oa.tensor(w), pos_weight=oa.tensor(pw))),
    ]
    for module_loss, functional_loss in pairs:
        np.testing.assert_array_equal(module_loss.numpy(), functional_loss.numpy())
    assert set(dict(nn.BCEWithLogitsLoss(oa.tensor(w), pos_weight=oa.tensor(pw)).named_buffers())) == {"weight", "pos_weight"}
    assert nn.NLLLoss().weight is None and dict(nn.NLLLoss().named_buffers()) == {}
    with pytest.raises(TypeError, match=r"oa.nn.L1Loss: size_average is deprecated"):
        nn.L1Loss(size_average=True)


@pytest.mark.parametrize("name, other, shapes, bad", [
    ("mm", "mat2", ((3, 4), (4, 2)), ((3, 4), (3, 4))),
    ("bmm", "mat2", ((2, 3, 4), (2, 4, 5)), ((2, 3, 4), (3, 4, 5))),  # batch extents differ (nothing broadcasts)
    ("mv", "vec", ((3, 4), (4,)), ((3, 4), (3,))),
])
def test_fixed_rank_products(name, other, shapes, bad):
    # torch.mm, torch.bmm, torch.mv and their Tensor methods: values and gradients against float64 NumPy.
    a, b = values(shapes[0], 70), values(shapes[1], 71)
    check_gradients(getattr(oa, name), np.matmul, [a, b])
    check_gradients(lambda s, t: getattr(s, name)(t), np.matmul, [a, b])
    assert_close(getattr(oa, name)(oa.tensor(a).half(), oa.tensor(b).half()).float().numpy(), a @ b, rtol=1e-2, atol=1e-2)
    x, y = oa.ones(*bad[0]), oa.ones(*bad[1])
    shape = lambda s: r"\[" + ", ".join(map(str, s)) + r"\]"
    with pytest.raises(oa.InvalidArgumentError, match=rf"oa.{name}: input {shape(bad[0])} and {other} "
                       rf"{shape(bad[1])} cannot be multiplied \(torch.{name}: "):
        getattr(oa, name)(x, y)
    with pytest.raises(oa.InvalidArgumentError, match=rf"oa.Tensor.{name}: input \[3\] and {other}"):
        getattr(oa.ones(3), name)(y)  # a rank torch refuses
    with pytest.raises(oa.InvalidArgumentError, match=rf"oa.{name}: {other} is i32 .*float32, float16 or bfloat16"):
        getattr(oa, name)(oa.tensor(a), oa.tensor(b).int())
