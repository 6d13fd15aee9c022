"""torch behaviours that a new user's trial of the Python API found missing, or
misnamed in their errors."""
import copy

import numpy as np
import pytest

import oa
import oa.nn.functional as F
from reference import assert_close, check_gradients, pool2d, values


def test_permute_and_reductions_name_a_repeated_axis():
    x = oa.tensor(values((2, 3), 1))
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.Tensor.permute: dims \(0, 0\) must be a permutation of the axes "
                       r"of x of shape \[2, 3\]: duplicate dims are not allowed"):
        x.permute(0, 0)
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.permute: .*len\(dims\) = 1 is not x.dim\(\) = 2"):
        oa.permute(x, (1,))
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.Tensor.permute: .*dim 2 is out of range \[-2, 1\]"):
        x.permute(2, 0)
    np.testing.assert_array_equal(x.permute(-1, 0).numpy(), values((2, 3), 1).T)
    for call, op in ((lambda: x.sum(axis=(0, 0)), "oa.Tensor.sum"), (lambda: oa.sum(x, dim=(0, -2)), "oa.sum"),
                     (lambda: x.mean(dim=[1, -1]), "oa.Tensor.mean"), (lambda: x.amax((1, 1)), "oa.Tensor.amax")):
        with pytest.raises(oa.InvalidArgumentError, match=rf"{op}: dim \d appears multiple times in the list of dims .*"
                           r"\(x of shape \[2, 3\]\)"):
            call()


def test_fill_of_a_float_into_int32_truncates():
    i = oa.zeros(3, dtype=oa.int32)
    assert i.fill_(2.5) is i and i.tolist() == [2, 2, 2]
    assert i.fill_(-2.9).tolist() == [-2, -2, -2]
    assert oa.full((2,), 7.9, dtype=oa.int32).tolist() == [7, 7]
    for value in (float("nan"), float("inf"), 2.0**31):
        with pytest.raises(oa.InvalidArgumentError, match="oa.Tensor.fill_: value .* cannot be converted to type int32 "
                           "without overflow"):
            i.fill_(value)


def test_dtype_prints_as_oa_dtype():
    assert str(oa.float32) == repr(oa.float32) == "oa.float32"
    assert [repr(d) for d in (oa.float16, oa.bfloat16, oa.int32, oa.bool)] == [
        "oa.float16", "oa.bfloat16", "oa.int32", "oa.bool"]
    assert f"{oa.half}" == "oa.float16" and oa.float32.name == "float32" and oa.dtype.int32 is oa.int32
    # torch.long: int32, oa's integer dtype, as .long() gives.
    assert oa.long is oa.int32 and not hasattr(oa, "int64")
    assert oa.tensor([2.5, -1.5]).to(oa.long).tolist() == [2, -1]


def test_operands_on_another_engine_are_named():
    other = oa.Engine()
    x = oa.tensor(values((2, 3), 1), requires_grad=True)
    mask = x > 0
    for call, arg, op in (
            (lambda: oa.masked_fill(x, mask, oa.tensor(1.0, engine=other)), r"value \[\]", "oa.masked_fill"),
            (lambda: oa.masked_fill(x, mask, oa.tensor(1.0, engine=other, requires_grad=True)), r"value \[\]",
             "oa.masked_fill"),
            (lambda: x.masked_fill(oa.tensor(np.ones((2, 3), bool), engine=other), 1.0), r"mask \[2, 3\]",
             "oa.Tensor.masked_fill")):
        with pytest.raises(oa.InvalidArgumentError, match=rf"{op}: {arg} lives on another engine than input \[2, 3\]"):
            call()
    y = oa.zeros(4)
    index, there = oa.tensor([1, 2]), oa.tensor([1, 2], engine=other)
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.Tensor.__setitem__: index \[2\] lives on another engine than "
                       r"x \[4\]"):
        y[there] = 1.0
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.Tensor.__setitem__: value \[2\] lives on another engine"):
        y[index] = oa.tensor([1.0, 2.0], engine=other)
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.Tensor.__setitem__: mask \[4\] lives on another engine"):
        y[oa.tensor([True, False, True, False], engine=other)] = 1.0
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.Tensor.__getitem__: index \[2\] lives on another engine"):
        y[there]
    assert y.tolist() == [0.0] * 4
    y[index] = oa.tensor([1.0, 2.0])
    assert y.tolist() == [0.0, 1.0, 2.0, 0.0]
    # Among several index entries, too (reading and writing).
    z = oa.zeros(3, 4)
    rows, here = oa.tensor([0, 2]), oa.tensor([True, False, True, False])
    for key, arg in (((rows, there), r"index \[2\]"), ((there, rows), r"index \[2\]"), ((rows, [1, 3]), None),
                     ((slice(None), there), r"index \[2\]"), ((oa.tensor([1, 2], engine=other), here), r"index \[2\]"),
                     ((rows, oa.tensor([True, False, True, False], engine=other)), r"mask \[4\]")):
        if arg is None:  # [0, 2] and [1, 3] on x's engine: allowed
            assert z[key].tolist() == [0.0, 0.0]
            continue
        for op, call in (("__getitem__", lambda: z[key]), ("__setitem__", lambda: z.__setitem__(key, 1.0))):
            with pytest.raises(oa.InvalidArgumentError, match=rf"oa.Tensor.{op}: {arg} lives on another engine "
                               r"than x \[3, 4\]"):
                call()
    assert z.tolist() == [[0.0] * 4] * 3


