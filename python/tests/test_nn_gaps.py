"""torch.nn.functional's and torch.nn's functions and layers that a trial found missing: logsigmoid, softplus's beta
and threshold, smooth_l1 / huber / kl_div / cosine_similarity, softmax(dtype=), the convolutions' padding strings,
and their modules, against NumPy float64 references and finite differences."""
import warnings

import numpy as np
import pytest

import oa
import oa.nn.functional as F
from oa import nn
from reference import assert_close, check_gradients, conv2d, values


def softplus_ref(x, beta=1.0, threshold=20.0):
    return np.where(beta * x > threshold, x, np.log1p(np.exp(beta * x)) / beta)


def huber_ref(x, y, delta):
    d = x - y
    return np.where(np.abs(d) < delta, 0.5 * d * d, delta * (np.abs(d) - 0.5 * delta))


def test_softplus_beta_threshold_and_logsigmoid():
    x = values((3, 5), 1, -4, 4)
    check_gradients(lambda t: F.softplus(t, beta=2.0, threshold=3.0), lambda a: softplus_ref(a, 2.0, 3.0), [x])
    check_gradients(lambda t: F.softplus(t, 0.5), lambda a: softplus_ref(a, 0.5), [x])
    check_gradients(F.logsigmoid, lambda a: -np.logaddexp(0, -a), [x])
    assert_close(F.logsigmoid(oa.tensor([-100.0, 100.0])).numpy(), [-100.0, 0.0])
    # At the threshold itself torch's gradient is still sigmoid(beta x) (linear only past it).
    t = oa.tensor([1.5, 1.6], requires_grad=True)
    F.softplus(t, beta=2.0, threshold=3.0).sum().backward()
    assert_close(t.grad.numpy(), [1 / (1 + np.exp(-3.0)), 1.0])
    module = nn.Softplus(beta=2.0, threshold=3.0)
    assert repr(module) == "Softplus(beta=2.0, threshold=3.0)"
    assert_close(module(oa.tensor(x)).numpy(), softplus_ref(x.astype(np.float64), 2.0, 3.0))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_smooth_l1_and_huber_losses(reduction):
    x, y = values((4, 3), 2, -2, 2), values((4, 3), 3, -2, 2)
    reduce = {"mean": np.mean, "sum": np.sum, "none": lambda a: a}[reduction]
    check_gradients(lambda a, b: F.smooth_l1_loss(a, b, reduction=reduction, beta=0.5),
                    lambda a, b: reduce(huber_ref(a, b, 0.5) / 0.5), [x, y])
    check_gradients(lambda a, b: F.huber_loss(a, b, reduction=reduction, delta=0.7),
                    lambda a, b: reduce(huber_ref(a, b, 0.7)), [x, y])
    check_gradients(lambda a, b: nn.SmoothL1Loss(reduction=reduction, beta=0.0)(a, b),
                    lambda a, b: reduce(np.abs(a - b)), [x, y])
    check_gradients(lambda a, b: nn.HuberLoss(reduction, 1.5)(a, b), lambda a, b: reduce(huber_ref(a, b, 1.5)), [x, y])


def test_smooth_l1_gradient_at_its_kinks():
    # |d| == beta: both pieces have slope sign(d); d == 0: slope 0.
    x = oa.tensor([1.5, -0.5, 2.0, 0.25], requires_grad=True)
    y = oa.tensor([1.0, 0.0, 2.0, 0.0])
    F.smooth_l1_loss(x, y, reduction="sum", beta=0.5).backward()
    assert_close(x.grad.numpy(), [1.0, -1.0, 0.0, 0.5])
    x.grad = None
    F.huber_loss(x, y, reduction="sum", delta=0.5).backward()
    assert_close(x.grad.numpy(), [0.5, -0.5, 0.0, 0.25])
    with pytest.raises(oa.InvalidArgumentError, match="negative values for beta"):
        F.smooth_l1_loss(x, y, beta=-1.0)
    with pytest.raises(oa.InvalidArgumentError, match="non-positive values for delta"):
        F.huber_loss(x, y, delta=0.0)


