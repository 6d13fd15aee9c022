"""Bad input raises oa.Error subclasses by kind (or TypeError for wrong Python
types), with the engine's message; no call crashes the interpreter."""
import itertools
import math

import numpy as np
import pytest

import oa
import oa.nn.functional as F
import reference as ref
from reference import check_gradients, values


def test_error_classes():
    assert issubclass(oa.InvalidArgumentError, oa.Error) and issubclass(oa.InvalidArgumentError, ValueError)
    assert issubclass(oa.FailedPreconditionError, RuntimeError)
    assert issubclass(oa.ResourceExhaustedError, MemoryError)
    for cls in (oa.UnsupportedError, oa.DeviceError, oa.CommunicationError, oa.InternalError):
        assert issubclass(cls, oa.Error) and issubclass(cls, RuntimeError)


def test_messages_name_the_op_and_shapes():
    with pytest.raises(ValueError) as e:
        oa.ones(2, 3) + oa.ones(4)
    assert type(e.value) is oa.InvalidArgumentError
    assert str(e.value).startswith("oa::matrix::add: shapes do not broadcast: a [2, 3], b [4]")
    with pytest.raises(oa.InvalidArgumentError, match=r"oa::ml::conv_2d.*\[1, 3, 4, 4\]"):
        F.conv2d(oa.ones(1, 3, 4, 4), oa.ones(2, 5, 3, 3))
    with pytest.raises(oa.InvalidArgumentError, match="oa::matrix::matmul"):
        oa.ones(2, 3) @ oa.ones(2, 3)
    # The shapes the caller gave, not the internal views of a 1-D operand or of batch_first=False.
    with pytest.raises(oa.InvalidArgumentError, match=r"oa::matrix::matmul: .*a f32 \[5, 1, 2, 3\].*b f16 \[3\]"):
        oa.ones(5, 1, 2, 3) @ oa.ones(3).half()
    # An integer operand is refused naming the user's call (oa's matmul, as torch's CUDA one, takes floats).
    i = oa.ones(2, 2, dtype=oa.int32)
    for call, name in ((lambda: i @ i, r"oa.Tensor.__matmul__ \(@\): input is i32 \[2, 2\]"),
                       (lambda: oa.ones(2, 2) @ i.bool(), r"oa.Tensor.__matmul__ \(@\): other is bool \[2, 2\]"),
                       (lambda: oa.ones(2, 2).matmul(i), r"oa.Tensor.matmul: other is i32"),
                       (lambda: oa.matmul(i, oa.ones(2, 2)), r"oa.matmul: input is i32"),
                       (lambda: np.ones((2, 2), np.int32) @ i, r"oa.Tensor.__rmatmul__ \(@\): input is i32")):
        with pytest.raises(oa.InvalidArgumentError, match=name + r".*float32, float16 or bfloat16 .*\.float\(\)"):
            call()
    x = oa.ones(2, 3, 6)
    with pytest.raises(oa.InvalidArgumentError,
                       match=r"MultiheadAttention: query \[2, 3, 6\] must be \[L, N, E\] with E = 8.*\(batch_first=False\)"):
        oa.nn.MultiheadAttention(8, 2)(x, x, x)
    with pytest.raises(oa.InvalidArgumentError, match=r"key \[4, 3, 8\] and value \[4, 3, 8\] .* query \[2, 2, 8\]"):
        oa.nn.MultiheadAttention(8, 2)(oa.ones(2, 2, 8), oa.ones(4, 3, 8), oa.ones(4, 3, 8))
    q, k = oa.zeros(1, 2, 3, 4), oa.zeros(1, 2, 5, 4)
    with pytest.raises(oa.InvalidArgumentError, match=r"scaled_dot_product_attention: attn_mask \[4, 4\] must broadcast"):
        F.scaled_dot_product_attention(q, k, k, attn_mask=oa.ones(4, 4, dtype=oa.bool))


