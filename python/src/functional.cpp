// oa.nn.functional: the ops of oa/ml/functional.hpp and the elementwise
// activations under torch.nn.functional's names and keyword arguments, plus
// oa's own batched products, head reshapes and flash attention.
#include <pybind11/stl.h>

#include <cmath>
#include <string>
#include <vector>

#include "bindings.hpp"

namespace oa::python {
namespace {

namespace mx = oa::matrix;
using OptMatrix = std::optional<Matrix>;

Matrix or_undefined(const OptMatrix& m) { return m ? *m : Matrix(); }

// The prefix of the functions' names in errors (def_as_called).
constexpr const char* kFunctional = "oa.nn.functional.";

ml::Reduction reduction_of(const std::string& r, const char* op) {
  if (r == "mean") return ml::Reduction::Mean;
  if (r == "sum") return ml::Reduction::Sum;
  if (r == "none") return ml::Reduction::None;
  fail(ErrorKind::InvalidArgument, "{}: reduction must be 'none', 'mean' or 'sum', not '{}'", op, r);
}

// normalized_shape must be the last extent alone ([D]).
void require_last_extent(const Matrix& x, py::handle normalized_shape, const char* op) {
  const auto d = int_tuple<1>(normalized_shape, op, "normalized_shape")[0];
  if (x.rank() == 0 || d != x.dim(-1))
    fail(ErrorKind::InvalidArgument, "{}: normalized_shape [{}] of input {}: only the last extent is supported", op, d,
         x.shape());
}

// oa.nn.functional.<name>: `conv` under torch's keywords. The transposed
// convolutions (whose Options have output_padding) take output_padding after
// padding and dilation last, as torch.nn.functional does.
template <class Options, Matrix (*conv)(const Matrix&, const Matrix&, const Matrix&, const Options&)>
void def_conv(py::module_& f, const char* name, const char* doc) {
  using py::arg;
  const auto run = [op = std::string(kFunctional) + name](const Matrix& input, const Matrix& weight, const OptMatrix& bias,
                                                          py::handle stride, py::handle padding, py::handle dilation, std::int64_t groups,
                                                          py::handle output_padding) {
    const Options o = conv_options<Options>(op.c_str(), stride, padding, dilation, groups, output_padding);
    return as_called(op.c_str(), [&] { return conv(input, weight, or_undefined(bias), o); });
  };
  if constexpr (requires(Options& o) { o.output_padding; })
    f.def(
        name,
        [run](const Matrix& input, const Matrix& weight, const OptMatrix& bias, py::handle stride, py::handle padding,
              py::handle output_padding, std::int64_t groups, py::handle dilation) {
          return run(input, weight, bias, stride, padding, dilation, groups, output_padding);
        },
        arg("input"), arg("weight"), arg("bias") = py::none(), arg("stride") = 1, arg("padding") = 0, arg("output_padding") = 0,
        arg("groups") = 1, arg("dilation") = 1, doc);
  else
    f.def(
        name,
        [run](const Matrix& input, const Matrix& weight, const OptMatrix& bias, py::handle stride, py::handle padding,
              py::handle dilation, std::int64_t groups) { return run(input, weight, bias, stride, padding, dilation, groups, {}); },
        arg("input"), arg("weight"), arg("bias") = py::none(), arg("stride") = 1, arg("padding") = 0, arg("dilation") = 1,
        arg("groups") = 1, doc);
}

}  // namespace

ml::Pool2dOptions pool_options(py::handle kernel_size, py::handle stride, py::handle padding, const char* op) {
  ml::Pool2dOptions o;
  o.kernel_size = int_tuple<2>(kernel_size, op, "kernel_size");
  if (!stride.is_none()) o.stride = int_tuple<2>(stride, op, "stride");
  o.padding = int_tuple<2>(padding, op, "padding");
  return o;
}

void bind_functional(py::module_& f, TensorClass& tensor) {
  using py::arg;
  const auto none = py::none();

  // ── Convolution (oa/ml/conv.hpp) ──────────────────────────────────────────
  def_conv<ml::Conv1dOptions, ml::conv_1d>(f, "conv1d",
                                           "input [N, C, L], weight [O, C / groups, K], bias [O] -> [N, O, L_out] (torch conv1d).");
  def_conv<ml::Conv2dOptions, ml::conv_2d>(f, "conv2d",
                                           "input [N, C, H, W], weight [O, C / groups, KH, KW], bias [O] -> [N, O, H_out, W_out].");
  def_conv<ml::ConvTranspose1dOptions, ml::conv_transpose_1d>(
      f, "conv_transpose1d", "input [N, C, L], weight [C, O / groups, K], bias [O] -> [N, O, L_out].");
  def_conv<ml::ConvTranspose2dOptions, ml::conv_transpose_2d>(
      f, "conv_transpose2d", "input [N, C, H, W], weight [C, O / groups, KH, KW], bias [O] -> [N, O, H_out, W_out].");

  // ── Linear, activations ───────────────────────────────────────────────────
  def_as_called(
      f, kFunctional, "linear",
      [](const Matrix& input, const Matrix& weight, const OptMatrix& bias) { return ml::linear(input, weight, or_undefined(bias)); },
      arg("input"), arg("weight"), arg("bias") = none, "x [..., in] @ weight[out, in]^T + bias [out] -> [..., out].");
  def_as_called(f, kFunctional, "relu", &mx::relu, arg("input"));
  def_as_called(
      f, kFunctional, "gelu",
      [](const Matrix& input, const std::string& approximate) {
        if (approximate != "none")
          fail(ErrorKind::InvalidArgument, "oa.nn.functional.gelu: approximate '{}': only 'none' (exact) is supported",
               approximate);
        return mx::gelu(input);
      },
      arg("input"), arg("approximate") = "none", "Exact GELU, x * Phi(x).");
  def_as_called(f, kFunctional, "silu", &mx::silu, arg("input"));
  def_as_called(f, kFunctional, "softplus", &mx::softplus, arg("input"), "log(1 + exp(x)) with beta 1, threshold 20.");
  def_as_called(f, kFunctional, "mish", &mx::mish, arg("input"));
  def_as_called(f, kFunctional, "hardswish", &mx::hardswish, arg("input"));
  def_as_called(f, kFunctional, "leaky_relu", &mx::leaky_relu, arg("input"), arg("negative_slope") = 0.01f);
  def_as_called(f, kFunctional, "elu", &mx::elu, arg("input"), arg("alpha") = 1.0f);
  def_as_called(f, kFunctional, "sigmoid", &mx::sigmoid, arg("input"));
  def_as_called(f, kFunctional, "tanh", &mx::tanh, arg("input"));
  def_as_called(f, kFunctional, "softmax", &ml::softmax, arg("input"), arg("dim") = -1,
                "Softmax along dim; a slice of all -inf gives zeros.");
  def_as_called(f, kFunctional, "log_softmax", &ml::log_softmax, arg("input"), arg("dim") = -1, "Log-softmax along dim.");
  // torch's Tensor methods take dtype too: the input cast to it first.
  const auto cast_first = [](Matrix (*op)(const Matrix&, int)) {
    return [op](const Matrix& x, int dim, const std::optional<DType>& dtype) { return op(dtype ? mx::cast(x, *dtype) : x, dim); };
  };
  def_as_called(tensor, "oa.Tensor.", "softmax", cast_first(&ml::softmax), arg("dim"), arg("dtype") = none,
                "torch.Tensor.softmax: oa.nn.functional.softmax(self, dim, dtype=dtype).");
  def_as_called(tensor, "oa.Tensor.", "log_softmax", cast_first(&ml::log_softmax), arg("dim"), arg("dtype") = none,
                "torch.Tensor.log_softmax: oa.nn.functional.log_softmax(self, dim, dtype=dtype).");

  // ── Normalisation, pooling, dropout, embedding ────────────────────────────
  def_as_called(
      f, kFunctional, "layer_norm",
      [](const Matrix& input, py::handle normalized_shape, const OptMatrix& weight, const OptMatrix& bias, double eps) {
        require_last_extent(input, normalized_shape, "oa.nn.functional.layer_norm");
        return ml::layer_norm(input, or_undefined(weight), or_undefined(bias), eps);
      },
      arg("input"), arg("normalized_shape"), arg("weight") = none, arg("bias") = none, arg("eps") = 1e-5,
      "Layer normalisation over the last axis (normalized_shape = [D]).");
  def_as_called(
      f, kFunctional, "rms_norm",
      [](const Matrix& input, py::handle normalized_shape, const OptMatrix& weight, std::optional<double> eps) {
        require_last_extent(input, normalized_shape, "oa.nn.functional.rms_norm");
        return ml::rms_norm(input, or_undefined(weight), eps);
      },
      arg("input"), arg("normalized_shape"), arg("weight") = none, arg("eps") = none,
      "RMS normalisation over the last axis (normalized_shape = [D]).");
  def_as_called(
      f, kFunctional, "group_norm",
      [](const Matrix& input, std::int64_t num_groups, const OptMatrix& weight, const OptMatrix& bias, double eps) {
        return ml::group_norm(input, num_groups, or_undefined(weight), or_undefined(bias), eps);
      },
      arg("input"), arg("num_groups"), arg("weight") = none, arg("bias") = none, arg("eps") = 1e-5,
      "Group normalisation of [N, C, *] input over each (sample, group of C / num_groups channels).");
  def_as_called(
      f, kFunctional, "instance_norm",
      [](const Matrix& input, const OptMatrix& running_mean, const OptMatrix& running_var, const OptMatrix& weight, const OptMatrix& bias,
         bool use_input_stats, double /*momentum: for running statistics only*/, double eps) {
        if (running_mean || running_var || !use_input_stats)
          fail(ErrorKind::InvalidArgument,
               "oa.nn.functional.instance_norm: running statistics are not supported (running_mean and running_var None, "
               "use_input_stats True)");
        if (input.rank() < 2)
          fail(ErrorKind::InvalidArgument, "oa.nn.functional.instance_norm: input {} must be [N, C, *]", input.shape());
        return ml::group_norm(input, input.dim(1), or_undefined(weight), or_undefined(bias), eps);
      },
      arg("input"), arg("running_mean") = none, arg("running_var") = none, arg("weight") = none, arg("bias") = none,
      arg("use_input_stats") = true, arg("momentum") = 0.1, arg("eps") = 1e-5,
      "Instance normalisation of [N, C, *] input over each (sample, channel): group_norm with C groups.");
  def_as_called(
      f, kFunctional, "rope", [](const Matrix& input, std::int64_t offset, double base) { return ml::rope(input, offset, base); },
      arg("input"), arg("offset") = 0, arg("base") = 10000.0,
      "Rotary position embedding of [..., S, D] input, half-split pairs (i, i + D/2) as GPT-NeoX and Llama.");
  def_as_called(
      f, kFunctional, "batch_norm",
      [](const Matrix& input, const Matrix& running_mean, const Matrix& running_var, const OptMatrix& weight, const OptMatrix& bias,
         bool training, double momentum, double eps) {
        return ml::batch_norm_2d(input, or_undefined(weight), or_undefined(bias), running_mean, running_var, training,
                                 momentum, eps);
      },
      arg("input"), arg("running_mean"), arg("running_var"), arg("weight") = none, arg("bias") = none, arg("training") = false,
      arg("momentum") = 0.1, arg("eps") = 1e-5,
      "Batch normalisation of NCHW input (running statistics required; updated in place in training).");
  def_as_called(
      f, kFunctional, "max_pool2d",
      [](const Matrix& input, py::handle kernel_size, py::handle stride, py::handle padding) {
        return ml::max_pool_2d(input, pool_options(kernel_size, stride, padding, "oa.nn.functional.max_pool2d"));
      },
      arg("input"), arg("kernel_size"), arg("stride") = none, arg("padding") = 0);
  def_as_called(
      f, kFunctional, "avg_pool2d",
      [](const Matrix& input, py::handle kernel_size, py::handle stride, py::handle padding) {
        return ml::avg_pool_2d(input, pool_options(kernel_size, stride, padding, "oa.nn.functional.avg_pool2d"));
      },
      arg("input"), arg("kernel_size"), arg("stride") = none, arg("padding") = 0,
      "Average pooling, padding counted as zeros (count_include_pad=True).");
  def_as_called(
      f, kFunctional, "dropout",
      [](const Matrix& input, double p, bool training, std::optional<std::uint64_t> seed) {
        return ml::dropout(input, p, training ? seed_or_next(seed) : 0, training);
      },
      arg("input"), arg("p") = 0.5, arg("training") = true, arg("seed") = none,
      "Zeroes elements with probability p and scales the rest by 1 / (1 - p); the mask is Philox keyed by `seed` "
      "(default: the next seed of oa.manual_seed's stream).");
  def_as_called(f, kFunctional, "embedding", py::overload_cast<const Matrix&, const Matrix&>(&ml::embedding), arg("input"), arg("weight"),
                "int32 indices [...] into weight [V, D] -> [..., D]; an index outside [0, V) raises oa.OutOfRangeError (an "
                "IndexError) at a later synchronize or host read (found on the device).");

  // ── Losses ────────────────────────────────────────────────────────────────
  def_as_called(
      f, kFunctional, "cross_entropy",
      [](const Matrix& input, const Matrix& target, std::int64_t ignore_index, const std::string& reduction, double label_smoothing) {
        ml::CrossEntropyOptions o{reduction_of(reduction, "oa.nn.functional.cross_entropy"), ignore_index,
                                  label_smoothing};
        return ml::cross_entropy(input, target, o);
      },
      arg("input"), arg("target"), arg("ignore_index") = -100, arg("reduction") = "mean", arg("label_smoothing") = 0.0,
      "torch.nn.functional.cross_entropy (oa::ml::cross_entropy): logits [N, C] against int32 class indices [N], "
      "logits [N, C, d1, ...] against [N, d1, ...], logits [C] against a target []; or float32 class probabilities "
      "of logits' shape (ignore_index does not apply). No class weights. Errors: oa.InvalidArgumentError for shapes, "
      "dtypes, an unknown reduction or label_smoothing outside [0, 1]; a class index outside [0, C) other than "
      "ignore_index (its loss and gradient NaN) raises oa.OutOfRangeError (an IndexError) at the next synchronize() or "
      "host read once the GPU has run the op (the indices live on the device; torch raises at the call).");
  def_as_called(
      f, kFunctional, "mse_loss",
      [](const Matrix& input, const Matrix& target, const std::string& reduction) {
        return ml::mse_loss(input, target, reduction_of(reduction, "oa.nn.functional.mse_loss"));
      },
      arg("input"), arg("target"), arg("reduction") = "mean");
  def_as_called(f, kFunctional, "accuracy", &ml::accuracy, arg("input"), arg("target"),
                "The fraction of rows of logits [N, C] whose first arg-maximum is the int32 target [N], as a float32 "
                "tensor [] (oa::ml::accuracy; not differentiable).");

  // ── Attention and batched products (oa/ml/attention.hpp) ──────────────────
  def_as_called(
      f, kFunctional, "scaled_dot_product_attention",
      [](const Matrix& query, const Matrix& key, const Matrix& value, const OptMatrix& attn_mask, double dropout_p, bool is_causal,
         std::optional<float> scale) {
        if (dropout_p != 0.0)
          fail(ErrorKind::InvalidArgument,
               "oa.nn.functional.scaled_dot_product_attention: dropout_p {}: only 0 is supported", dropout_p);
        return ml::scaled_dot_product_attention(query, key, value, or_undefined(attn_mask), scale, is_causal,
                                                ml::SdpaBackend::Auto, ml::CausalVariant::UpperLeft);
      },
      arg("query"), arg("key"), arg("value"), arg("attn_mask") = none, arg("dropout_p") = 0.0, arg("is_causal") = false,
      arg("scale") = none,
      "q [B, H, Sq, Dh] (or [BH, Sq, Dh]), k, v -> [B, H, Sq, Dv]; attn_mask is additive (-inf hides a key); "
      "is_causal keeps key j for query i where j <= i, as torch (top-left; oa.nn.functional.flash_attention's "
      "causal aligns bottom-right, as for decoding with a cache), and may be combined with attn_mask (torch refuses "
      "both); scale defaults to 1/sqrt(Dh). Raises ValueError for dropout_p != 0.");
  def_as_called(
      f, kFunctional, "flash_attention",
      [](const Matrix& query, const Matrix& key, const Matrix& value, const OptMatrix& attn_mask, std::optional<float> scale,
         bool is_causal) {
        auto r = ml::flash_attention(query, key, value, or_undefined(attn_mask), scale, is_causal);
        return py::make_tuple(r.output, r.log_sum_exp);
      },
      arg("query"), arg("key"), arg("value"), arg("attn_mask") = none, arg("scale") = none, arg("is_causal") = false,
      "The flash path (Dh, Dv <= 256): returns (output, log_sum_exp).");
  def_as_called(f, kFunctional, "bmm_nt", &ml::bmm_nt, arg("input"), arg("mat2"), "[N, M, K] @ [N, P, K]^T -> [N, M, P].");
  def_as_called(f, kFunctional, "bmm_tn", &ml::bmm_tn, arg("input"), arg("mat2"), "[N, K, M]^T @ [N, K, P] -> [N, M, P].");
  def_as_called(f, kFunctional, "split_heads", &ml::split_heads, arg("input"), arg("batch"), arg("seq_len"), arg("num_heads"),
                "[B*S, D] -> [B*H, S, D/H].");
  def_as_called(f, kFunctional, "merge_heads", &ml::merge_heads, arg("input"), arg("batch"), arg("seq_len"), arg("num_heads"),
                "[B*H, S, Dh] -> [B*S, H*Dh].");
  def_as_called(
      f, kFunctional, "softmax_scaled_masked",
      [](const Matrix& scores, const OptMatrix& mask, float scale) { return ml::softmax_scaled_masked(scores, or_undefined(mask), scale); },
      arg("scores"), arg("mask") = none, arg("scale") = 1.0f, "softmax(scores * scale + mask) over the last axis.");
}

}  // namespace oa::python