@pytest.mark.parametrize("reduction", ["mean", "batchmean", "sum", "none"])
@pytest.mark.filterwarnings("ignore:reduction. 'mean' divides:UserWarning")
def test_kl_div(reduction):
    logits, target = values((3, 4), 4, -2, 2), values((3, 4), 5, 0, 1)
    target[0, 1] = 0.0  # a zero probability adds nothing
    reduce = {"mean": np.mean, "sum": np.sum, "none": lambda a: a, "batchmean": lambda a: a.sum() / 3}[reduction]

    def ref(x, t):
        return reduce(np.where(t > 0, t * np.log(np.where(t > 0, t, 1.0)), 0.0) - t * x)

    check_gradients(lambda x, t: F.kl_div(x, t, reduction=reduction), ref, [logits, target], [True, False])
    log_target = np.log(values((3, 4), 6, 0.1, 1))
    check_gradients(lambda x, t: nn.KLDivLoss(reduction=reduction, log_target=True)(x, t),
                    lambda x, t: reduce(np.exp(t) * (t - x)), [logits, log_target])
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        F.kl_div(oa.tensor(logits), oa.tensor(target))
    with pytest.raises(oa.InvalidArgumentError, match="'batchmean'"):
        F.kl_div(oa.tensor(logits), oa.tensor(target), reduction="avg")


def test_cosine_similarity():
    a, b = values((4, 5), 7), values((1, 5), 8)

    def ref(x, y, dim=1):
        x, y = np.broadcast_arrays(x, y)
        return (x * y).sum(dim) / np.maximum(np.linalg.norm(x, axis=dim), 1e-8) / np.maximum(
            np.linalg.norm(y, axis=dim), 1e-8)

    check_gradients(F.cosine_similarity, ref, [a, b])
    check_gradients(lambda x, y: nn.CosineSimilarity(dim=0)(x, y), lambda x, y: ref(x, y, 0), [a, values((4, 5), 9)])
    zero = F.cosine_similarity(oa.zeros(2, 3), oa.ones(2, 3))
    np.testing.assert_array_equal(zero.numpy(), [0.0, 0.0])
    assert repr(nn.CosineSimilarity()) == "CosineSimilarity()"
    with pytest.raises(oa.InvalidArgumentError, match=r"x1 \[4, 5\] and x2 \[3, 5\] do not broadcast"):
        F.cosine_similarity(oa.tensor(a), oa.zeros(3, 5))


def test_softmax_dtype_and_implicit_dim():
    x = values((2, 3, 4), 10)
    for fn, ref in ((F.softmax, lambda a: np.exp(a) / np.exp(a).sum(1, keepdims=True)),
                    (F.log_softmax, lambda a: a - np.log(np.exp(a).sum(1, keepdims=True)))):
        y = fn(oa.tensor(x), 1, dtype=oa.float16)
        assert y.dtype == oa.float16
        assert_close(y.numpy(), ref(x.astype(np.float64)), rtol=2e-3, atol=2e-3)
        with pytest.warns(UserWarning, match="Implicit dimension choice"):
            implicit = fn(oa.tensor(x))  # torch's choice for 3 axes: dim 0
        assert_close(implicit.numpy(), fn(oa.tensor(x), 0).numpy())
        method = getattr(oa.tensor(x), fn.__name__)(1, dtype=oa.float16)
        assert method.dtype == oa.float16 and np.array_equal(method.numpy(), y.numpy())
    check_gradients(lambda t: t.softmax(0, dtype=oa.float32), lambda a: np.exp(a) / np.exp(a).sum(0), [values((3, 2), 11)])
    module = nn.LogSoftmax(dim=-1)
    assert repr(module) == "LogSoftmax(dim=-1)" and repr(nn.Softmax(1)) == "Softmax(dim=1)"
    assert_close(module(oa.tensor(x)).numpy(), F.log_softmax(oa.tensor(x), -1).numpy())