def test_embedding_shows_its_padding_idx_normalised():
    e = oa.nn.Embedding(10, 3, padding_idx=-1)
    assert e.padding_idx == 9 and (e.num_embeddings, e.embedding_dim) == (10, 3)
    assert repr(e) == "Embedding(10, 3, padding_idx=9)"
    assert repr(oa.nn.Embedding(4, 2)) == "Embedding(4, 2)"
    assert repr(copy.deepcopy(e)) == "Embedding(10, 3, padding_idx=9)"


@pytest.mark.parametrize("name", ["l1_loss", "mse_loss"])
def test_l1_and_mse_loss_broadcast_with_torchs_warning(name):
    loss, f = getattr(F, name), (np.abs if name == "l1_loss" else np.square)
    a, b = values((2, 3), 1), values((3,), 2)
    x, t = oa.tensor(a, requires_grad=True), oa.tensor(b, requires_grad=True)
    with pytest.warns(UserWarning, match=rf"{name}: Using a target size \(\[3\]\) that is different to the input size "
                      r"\(\[2, 3\]\)"):
        got = loss(x, t, reduction="sum")
    assert_close(got.numpy(), f(a - b).sum())
    got.backward()
    assert x.grad.shape == (2, 3) and t.grad.shape == (3,)
    with pytest.warns(UserWarning):
        assert loss(x, t, reduction="none").shape == (2, 3)
    with pytest.raises(oa.InvalidArgumentError, match=rf"oa.nn.functional.{name}: input \[2, 3\] and target \[4\] do "
                       "not broadcast"):
        loss(x, oa.zeros(4))
    module = oa.nn.L1Loss() if name == "l1_loss" else oa.nn.MSELoss()
    with pytest.warns(UserWarning):
        assert_close(module(x, t).numpy(), f(a - b).mean())


@pytest.mark.parametrize("name", ["l1_loss", "mse_loss"])
def test_l1_and_mse_loss_of_integer_and_16_bit_tensors(name):
    loss, f = getattr(F, name), (np.abs if name == "l1_loss" else np.square)
    i, j = oa.tensor([[1, -2, 3]]), oa.tensor([[4, 0, 3]])
    with pytest.raises(oa.InvalidArgumentError, match=rf"oa.nn.functional.{name}: reduction='mean' needs a floating "
                       "input or target, not int32 and int32"):
        loss(i, j)
    got = loss(i, j, reduction="sum")  # as torch's l1_loss: an integer sum
    assert got.dtype == oa.int32 and got.item() == f(np.array([-3, -2, 0])).sum()
    a = values((2, 3), 1)
    assert_close(loss(oa.tensor(a), i.expand(2, 3)).numpy(), f(a - i.numpy()).mean())  # promoted to float32, as torch
    h = loss(oa.tensor(a, dtype=oa.float16), oa.tensor(a * 0, dtype=oa.float16))
    assert h.dtype == oa.float16
    assert_close(h.float().numpy(), f(a.astype(np.float16).astype(np.float32)).mean(), rtol=2e-3, atol=2e-3)