def test_errors_name_the_users_call_first():
    # The Python call the user made, then the engine op whose check failed (oa::with_context's form).
    i = oa.ones(2, 2, dtype=oa.int32)
    calls = [
        (lambda: F.conv2d(oa.ones(1, 3, 4, 4), oa.ones(2, 5, 3, 3)), r"^oa.nn.functional.conv2d: oa::ml::conv_2d: .*\[1, 3, 4, 4\]"),
        (lambda: F.conv1d(oa.ones(1, 3, 4), oa.ones(2, 5, 3)), r"^oa.nn.functional.conv1d: oa::ml::conv_1d: "),
        (lambda: oa.nn.Conv2d(3, 2, 3)(oa.ones(1, 4, 4, 4)), r"^oa.nn.Conv2d: oa::ml::conv_2d: .*input \[1, 4, 4, 4\]"),
        (lambda: F.linear(i, i), r"^oa.nn.functional.linear: oa::ml::linear: x must be f32, f16, bf16; found i32 \[2, 2\]"),
        (lambda: oa.nn.Linear(2, 2)(i), r"^oa.nn.Linear: oa::ml::linear: x must be .*found i32"),
        (lambda: oa.bmm(i.unsqueeze(0), i.unsqueeze(0)), r"^oa.bmm: input is i32 \[1, 2, 2\]"),
        (lambda: (oa.ones(2, requires_grad=True).int() * 2).sum().backward(), r"^oa.Tensor.backward: .*found i32 \[\]"),
        (lambda: F.layer_norm(oa.ones(2, 3, dtype=oa.int32), (3,)), r"^oa.nn.functional.layer_norm: oa::ml::layer_norm: "),
        (lambda: F.scaled_dot_product_attention(*[i[None, None]] * 3),
         r"^oa.nn.functional.scaled_dot_product_attention: oa::ml::scaled_dot_product_attention: .*i32"),
        (lambda: F.softmax(oa.ones(3, 4), 2), r"^oa.nn.functional.softmax: oa::ml::softmax: dim 2"),
        (lambda: oa.ones(3, 4).log_softmax(-3), r"^oa.Tensor.log_softmax: oa::ml::log_softmax: dim -3"),
        (lambda: oa.nn.LSTM(3, 4)(oa.ones(2, 3, 5)), r"^oa.nn.LSTM: oa::ml::nn::LSTM: input must be \[T, B, I\]"),
        (lambda: oa.nn.GRU(3, 4)(oa.ones(2, 3, 5)), r"^oa.nn.GRU: oa::ml::nn::GRU: input must be"),
        (lambda: oa.nn.Embedding(4, 2)(oa.ones(3)), r"^oa.nn.Embedding: oa::ml::embedding: indices must be i32"),
    ]
    mha, x = oa.nn.MultiheadAttention(8, 2, batch_first=True), oa.ones(2, 3, 8, dtype=oa.int32)
    for need_weights in (True, False):  # the materialised and the flash paths
        with pytest.raises(oa.InvalidArgumentError, match=r"^oa.nn.MultiheadAttention: .* must be f32; found i32"):
            mha(x, need_weights=need_weights)
    with pytest.raises(oa.InvalidArgumentError, match=r"^oa.nn.MultiheadAttention: .*attn_mask \[5, 5\] must be"):
        mha(oa.ones(2, 3, 8), attn_mask=oa.ones(5, 5, dtype=oa.bool))
    for call, message in calls:
        with pytest.raises(oa.InvalidArgumentError, match=message):
            call()


def test_bad_values():
    with pytest.raises(oa.InvalidArgumentError, match="rank 9"):
        oa.zeros(*[1] * 9)
    with pytest.raises(oa.InvalidArgumentError, match="negative"):
        oa.zeros(-1)
    with pytest.raises(oa.InvalidArgumentError, match="complex"):
        oa.tensor([1 + 2j])
    with pytest.raises(oa.InvalidArgumentError, match="outside int32"):
        oa.tensor([2**40])
    with pytest.raises(oa.InvalidArgumentError, match="stride"):
        F.conv2d(oa.ones(1, 1, 4, 4), oa.ones(1, 1, 2, 2), stride=(1, 2, 3))
    with pytest.raises(oa.InvalidArgumentError):
        F.cross_entropy(oa.ones(2, 3), oa.ones(2))  # float targets
    with pytest.raises(oa.InvalidArgumentError, match="no Vulkan device"):
        oa.Engine(device="no such device")
    with pytest.raises(oa.InvalidArgumentError):
        oa.tensor([1, 2]).item()


def test_wrong_python_types():
    with pytest.raises(TypeError):
        oa.zeros("a")
    with pytest.raises(TypeError):
        oa.ones(2) + None
    with pytest.raises(TypeError):
        F.relu(None)
    with pytest.raises(TypeError):
        F.conv2d(oa.ones(1, 1, 3, 3), oa.ones(1, 1, 1, 1), groups=1.5)
    with pytest.raises(TypeError):
        oa.ones(2).grad = "a"
    with pytest.raises(ValueError, match="not a leaf that requires grad"):
        oa.ones(2).grad = oa.ones(2)