def padded_same(x, kernel, dilation):
    """x zero-padded as torch's padding='same': dilation * (kernel - 1) per axis, the odd one at the end."""
    pads = [(0, 0), (0, 0)]
    for k, d in zip(kernel, dilation):
        total = d * (k - 1)
        pads.append((total // 2, total - total // 2))
    return np.pad(x, pads)


def test_convolution_padding_strings():
    x, w, b = values((2, 3, 5, 6), 12), values((4, 3, 2, 3), 13), values((4,), 14)
    ref = lambda a, k, c: conv2d(padded_same(a, (2, 3), (1, 2)), k, c, dilation=(1, 2))  # noqa: E731
    check_gradients(lambda a, k, c: F.conv2d(a, k, c, padding="same", dilation=(1, 2)), ref, [x, w, b])
    assert F.conv2d(oa.tensor(x), oa.tensor(w), padding="valid").shape == (2, 4, 4, 4)
    x1, w1 = values((2, 3, 7), 15), values((2, 3, 4), 16)
    conv1 = lambda a, k: conv2d(padded_same(a[:, :, None], (1, 4), (1, 1)), k[:, :, None])[:, :, 0]  # noqa: E731
    check_gradients(lambda a, k: F.conv1d(a, k, padding="same"), conv1, [x1, w1])
    with pytest.raises(oa.InvalidArgumentError, match="padding='same' is not supported for strided convolutions"):
        F.conv1d(oa.tensor(x1), oa.tensor(w1), stride=2, padding="same")
    with pytest.raises(oa.InvalidArgumentError, match="Invalid padding string 'full'"):
        F.conv2d(oa.tensor(x), oa.tensor(w), padding="full")
    layer = nn.Conv2d(3, 4, (2, 3), padding="same", dilation=(1, 2))
    assert repr(layer) == "Conv2d(3, 4, kernel_size=(2, 3), stride=1, padding='same', dilation=(1, 2))"
    y = layer(oa.tensor(x))
    assert y.shape == (2, 4, 5, 6)
    assert_close(y.numpy(), ref(x.astype(np.float64), layer.weight.numpy().astype(np.float64),
                                layer.bias.numpy().astype(np.float64)))
    assert nn.Conv1d(3, 2, 4, padding="valid")(oa.tensor(x1)).shape == (2, 2, 4)
    with pytest.raises(oa.InvalidArgumentError, match="oa.nn.Conv1d: padding='same' is not supported for strided"):
        nn.Conv1d(3, 2, 4, stride=2, padding="same")


def test_activation_modules():
    x = values((3, 4), 17, -3, 3)
    x64 = x.astype(np.float64)
    cases = [
        (nn.LeakyReLU(0.2), np.where(x64 > 0, x64, 0.2 * x64), "LeakyReLU(negative_slope=0.2)"),
        (nn.ELU(alpha=0.5, inplace=True), np.where(x64 > 0, x64, 0.5 * np.expm1(x64)), "ELU(alpha=0.5, inplace=True)"),
        (nn.Mish(), x64 * np.tanh(np.log1p(np.exp(x64))), "Mish()"),
        (nn.Hardswish(), x64 * np.clip(x64 + 3, 0, 6) / 6, "Hardswish()"),
        (nn.Softmax(dim=0), np.exp(x64) / np.exp(x64).sum(0), "Softmax(dim=0)"),
    ]
    for module, expected, text in cases:
        assert repr(module) == text
        assert_close(module(oa.tensor(x)).numpy(), expected)
    assert repr(nn.LeakyReLU()) == "LeakyReLU(negative_slope=0.01)" and repr(nn.ELU()) == "ELU(alpha=1.0)"
    with pytest.raises(TypeError):
        nn.LeakyReLU(slope=0.1)


def test_conv_transpose1d():
    oa.manual_seed(3)
    layer = nn.ConvTranspose1d(3, 4, 3, stride=2, padding=1, output_padding=1)
    assert repr(layer) == "ConvTranspose1d(3, 4, kernel_size=3, stride=2, padding=1, output_padding=1)"
    assert [n for n, _ in layer.named_parameters()] == ["weight", "bias"] and layer.weight.shape == (3, 4, 3)
    x = oa.tensor(values((2, 3, 5), 18))
    assert_close(layer(x).numpy(), F.conv_transpose1d(x, layer.weight, layer.bias, stride=2, padding=1,
                                                      output_padding=1).numpy())
    assert layer(x).shape == (2, 4, 10)


def test_parameter_list_and_dict():
    params = nn.ParameterList([oa.zeros(2, 3), nn.Parameter(oa.ones(3))])
    assert isinstance(params[0], nn.Parameter) and params[0].requires_grad and len(params) == 2
    params.append(oa.ones(1))
    assert params[-1].shape == (1,) and [n for n, _ in params.named_parameters()] == ["0", "1", "2"]
    assert repr(params) == ("ParameterList(\n    (0): Parameter containing: [oa.float32 of size 2x3]\n    (1): Parameter "
                            "containing: [oa.float32 of size 3]\n    (2): Parameter containing: [oa.float32 of size 1]\n)")

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.weights = nn.ParameterList([nn.Parameter(oa.ones(2)) for _ in range(2)])
            self.named = nn.ParameterDict({"scale": oa.full((2,), 3.0)})

    model = Model()
    assert list(model.state_dict()) == ["weights.0", "weights.1", "named.scale"]
    assert "scale" in model.named and model.named.get("shift") is None and list(model.named) == ["scale"]
    model.named.update({"shift": oa.zeros(2)})
    assert [k for k, _ in model.named.items()] == ["scale", "shift"]
    del model.named["shift"]
    assert repr(model.named) == "ParameterDict(  (scale): Parameter containing: [oa.float32 of size 2])"
    loss = (model.weights[0] * model.weights[1] * model.named["scale"]).sum()
    loss.backward()
    assert_close(model.weights[0].grad.numpy(), [3.0, 3.0])
