"""torch idioms a PyTorch user writes first, and the errors they meet, named by the user's call."""
import pytest

import oa
import oa.nn.functional as F


def test_cross_entropy_target_shape_errors_name_the_call():
    for weight in (None, oa.ones(3)):
        with pytest.raises(oa.InvalidArgumentError, match=r"^oa\.nn\.functional\.cross_entropy: Expected input "
                           r"batch_size \(4\) to match target batch_size \(2\) \(input \[4, 3\], target \[2\]\)"):
            F.cross_entropy(oa.randn(4, 3), oa.tensor([0, 1]), weight=weight)
        with pytest.raises(oa.InvalidArgumentError, match=r"^oa\.nn\.functional\.cross_entropy: Expected target size "
                           r"\[4, 2\], got \[4\] \(input \[4, 3, 2\]"):
            F.cross_entropy(oa.randn(4, 3, 2), oa.tensor([0, 1, 1, 1]), weight=weight)
        with pytest.raises(oa.InvalidArgumentError, match=r"^oa\.nn\.functional\.cross_entropy: probability target "
                           r"\[4, 2\] must have input's shape \[4, 3\]"):
            F.cross_entropy(oa.randn(4, 3), oa.rand(4, 2), weight=weight)
    with pytest.raises(oa.InvalidArgumentError, match=r"^oa\.nn\.functional\.nll_loss: Expected target size \[\], "
                       r"got \[1\]"):
        F.nll_loss(oa.randn(3), oa.tensor([1]))


def test_where_on_two_engines_names_the_call():
    other = oa.Engine()
    c = oa.ones(3) > 0
    with pytest.raises(oa.InvalidArgumentError, match=r"^oa\.where: other \[3\] lives on another engine than "
                       r"condition \[3\]"):
        oa.where(c, oa.ones(3), oa.ones(3, engine=other))
    with pytest.raises(oa.InvalidArgumentError, match=r"^oa\.Tensor\.where: input \[2\] lives on another engine"):
        oa.ones(2, engine=other).where(c[:2], 0.0)


@pytest.mark.parametrize("pool", ["max_pool2d", "avg_pool2d"])
def test_pooling_kernel_past_the_input_names_the_call_and_the_given_shape(pool):
    message = rf"^oa\.nn\.functional\.{pool}: kernel_size \[6, 6\] exceeds the input \[2, 3, 3\] padded by \[1, 1\]"
    with pytest.raises(oa.InvalidArgumentError, match=message):
        getattr(F, pool)(oa.randn(2, 3, 3), 6, padding=1)
    with pytest.raises(oa.InvalidArgumentError, match=message.replace(r"\[2, 3, 3\]", r"\[1, 2, 3, 3\]")):
        getattr(oa.nn, pool.replace("_pool2d", "Pool2d").capitalize().replace("pool", "Pool"))(6, padding=1)(
            oa.randn(1, 2, 3, 3))


def test_no_grad_decorates_with_and_without_parentheses():
    x = oa.ones(2, requires_grad=True)

    @oa.no_grad()
    def called(t):
        return t * 2

    @oa.no_grad
    def bare(t):
        return t * 2
    assert not called(x).requires_grad and not bare(x).requires_grad and bare.__name__ == "bare"
    assert (x * 2).requires_grad and oa.is_grad_enabled()
    with oa.no_grad():
        assert not (x * 2).requires_grad


def test_nn_utils_clip_grad_and_zero_grad_set_to_none():
    lin = oa.nn.Linear(2, 2)
    lin(oa.full((1, 2), 10.0)).sum().backward()
    norm = oa.nn.utils.clip_grad_norm_(lin.parameters(), max_norm=1.0, norm_type=2.0, error_if_nonfinite=True)
    assert norm.item() > 1.0 and abs(sum(float((p.grad ** 2).sum()) for p in lin.parameters()) - 1.0) < 1e-4
    oa.nn.utils.clip_grad_value_(lin.weight, 0.1)
    assert float(lin.weight.grad.abs().max()) <= 0.1 + 1e-7
    with pytest.raises(oa.InvalidArgumentError, match="clip_grad_norm_: norm_type 1"):
        oa.nn.utils.clip_grad_norm_(lin.parameters(), 1.0, norm_type=1)
    bad = oa.ones(2, requires_grad=True)
    (bad * float("inf")).sum().backward()
    with pytest.raises(RuntimeError, match="non-finite"):
        oa.nn.utils.clip_grad_norm_([bad], 1.0, error_if_nonfinite=True)
    opt = oa.optim.AdamW(lin.parameters(), lr=0.1)
    opt.zero_grad(set_to_none=False)
    assert lin.weight.grad is not None and float(lin.weight.grad.abs().sum()) == 0.0
    opt.zero_grad()
    assert lin.weight.grad is None
    lin(oa.ones(1, 2)).sum().backward()
    lin.zero_grad(set_to_none=False)
    assert float(lin.bias.grad.abs().sum()) == 0.0
    lin.zero_grad()
    assert lin.bias.grad is None