def test_resource_exhausted():
    k = oa.default_engine().device.max_storage_buffer_range // 4 + 1
    with pytest.raises(MemoryError) as e:
        oa.zeros(1, k) @ oa.zeros(k, 1)
    assert type(e.value) is oa.ResourceExhaustedError and "maxStorageBufferRange" in str(e.value)


def test_a_gemm_past_the_storage_range_names_the_recurrent_layer():
    """A GEMM inside oa.nn.LSTM or GRU (the input projection of a batch whose gates [B, G * H] pass
    maxStorageBufferRange) raises oa.ResourceExhaustedError (a MemoryError) whose message names the layer first."""
    limit = oa.default_engine().device.max_storage_buffer_range
    if limit > 2**28:
        pytest.skip(f"maxStorageBufferRange {limit} makes a batch past it too large to test")
    H = 4
    x = oa.zeros(1, limit // (4 * 3 * H) + 1, 1)
    for layer, name in ((oa.nn.LSTM(1, H), "LSTM"), (oa.nn.GRU(1, H), "GRU")):
        with pytest.raises(oa.ResourceExhaustedError, match=rf"^oa.nn.{name}: oa::ml::nn::{name}: oa::ml::linear: GEMM .*maxStorageBufferRange"):
            layer(x)


@pytest.mark.filterwarnings("ignore:.*Using a target size:UserWarning")
@pytest.mark.filterwarnings("ignore:Implicit dimension choice:UserWarning")
def test_fuzz_raises_only_errors():
    """Random shapes, dtypes and None through the bindings: each call returns
    or raises oa.Error or TypeError (a crash would end the test run)."""
    rng = np.random.default_rng(17)

    def operand():
        kind = rng.integers(6)
        if kind == 0:
            return None
        if kind == 1:
            return float(rng.uniform(-2, 2))
        shape = tuple(int(d) for d in rng.integers(0, 4, size=rng.integers(0, 5)))
        dtype = [oa.float32, oa.float16, oa.int32, oa.bool, oa.float32][int(rng.integers(5))]
        return oa.tensor(rng.uniform(-2, 2, size=shape), dtype=dtype)

    calls = [
        lambda a, b: a + b, lambda a, b: a * b, lambda a, b: a @ b, lambda a, b: a / b,
        lambda a, b: F.linear(a, b), lambda a, b: F.conv1d(a, b), lambda a, b: F.conv2d(a, b, padding=1),
        lambda a, b: F.conv_transpose2d(a, b, stride=2), lambda a, b: F.layer_norm(a, 3, b),
        lambda a, b: F.cross_entropy(a, b), lambda a, b: F.mse_loss(a, b), lambda a, b: F.bmm(a, b),
        lambda a, b: F.scaled_dot_product_attention(a, b, b), lambda a, b: F.softmax(a),
        lambda a, b: F.max_pool2d(a, 2), lambda a, b: F.embedding(a, b), lambda a, b: F.log_softmax(a),
        lambda a, b: a.reshape(-1, 2), lambda a, b: a.permute(1, 0), lambda a, b: a.sum(dim=-1),
        lambda a, b: a.to(oa.bfloat16), lambda a, b: a.requires_grad_(), lambda a, b: (a * 2).sum().backward(),
        lambda a, b: a.item(), lambda a, b: a.numpy(), lambda a, b: F.gelu(a),
    ]
    outcomes = {"returned": 0, "raised": 0}
    for call, _ in itertools.product(calls, range(12)):
        try:
            call(operand(), operand())
            outcomes["returned"] += 1
        except (oa.Error, TypeError, AttributeError):
            outcomes["raised"] += 1
    oa.synchronize()
    assert outcomes["returned"] > 0 and outcomes["raised"] > 0


def test_fuzz_findings(tmp_path):
    """Calls that fuzz/fuzz_python.py found answering with an unclear error; each now gets a clear one or works."""
    x = oa.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    np.testing.assert_array_equal(x[np.int64(1)].numpy(), x.numpy()[1])  # NumPy integers index as ints
    np.testing.assert_array_equal(x[np.int32(-1), 1:np.int64(3)].numpy(), x.numpy()[-1, 1:3])
    with pytest.raises(IndexError):
        x[2**70]
    np.testing.assert_array_equal(x[-2**70:2**70].numpy(), x.numpy())  # slices clip, as Python's
    with pytest.raises(TypeError, match=r"oa.save: obj\[a\] is a set; oa.save stores tensors, dicts"):
        oa.save({"a": {5}}, tmp_path / "x.safetensors")
    with pytest.raises(ValueError, match="set_epoch: epoch must be an int in"):
        oa.data.DataLoader([1, 2]).set_epoch(-1)


@pytest.mark.parametrize("make, shape", [
    (lambda: F.log_softmax(oa.zeros(0, 3), dim=-1), (0, 3)),
    (lambda: F.softmax(oa.zeros(0, 3), dim=-1), (0, 3)),
    (lambda: F.linear(oa.zeros(0, 3), oa.ones(2, 3), oa.ones(2)), (0, 2)),
    (lambda: F.layer_norm(oa.zeros(0, 3), [3]), (0, 3)),
    (lambda: oa.cat([oa.ones(2, 3), oa.zeros(0, 3)]), (2, 3)),
    (lambda: oa.zeros(0, 2, 3) @ oa.zeros(3, 4), (0, 2, 4)),
    (lambda: oa.zeros(0, 1, 2, 3) @ oa.zeros(5, 3, 4), (0, 5, 2, 4)),
    (lambda: F.conv2d(oa.zeros(0, 3, 5, 5), oa.ones(4, 3, 3, 3), stride=2), (0, 4, 2, 2)),
    (lambda: F.conv1d(oa.zeros(0, 3, 5), oa.ones(4, 3, 3)), (0, 4, 3)),
    (lambda: F.conv_transpose2d(oa.zeros(0, 3, 5, 5), oa.ones(3, 2, 3, 3)), (0, 2, 7, 7)),
    (lambda: F.cross_entropy(oa.zeros(0, 3), oa.zeros(0, dtype=oa.int32), reduction="none"), (0,)),
    (lambda: F.max_pool2d(oa.zeros(0, 3, 4, 4), 2), (0, 3, 2, 2)),
    (lambda: F.avg_pool2d(oa.zeros(0, 3, 4, 4), 2), (0, 3, 2, 2)),
    (lambda: F.group_norm(oa.zeros(0, 4, 2, 2), 2, oa.ones(4), oa.zeros(4)), (0, 4, 2, 2)),
    (lambda: oa.nn.BatchNorm2d(3).eval()(oa.zeros(0, 3, 4, 4)), (0, 3, 4, 4)),
    (lambda: F.mse_loss(oa.zeros(0, 3), oa.zeros(0, 3), reduction="none"), (0, 3)),
    (lambda: F.scaled_dot_product_attention(oa.zeros(2, 2, 0, 4), oa.zeros(2, 2, 5, 4), oa.zeros(2, 2, 5, 3)), (2, 2, 0, 3)),
    (lambda: F.scaled_dot_product_attention(oa.zeros(0, 2, 3, 4), oa.zeros(0, 2, 5, 4), oa.zeros(0, 2, 5, 3)), (0, 2, 3, 3)),
], ids=["log_softmax", "softmax", "linear", "layer_norm", "cat", "matmul", "matmul_broadcast", "conv2d", "conv1d",
        "conv_transpose2d", "cross_entropy_none", "max_pool2d", "avg_pool2d", "group_norm", "batch_norm_eval", "mse_loss_none",
        "sdpa_no_queries", "sdpa_empty_batch"])
def test_empty_inputs_give_empty_results(make, shape):
    out = make()
    assert out.shape == shape
    assert out.numpy().shape == shape


def test_empty_batch_conv_gradients():
    # torch: an empty batch gives zero weight and bias gradients (finite differences of an empty output).
    x, w, b = values((0, 3, 5, 5), 1), values((4, 3, 3, 3), 2), values((4,), 3)
    check_gradients(lambda x, w, b: F.conv2d(x, w, b, padding=1), lambda x, w, b: ref.conv2d(x, w, b, padding=(1, 1)), [x, w, b])
    wt = oa.tensor(w, requires_grad=True)
    F.conv2d(oa.tensor(x), wt).sum().backward()
    assert np.array_equal(wt.grad.numpy(), np.zeros_like(w))


def test_softmax_of_no_rows_has_an_empty_gradient():
    check_gradients(lambda x: F.softmax(x, dim=-1), ref.softmax, [values((0, 4), 4)])


@pytest.mark.parametrize("dh", [4, 300], ids=["flash", "math"])  # Dh above 256 takes the materialised path
def test_attention_over_no_keys_is_zero(dh):
    # Every query row sees no key: a fully masked row, zero output and zero q gradient (torch's math path).
    q = oa.tensor(values((1, 2, 3, dh), 5), requires_grad=True)
    k = oa.tensor(values((1, 2, 0, dh), 6), requires_grad=True)
    v = oa.tensor(values((1, 2, 0, 5), 7), requires_grad=True)
    out = F.scaled_dot_product_attention(q, k, v)
    assert np.array_equal(out.numpy(), np.zeros((1, 2, 3, 5), np.float32))
    out.backward(oa.tensor(values((1, 2, 3, 5), 8)))
    assert np.array_equal(q.grad.numpy(), np.zeros((1, 2, 3, dh), np.float32))
    assert k.grad.shape == (1, 2, 0, dh) and v.grad.shape == (1, 2, 0, 5)
    if dh <= 256:
        _, lse = F.flash_attention(q, k, v)
        assert np.array_equal(lse.numpy(), np.full((1, 2, 3), -np.inf, np.float32))


def test_cross_entropy_of_no_rows():
    logits, target = oa.zeros(0, 3), oa.zeros(0, dtype=oa.int32)
    assert math.isnan(F.cross_entropy(logits, target).item())
    assert F.cross_entropy(logits, target, reduction="sum").item() == 0.0
    assert F.cross_entropy(oa.zeros(0, 3, 2), oa.zeros(0, 2, dtype=oa.int32), reduction="none").shape == (0, 2)


def test_mse_loss_of_no_elements():
    # torch: the mean of nothing is NaN, the sum 0; the gradient is empty.
    a = oa.zeros(0, 3, requires_grad=True)
    assert math.isnan(F.mse_loss(a, oa.zeros(0, 3)).item())
    loss = F.mse_loss(a, oa.zeros(0, 3), reduction="sum")
    assert loss.item() == 0.0
    loss.backward()
    assert a.grad.shape == (0, 3)


@pytest.mark.parametrize("pool", [F.max_pool2d, F.avg_pool2d], ids=["max", "avg"])
def test_pool_of_an_empty_batch_has_an_empty_gradient(pool):
    x = oa.zeros(0, 3, 4, 4, requires_grad=True)
    pool(x, 2).sum().backward()
    assert x.grad.shape == (0, 3, 4, 4)


def test_norms_of_an_empty_batch():
    # group_norm: zero weight and bias gradients (finite differences of an empty output).
    x, w, b = values((0, 4, 2, 2), 1), values((4,), 2), values((4,), 3)
    check_gradients(lambda x, w, b: F.group_norm(x, 2, w, b), lambda x, w, b: x.copy(), [x, w, b])
    # BatchNorm2d, as torch: an empty output in both modes, the running statistics kept; training counts the batch.
    bn = oa.nn.BatchNorm2d(3)
    x = oa.zeros(0, 3, 4, 4, requires_grad=True)
    y = bn(x)
    assert y.shape == (0, 3, 4, 4)
    y.sum().backward()
    assert np.array_equal(bn.weight.grad.numpy(), np.zeros(3, np.float32))
    assert np.array_equal(bn.bias.grad.numpy(), np.zeros(3, np.float32))
    assert np.array_equal(bn.running_mean.numpy(), np.zeros(3, np.float32))
    assert np.array_equal(bn.running_var.numpy(), np.ones(3, np.float32))
    assert bn.num_batches_tracked.item() == 1


@pytest.mark.parametrize("dh", [4, 300], ids=["flash", "math"])
def test_attention_with_no_queries_is_empty(dh):
    # No query rows (Sq = 0, or an empty batch): an empty output and zero k and v gradients, as torch.
    for qs, ks in [((1, 2, 0, dh), (1, 2, 5, dh)), ((0, 2, 3, dh), (0, 2, 5, dh))]:
        q, k = oa.tensor(values(qs, 5), requires_grad=True), oa.tensor(values(ks, 6), requires_grad=True)
        v = oa.tensor(values(ks[:3] + (3,), 7), requires_grad=True)
        out = F.scaled_dot_product_attention(q, k, v)
        assert out.shape == qs[:3] + (3,)
        out.sum().backward()
        assert q.grad.shape == qs
        assert np.array_equal(k.grad.numpy(), np.zeros(ks, np.float32))
        assert np.array_equal(v.grad.numpy(), np.zeros(ks[:3] + (3,), np.float32))


@pytest.mark.parametrize("batch_first", [True, False])
def test_multihead_attention_over_no_keys(batch_first):
    # As SDPA over no keys: zero attention, so the output is the output projection's bias.
    mha = oa.nn.MultiheadAttention(8, 2, batch_first=batch_first)
    q = oa.tensor(values((2, 3, 8) if batch_first else (3, 2, 8), 1), requires_grad=True)
    kv = oa.zeros(2, 0, 8) if batch_first else oa.zeros(0, 2, 8)
    out, _ = mha(q, kv, kv)
    assert out.shape == q.shape
    np.testing.assert_allclose(out.numpy(), np.broadcast_to(mha.out_proj.bias.numpy(), q.shape), atol=1e-6)
    out.sum().backward()
    assert np.array_equal(q.grad.numpy(), np.zeros(q.shape, np.float32))


def test_bad_shapes_still_refused_clearly():
    # Only the batch may be empty; other zero extents are refused naming the op, the argument and the shapes.
    cases = [
        (lambda: F.conv2d(oa.zeros(1, 0, 5, 5), oa.ones(4, 0, 3, 3)), r"conv_2d: input extent 1 is zero \(input \[1, 0, 5, 5\]"),
        (lambda: F.scaled_dot_product_attention(oa.zeros(1, 2, 3, 4), oa.zeros(1, 2, 0, 4), oa.zeros(1, 2, 0, 0)),
         r"scaled_dot_product_attention: v must be .*\(Dv >= 1\); found \[1, 2, 0, 0\]"),
        (lambda: F.scaled_dot_product_attention(oa.zeros(1, 2, 3, 4), oa.zeros(1, 3, 0, 4), oa.zeros(1, 3, 0, 4)),
         r"scaled_dot_product_attention: k must be .*found \[1, 3, 0, 4\]"),
        (lambda: F.cross_entropy(oa.zeros(2, 0), oa.zeros(2, dtype=oa.int32)), r"cross_entropy: logits must be \[N, C\] with C >= 1; found \[2, 0\]"),
    ]
    for make, message in cases:
        with pytest.raises(oa.InvalidArgumentError, match=message):
            make()


def test_reduction_dims_out_of_range_name_the_op_and_dim():
    x = oa.ones(2, 3)
    for call, op in [(lambda: x.sum(1 << 40), "oa.Tensor.sum"), (lambda: oa.mean(x, (0, 2)), "oa.mean"),
                     (lambda: x.amax(-3), "oa.Tensor.amax"), (lambda: x.var(1 << 70), "oa.Tensor.var"),
                     (lambda: x.max(5), "oa.Tensor.max"), (lambda: oa.norm(x, 2, [-(1 << 40)]), "oa.norm")]:
        with pytest.raises(oa.InvalidArgumentError, match=rf"{op}: dim -?\d+ is out of range for x of shape \[2, 3\] "
                                                          r"\(expected an axis in \[-2, 1\]\)"):
            call()
    with pytest.raises(TypeError, match=r"oa.Tensor.sum: dim must be None, an int or a tuple of ints, not float"):
        x.sum(1.5)
    with pytest.raises(TypeError, match=r"oa.prod: dim must be .* holding 'a'"):
        oa.prod(x, (0, "a"))
    assert oa.ones(()).sum(0).shape == () and oa.ones(()).sum(-1).shape == ()  # rank 0 takes 0 and -1, as torch


def test_argument_mismatch_messages_name_the_function_and_argument():
    x, rm, rv = oa.ones(4, 3, 2, 2), oa.zeros(3), oa.ones(3)
    with pytest.raises(TypeError) as e:
        F.batch_norm(x, rm, rv, training=True, momentum="fast")
    message = str(e.value)
    assert message.startswith("batch_norm(): incompatible function arguments") and "momentum='fast'" in message


def test_batch_norm_arguments_name_the_failing_one():
    for kwargs, name in [(dict(momentum=-0.1), "momentum -0.1 must be in [0, 1]"), (dict(eps=-1.0), "eps -1 must be >= 0")]:
        with pytest.raises(oa.InvalidArgumentError) as e:
            oa.nn.BatchNorm2d(3, **kwargs)
        assert name in str(e.value) and "num_features" not in str(e.value)
    with pytest.raises(oa.InvalidArgumentError, match=r"num_features 0 must be >= 1$"):
        oa.nn.BatchNorm1d(0)