def test_losses_refuse_integer_operands_as_torch():
    x, t = oa.tensor(values((4, 3), 1)), oa.tensor([0, 1, 2, 1])
    i = oa.tensor([[1, 2, 0]] * 4)
    bce = F.binary_cross_entropy_with_logits
    for call, op, arg in (
            (lambda: F.nll_loss(i, t), "nll_loss", "input"),
            (lambda: F.nll_loss(x, t, weight=oa.tensor([1, 2, 3])), "nll_loss", "weight"),
            (lambda: F.cross_entropy(i, t), "cross_entropy", "input"),
            (lambda: F.cross_entropy(x, t, weight=oa.tensor([1, 2, 3])), "cross_entropy", "weight"),
            (lambda: bce(i, oa.rand(4, 3)), "binary_cross_entropy_with_logits", "input"),
            (lambda: bce(x, oa.tensor([[1, 0, 1]] * 4)), "binary_cross_entropy_with_logits", "target"),
            (lambda: bce(x, oa.rand(4, 3) > 0.5), "binary_cross_entropy_with_logits", "target")):
        with pytest.raises(oa.InvalidArgumentError, match=rf"oa.nn.functional.{op}: {arg} must be a floating tensor"):
            call()
    # torch takes weights of any dtype here: the loss is float32.
    p = oa.rand(4, 3)
    w = oa.tensor([1, 2, 3])
    assert_close(bce(x, p, weight=w).numpy(), bce(x, p, weight=w.float()).numpy())
    assert_close(bce(x, p, pos_weight=w).numpy(), bce(x, p, pos_weight=w.float()).numpy())


def test_bce_with_logits_names_a_weight_that_does_not_broadcast():
    x, t = oa.zeros(2, 3), oa.rand(2, 3)
    for name in ("weight", "pos_weight"):
        for shape in ((4,), (5, 2, 3), (2, 1, 1)):
            with pytest.raises(oa.InvalidArgumentError, match=rf"oa.nn.functional.binary_cross_entropy_with_logits: "
                               rf"{name} \[{', '.join(map(str, shape))}\] must broadcast to input's shape \[2, 3\]"):
                F.binary_cross_entropy_with_logits(x, t, **{name: oa.ones(*shape)})
    assert F.binary_cross_entropy_with_logits(x, t, weight=oa.ones(2, 1), reduction="none").shape == (2, 3)


def _negative_pad(a, pads, numpy_mode):
    """torch's pad of a's last axis by pads = (low, high), either negative: reflect and replicate pad, then crop
    (as torch's kernels); circular crops, then wraps around (torch's _pad_circular)."""
    (low, high), n = pads, a.shape[-1]
    grow, edges = ((0, 0),) * (a.ndim - 1) + ((max(low, 0), max(high, 0)),), (max(-low, 0), max(-high, 0))
    if numpy_mode == "wrap":
        return np.pad(a[..., edges[0]:n - edges[1]], grow, numpy_mode)
    padded = np.pad(a, grow, numpy_mode)
    return padded[..., edges[0]:padded.shape[-1] - edges[1]]


@pytest.mark.parametrize("mode, numpy_mode", [("reflect", "reflect"), ("replicate", "edge"), ("circular", "wrap")])
def test_pad_takes_negative_pads_in_every_mode(mode, numpy_mode):
    a = values((2, 3, 5), 3)
    for pads in ((-1, 2), (2, -1), (-2, 3), (-1, -1), (0, -4)):
        np.testing.assert_array_equal(F.pad(oa.tensor(a), pads, mode=mode).numpy(), _negative_pad(a, pads, numpy_mode))
        check_gradients(lambda x: F.pad(x, pads, mode=mode), lambda x: _negative_pad(x, pads, numpy_mode), [a])
    assert F.pad(oa.zeros(1, 2, 4, 5), (-1, 2, 1, -2), mode=mode).shape == (1, 2, 3, 6)
    empty = (-3, -2) if mode != "circular" else (-4, -2)
    with pytest.raises(oa.InvalidArgumentError, match=rf"oa.nn.functional.pad: pad \[{empty[0]}, -2\] of input "
                       rf"\[2, 3, 5\] in mode '{mode}' gives axis 2 the extent -?[01] \(at least"):
        F.pad(oa.tensor(a), empty, mode=mode)
    if mode == "circular":
        with pytest.raises(oa.InvalidArgumentError, match=r"padding axis 2 of extent 2 \(after the negative pads' "
                           r"crop\) wraps around more than once"):
            F.pad(oa.tensor(a), (-3, 3), mode=mode)