def test_module_apply_and_absent_parameters_are_none():
    seen = []
    model = oa.nn.Sequential(oa.nn.Linear(2, 3, bias=False), oa.nn.Sequential(oa.nn.LayerNorm(3)))
    assert model.apply(lambda m: seen.append(type(m).__name__)) is model
    assert seen == ["Linear", "LayerNorm", "Sequential", "Sequential"]
    assert model[0].bias is None and "bias" not in dict(model.named_parameters())
    assert oa.nn.Conv2d(1, 2, 3, bias=False).bias is None
    assert oa.nn.LayerNorm(3, elementwise_affine=False).weight is None
    assert oa.nn.BatchNorm2d(3, affine=False).bias is None
    assert oa.nn.Linear(2, 3).bias.shape == (3,)


def test_top_level_reshapes_and_integer_conversions():
    x = oa.ones(2, 1, 3)
    assert oa.flatten(x, 1).shape == (2, 3) and oa.squeeze(x, 1).shape == (2, 3)
    assert oa.unsqueeze(x, 0).shape == (1, 2, 1, 3) and oa.clone(x).shape == x.shape
    t = oa.tensor([True, False])
    assert t.long().dtype == oa.int32 and t.long().tolist() == [1, 0] and oa.tensor([3]).int().tolist() == [3]
    assert oa.tensor([2.9, -2.9, 0.5]).long().tolist() == [2, -2, 0]
    r = oa.tensor([1.5, -7.25], dtype=oa.bfloat16).int()
    assert r.dtype == oa.int32 and r.tolist() == [1, -7]
    # Out of range saturates and NaN gives 0 (CUDA's conversion; torch leaves them undefined).
    assert oa.tensor([3e9, -3e9, float("nan"), float("inf")]).int().tolist() == [2**31 - 1, -2**31, 0, 2**31 - 1]
    # copy_ converts any dtype, as torch's (the arithmetic in-place ops keep torch's category rule).
    z = oa.zeros(2, dtype=oa.int32)
    z.copy_(oa.tensor([1.7, -1.7]))
    assert z.tolist() == [1, -1]
    b = oa.zeros(2, dtype=oa.bool)
    b.copy_(oa.tensor([0.0, 3.0]))
    assert b.tolist() == [False, True]
    with pytest.raises(oa.InvalidArgumentError, match="can't be cast to the desired output type i32"):
        oa.zeros(2, dtype=oa.int32).add_(oa.tensor([0.5, 0.5]))
    w = oa.tensor([1.7, 2.2], requires_grad=True)
    i = w.int()
    assert not i.requires_grad and i.grad_fn is None and i.tolist() == [1, 2]


def _rates(scheduler_of, steps=6, lr=0.1):
    opt = oa.optim.SGD([oa.ones(2, requires_grad=True)], lr=lr)
    scheduler = scheduler_of(opt)
    rates = [opt.param_groups[0]["lr"]]
    for _ in range(steps):
        opt.step()
        scheduler.step()
        rates.append(opt.param_groups[0]["lr"])
    assert scheduler.get_last_lr() == [rates[-1]] and opt.lr == pytest.approx(rates[-1], rel=1e-6)
    return pytest.approx(rates), opt, scheduler


def test_lr_schedulers_follow_torch():
    import math
    from oa.optim.lr_scheduler import CosineAnnealingLR, LambdaLR
    S = oa.optim.lr_scheduler
    got, opt, _ = _rates(lambda o: S.StepLR(o, step_size=2, gamma=0.5))
    assert [0.1, 0.1, 0.05, 0.05, 0.025, 0.025, 0.0125] == got
    assert opt.param_groups[0]["initial_lr"] == 0.1
    assert [0.1, 0.01, 0.01, 0.001, 0.001, 0.001, 0.001] == _rates(lambda o: S.MultiStepLR(o, [3, 1]))[0]
    assert [0.1 * 0.9 ** e for e in range(7)] == _rates(lambda o: S.ExponentialLR(o, 0.9))[0]
    assert [0.01 + 0.09 * (1 + math.cos(math.pi * e / 4)) / 2 for e in range(7)] == _rates(
        lambda o: CosineAnnealingLR(o, T_max=4, eta_min=0.01))[0]
    assert [0.1 * (0.25 + 0.75 * min(e, 3) / 3) for e in range(7)] == _rates(
        lambda o: S.LinearLR(o, start_factor=0.25, total_iters=3))[0]
    got, _, scheduler = _rates(lambda o: LambdaLR(o, lambda e: 1 / (e + 1)))
    assert [0.1 / (e + 1) for e in range(7)] == got
    assert scheduler.state_dict() == {"base_lrs": [0.1], "last_epoch": 6, "_last_lr": [0.1 * (1 / 7)]}


def test_reduce_lr_on_plateau():
    opt = oa.optim.Adam([oa.ones(2, requires_grad=True)], lr=1.0)
    scheduler = oa.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=1)
    rates = []
    for loss in [3.0, 2.0, 2.5, 2.5, 2.5, 2.5, 1.0]:
        scheduler.step(oa.tensor(loss))
        rates.append(opt.param_groups[0]["lr"])
    assert rates == [1.0, 1.0, 1.0, 0.5, 0.5, 0.25, 0.25]


def test_gelu_tanh_approximation():
    import numpy as np
    from reference import check_gradients
    x = np.linspace(-3, 3, 13).reshape(1, 13)

    def oracle(v):
        return 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v ** 3)))
    check_gradients(lambda t: F.gelu(t, approximate="tanh"), oracle, [x])
    check_gradients(lambda t: oa.nn.GELU(approximate="tanh")(t), oracle, [x])
    assert repr(oa.nn.GELU()) == "GELU(approximate='none')"
    with pytest.raises(oa.InvalidArgumentError, match="gelu: approximate 'erf' must be 'none' or 'tanh'"):
        F.gelu(oa.ones(2), approximate="erf")


def test_nn_init_fills_in_place_as_torch():
    init = oa.nn.init
    lin = oa.nn.Linear(100, 200)
    weight = lin.weight
    assert init.normal_(lin.weight, mean=1.0, std=0.02) is weight
    assert abs(float(weight.std()) - 0.02) < 2e-3 and abs(float(weight.mean()) - 1.0) < 2e-3
    assert weight.is_leaf and weight.requires_grad and weight.grad_fn is None
    init.zeros_(lin.bias)
    assert float(lin.bias.abs().sum()) == 0.0
    init.constant_(lin.bias, 0.5)
    assert lin.bias.tolist() == [0.5] * 200
    bound = (6 / 300) ** 0.5
    init.xavier_uniform_(weight)
    assert bound * 0.95 < float(weight.abs().max()) <= bound
    init.kaiming_normal_(weight, mode="fan_out", nonlinearity="relu")
    assert abs(float(weight.std()) - (2 / 200) ** 0.5) < 5e-3
    conv = oa.nn.Conv2d(3, 8, 3)
    init.kaiming_uniform_(conv.weight, a=5 ** 0.5)  # torch's default init of Conv2d and Linear
    assert float(conv.weight.abs().max()) <= 1 / 27 ** 0.5
    assert init.calculate_gain("tanh") == 5 / 3
    with pytest.raises(ValueError, match="xavier_normal_: Fan in and fan out can not be computed"):
        init.xavier_normal_(lin.bias)


def test_multinomial_samples_the_weights():
    import numpy as np
    oa.manual_seed(3)
    weights = oa.tensor([[0.1, 0.0, 0.6, 0.3], [1.0, 1.0, 1.0, 1.0]])
    drawn = oa.multinomial(weights, 4000, replacement=True)
    assert drawn.dtype == oa.int32 and drawn.shape == (2, 4000)
    counts = np.stack([np.bincount(row, minlength=4) / 4000 for row in drawn.numpy()])
    assert np.abs(counts - [[0.1, 0.0, 0.6, 0.3], [0.25] * 4]).max() < 0.04
    distinct = weights[0].multinomial(3)
    assert sorted(distinct.tolist()) == [0, 2, 3]
    with pytest.raises(oa.InvalidArgumentError, match=r"oa.multinomial: cannot sample 5 samples from 4 classes "
                       r"without replacement \(input \[2, 4\]\)"):
        oa.multinomial(weights, 5)