def _adaptive_avg_pool2d(x, oh, ow):
    """torch's adaptive average pooling loops: output (i, j) averages rows floor(i H / oh) .. ceil((i + 1) H / oh) - 1
    and the columns likewise."""
    h, w = x.shape[-2:]
    out = np.zeros(x.shape[:-2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            rows = slice(i * h // oh, -(-(i + 1) * h // oh))
            cols = slice(j * w // ow, -(-(j + 1) * w // ow))
            out[..., i, j] = x[..., rows, cols].mean(axis=(-2, -1))
    return out


@pytest.mark.parametrize("name", ["max_pool2d", "avg_pool2d", "avg_pool2d_ceil", "adaptive_avg_pool2d"])
def test_pooling_takes_unbatched_and_16_bit_inputs(name):
    a = values((1, 2, 5, 6), 5)
    if name == "adaptive_avg_pool2d":
        pool, want = lambda x: F.adaptive_avg_pool2d(x, (2, 3)), lambda x: _adaptive_avg_pool2d(x, 2, 3)
    else:
        mode, ceil = name.split("_")[0], name.endswith("ceil")
        pool = lambda x: getattr(F, f"{mode}_pool2d")(x, 2, stride=2, padding=1, ceil_mode=ceil)  # noqa: E731
        want = lambda x: pool2d(x, (2, 2), (2, 2), (1, 1), ceil, mode=mode)  # noqa: E731
    check_gradients(pool, want, [a])
    check_gradients(pool, lambda x: want(x[None])[0], [a[0]])  # [C, H, W] -> [C, OH, OW], as torch
    for dtype in (oa.float16, oa.bfloat16):
        x = oa.tensor(a[0], dtype=dtype, requires_grad=True)
        y = pool(x)
        assert y.dtype == dtype and y.shape == want(a[:1]).shape[1:]
        assert_close(y.float().numpy(), want(x.float().numpy()[None])[0], rtol=1e-2, atol=1e-2)
        y.sum().backward()
        assert x.grad.dtype == dtype and x.grad.shape == x.shape
    with pytest.raises(oa.InvalidArgumentError, match=rf"oa.nn.functional.{name.removesuffix('_ceil')}: input \[5, 6\] "
                       r"must be \[N, C, H, W\] or \[C, H, W\]"):
        pool(oa.tensor(a[0, 0]))
    with pytest.raises(oa.InvalidArgumentError, match=rf"oa.nn.functional.{name.removesuffix('_ceil')}: input must "
                       "be a floating tensor"):
        pool(oa.zeros(3, 5, 6, dtype=oa.int32))


def test_pooling_modules_take_unbatched_and_16_bit_inputs():
    a = values((3, 6, 6), 6)
    h = oa.tensor(a, dtype=oa.float16)
    for module, want in ((oa.nn.MaxPool2d(2), pool2d(a[None], (2, 2), (2, 2), (0, 0))[0]),
                         (oa.nn.AvgPool2d(3, stride=2, padding=1), pool2d(a[None], (3, 3), (2, 2), (1, 1), mode="avg")[0]),
                         (oa.nn.AdaptiveAvgPool2d((None, 4)), _adaptive_avg_pool2d(a, 6, 4)),
                         (oa.nn.AdaptiveAvgPool2d(1), a.mean(axis=(1, 2), keepdims=True))):
        assert_close(module(oa.tensor(a)).numpy(), want)
        y = module(h)
        assert y.dtype == oa.float16 and y.shape == want.shape
    assert repr(oa.nn.AdaptiveAvgPool2d((5, 7))) == "AdaptiveAvgPool2d(output_size=(5, 7))"
    with pytest.raises(oa.InvalidArgumentError, match=r"adaptive_avg_pool2d: output_size \[0, 2\] and input \[3, 6, 6\]"
                       r"'s H and W must be >= 1"):
        F.adaptive_avg_pool2d(oa.tensor(a), (0, 2))
