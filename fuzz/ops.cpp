// Fuzzes op argument validation: the input decodes one public op of a family
// (creation, elementwise, reduction, matmul, concat, conv, batched algebra,
// heads, softmax, attention, nn ops and losses), its operands (shapes from a
// small pool of extents, so that they often agree; dtype, autograd flag) and
// its options, and calls it on the run's engine. The call must return or
// throw oa::Error; when it throws, nothing may have been recorded. When it
// returns an f32 result that depends on an operand requiring a gradient, the
// backward pass runs too.
#include <array>
#include <cfloat>
#include <cmath>
#include <limits>
#include <optional>
#include <vector>

#include "fuzz_support.hpp"

namespace {

using namespace oa;
using namespace oa::ml;
namespace mx = oa::matrix;

// Reads the fuzz input front to back; past its end every read gives 0.
class Input {
 public:
  Input(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}

  std::uint8_t byte() {
    if (size_ == 0) return 0;
    --size_;
    return *data_++;
  }
  bool flag() { return byte() & 1; }
  // An integer option: mostly -1..5, sometimes extreme.
  std::int64_t option() {
    static constexpr std::int64_t kExtreme[] = {-100, 64, 65536, std::int64_t{1} << 31, std::int64_t{1} << 62,
                                                std::numeric_limits<std::int64_t>::min()};
    const std::uint8_t b = byte();
    if (b < 250) return static_cast<std::int64_t>(b % 7) - 1;
    return kExtreme[b - 250];
  }
  // A float scalar: ordinary values and the IEEE edge cases.
  float real() {
    static constexpr float kValues[] = {0.0f, 1.0f, -1.0f, 0.5f, 2.0f, 0.125f, 1e-7f, 1e4f, 1e30f, -FLT_MAX, FLT_MAX,
                                        INFINITY, -INFINITY, NAN};
    return kValues[byte() % std::size(kValues)];
  }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
};

// Operands are built from a pool of extents read first, so that the fuzzer
// reaches the valid shape combinations (and the ones just next to them).
class Operands {
 public:
  Operands(Input& in, const Engine& engine) : in_(in), engine_(engine), recorded_(engine.stats().semantic_ops) {
    static constexpr std::int64_t kExtreme[] = {7, 17, 257, 65537, std::int64_t{1} << 31, std::int64_t{1} << 33,
                                                std::int64_t{1} << 62, -1, -3};
    for (std::int64_t& d : pool_) {
      const std::uint8_t b = in_.byte();
      d = b < 247 ? b % 5 : kExtreme[b - 247];
    }
  }

  std::vector<std::int64_t> dims() {
    const int rank = in_.byte() % 6;
    std::vector<std::int64_t> d(rank);
    for (std::int64_t& e : d) e = pool_[in_.byte() % pool_.size()];
    return d;
  }
  Shape shape() { return Shape(dims()); }
  // The engine's semantic-op count after the last operand was made.
  std::uint64_t recorded() const { return recorded_; }
  // Mostly f32 with values in [-2, 2); sometimes i32 in [-1, 4], f16, or undefined.
  Matrix matrix() {
    Matrix m = make_matrix();
    recorded_ = engine_.stats().semantic_ops;
    return m;
  }
  std::array<std::int64_t, 2> pair() { return {in_.option(), in_.option()}; }
  std::optional<float> scale() { return in_.flag() ? std::optional<float>(in_.real()) : std::nullopt; }
  bool any_leaf() const { return !leaves_.empty(); }

 private:
  Matrix make_matrix() {
    const std::uint8_t kind = in_.byte() % 16;
    if (kind == 15) return Matrix();
    const Shape s = shape();
    if (kind == 14) return Matrix::empty(s, DType::F16, engine_);
    if (kind >= 12) {
      // Beyond 64 Ki elements the values come from the device (and the engine's
      // memory limit), not from a host vector of that size.
      if (s.numel() > (1 << 16)) return Matrix::empty(s, DType::I32, engine_);
      std::vector<std::int32_t> values(static_cast<std::size_t>(s.numel()));
      for (std::int32_t& v : values) v = static_cast<std::int32_t>(in_.byte() % 6) - 1;
      return Matrix::from_i32(s, values, engine_);
    }
    Matrix m = Matrix::uniform(s, -2.0f, 2.0f, in_.byte(), engine_);
    if (kind >= 8) {
      set_requires_grad(m);
      leaves_.push_back(m);
    }
    return m;
  }

  Input& in_;
  const Engine& engine_;
  std::array<std::int64_t, 6> pool_{};
  std::vector<Matrix> leaves_;
  std::uint64_t recorded_ = 0;
};

Reduction reduction(Input& in) { return static_cast<Reduction>(in.byte() % 3); }

// Calls the op chosen by the input; returns its results.
std::vector<Matrix> call_op(Input& in, Operands& x, const Engine& engine) {
  const std::uint8_t op = in.byte();
  switch (op % 61) {
    // Creation.
    case 0: return {Matrix::zeros(x.shape(), engine)};
    case 1: return {Matrix::full(x.shape(), in.real(), engine)};
    case 2: {
      const Shape s = x.shape();
      std::vector<float> values(in.byte() % 8, in.real());
      return {Matrix::from_vector(s, values, engine)};
    }
    case 3: return {Matrix::arange(in.real(), in.real(), in.real(), engine)};
    case 4: return {Matrix::normal(x.shape(), in.real(), in.real(), in.byte(), engine)};
    case 5: {
      const Matrix a = x.matrix();
      return {a.reshape(x.dims())};
    }
    // Elementwise.
    case 6: return {mx::add(x.matrix(), x.matrix())};
    case 7: return {mx::sub(x.matrix(), x.matrix())};
    case 8: return {mx::mul(x.matrix(), x.matrix())};
    case 9: return {mx::div(x.matrix(), x.matrix())};
    case 10: return {mx::maximum(x.matrix(), x.matrix())};
    case 11: return {mx::minimum(x.matrix(), x.matrix())};
    case 12: {
      const Matrix a = x.matrix();
      const float s = in.real();
      switch (in.byte() % 4) {
        case 0: return {mx::add(a, s)};
        case 1: return {mx::sub(a, s)};
        case 2: return {mx::mul(a, s)};
        default: return {mx::div(a, s)};
      }
    }
    case 13: {
      using Unary = Matrix (*)(const Matrix&);
      static constexpr Unary kUnary[] = {mx::neg,  mx::exp,    mx::abs,  mx::square, mx::relu, mx::gelu,
                                          mx::tanh, mx::sigmoid, mx::log,  mx::sqrt,   mx::rsqrt, mx::reciprocal, mx::silu};
      const Matrix a = x.matrix();
      return {kUnary[in.byte() % std::size(kUnary)](a)};
    }
    case 14: {
      const Matrix a = x.matrix();
      return {mx::clamp(a, in.real(), in.real())};
    }
    case 15: {
      const Matrix a = x.matrix();
      return {mx::affine(a, in.real(), in.real())};
    }
    // Reductions.
    case 16: {
      const Matrix a = x.matrix();
      const bool keepdim = in.flag();
      switch (in.byte() % 4) {
        case 0: return {mx::sum(a, keepdim)};
        case 1: return {mx::mean(a, keepdim)};
        case 2: return {mx::max(a, keepdim)};
        default: return {mx::argmax(a, keepdim)};
      }
    }
    case 17: {
      const Matrix a = x.matrix();
      switch (in.byte() % 3) {
        case 0: return {mx::sum_all(a)};
        case 1: return {mx::mean_all(a)};
        default: return {mx::max_all(a)};
      }
    }
    case 18: {
      const Matrix a = x.matrix();
      return {mx::sum_to(a, x.shape())};
    }
    // Matrix products and layout.
    case 19: return {mx::matmul(x.matrix(), x.matrix())};
    case 20: return {mx::matmul_nt(x.matrix(), x.matrix())};
    case 21: return {mx::transpose(x.matrix())};
    case 22: {
      std::vector<Matrix> parts(in.byte() % 4);
      for (Matrix& p : parts) p = x.matrix();
      return {mx::concat(parts, static_cast<int>(in.option()))};
    }
    case 23: {
      const Matrix a = x.matrix();
      const std::int64_t parts = in.option();
      return mx::chunk(a, parts, static_cast<int>(in.option()));
    }
    // Convolutions.
    case 24: {
      const Matrix input = x.matrix(), weight = x.matrix(), bias = x.matrix();
      Conv1dOptions o;
      o.stride = in.option();
      o.padding = in.option();
      o.dilation = in.option();
      o.groups = in.option();
      return {conv_1d(input, weight, bias, o)};
    }
    case 25: {
      const Matrix input = x.matrix(), weight = x.matrix(), bias = x.matrix();
      Conv2dOptions o;
      o.stride = x.pair();
      o.padding = x.pair();
      o.dilation = x.pair();
      o.groups = in.option();
      return {conv_2d(input, weight, bias, o)};
    }
    case 26: {
      const Matrix input = x.matrix(), weight = x.matrix(), bias = x.matrix();
      ConvTranspose1dOptions o;
      o.stride = in.option();
      o.padding = in.option();
      o.output_padding = in.option();
      o.dilation = in.option();
      o.groups = in.option();
      return {conv_transpose_1d(input, weight, bias, o)};
    }
    case 27: {
      const Matrix input = x.matrix(), weight = x.matrix(), bias = x.matrix();
      ConvTranspose2dOptions o;
      o.stride = x.pair();
      o.padding = x.pair();
      o.output_padding = x.pair();
      o.dilation = x.pair();
      o.groups = in.option();
      return {conv_transpose_2d(input, weight, bias, o)};
    }
    case 28: {
      const Matrix input = x.matrix(), weight = x.matrix(), bias = x.matrix();
      const std::int64_t stride = in.option(), padding = in.option();
      return {conv_2d(input, weight, bias, stride, padding, in.option())};
    }
    // Batched algebra and heads.
    case 29: return {bmm(x.matrix(), x.matrix())};
    case 30: return {bmm_nt(x.matrix(), x.matrix())};
    case 31: return {bmm_tn(x.matrix(), x.matrix())};
    case 32: {
      const Matrix a = x.matrix(), b = x.matrix(), g = x.matrix();
      const auto layout = static_cast<BmmLayout>(in.byte() % 3);
      const bool need_a = in.flag();
      const BmmGradients r = bmm_backward(layout, a, b, g, need_a, in.flag());
      return {r.a, r.b};
    }
    case 33: {
      const Matrix a = x.matrix();
      const std::int64_t batch = in.option(), seq = in.option();
      if (in.flag()) {
        const QkvHeads r = split_qkv_heads(a, batch, seq, in.option());
        return {r.q, r.k, r.v};
      }
      return {split_heads(a, batch, seq, in.option())};
    }
    case 34: {
      const Matrix a = x.matrix();
      const std::int64_t batch = in.option(), seq = in.option();
      return {merge_heads(a, batch, seq, in.option())};
    }
    // Softmax and attention.
    case 35: {
      const Matrix scores = x.matrix(), mask = x.matrix();
      return {softmax_scaled_masked(scores, mask, in.real())};
    }
    case 36: {
      const Matrix p = x.matrix(), g = x.matrix();
      return {softmax_scaled_masked_backward(p, g, in.real())};
    }
    case 37: {
      const Matrix q = x.matrix(), k = x.matrix(), v = x.matrix(), mask = x.matrix();
      const std::optional<float> scale = x.scale();
      return {scaled_dot_product_attention(q, k, v, mask, scale, in.flag())};
    }
    case 38: {
      const Matrix q = x.matrix(), k = x.matrix(), v = x.matrix(), mask = x.matrix();
      const std::optional<float> scale = x.scale();
      const FlashAttentionResult r = flash_attention(q, k, v, mask, scale, in.flag());
      return {r.output, r.log_sum_exp};
    }
    case 39: {
      const Matrix q = x.matrix(), k = x.matrix(), v = x.matrix(), mask = x.matrix();
      const std::optional<float> scale = x.scale();
      const AttentionWithWeights r = scaled_dot_product_attention_with_weights(q, k, v, mask, scale, in.flag());
      return {r.output, r.weights};
    }
    case 40: {
      const Matrix q = x.matrix(), k = x.matrix(), v = x.matrix();
      return {flash_attention_causal(q, k, v, in.real())};
    }
    case 41: {
      const Matrix q = x.matrix(), k = x.matrix(), v = x.matrix();
      const std::int64_t seq = in.option();
      return {scaled_dot_product_attention_causal(q, k, v, seq, in.option())};
    }
    case 42: {
      const Matrix q = x.matrix(), k = x.matrix(), v = x.matrix(), mask = x.matrix(), out = x.matrix(),
                   lse = x.matrix(), g = x.matrix(), g_lse = x.matrix();
      const float scale = in.real();
      const AttentionGradients r = flash_attention_backward(q, k, v, mask, out, lse, g, scale, in.flag(), g_lse);
      return {r.q, r.k, r.v};
    }
    case 43: {
      const Matrix q = x.matrix(), k = x.matrix(), v = x.matrix(), w = x.matrix(), g = x.matrix(), g_w = x.matrix();
      const AttentionGradients r = attention_weights_backward(q, k, v, w, g, in.real(), g_w);
      return {r.q, r.k, r.v};
    }
    // Neural-network ops and losses.
    case 44: {
      const Matrix a = x.matrix(), w = x.matrix(), b = x.matrix();
      if (in.flag()) return {rms_norm(a, w, in.real())};
      return {layer_norm(a, w, b, in.real())};
    }
    case 45: {
      const Matrix a = x.matrix(), w = x.matrix(), b = x.matrix(), rm = x.matrix(), rv = x.matrix();
      const bool training = in.flag();
      const double momentum = in.real();
      return {batch_norm_2d(a, w, b, rm, rv, training, momentum, in.real())};
    }
    case 46:
    case 47: {
      const Matrix a = x.matrix();
      Pool2dOptions o;
      o.kernel_size = x.pair();
      if (in.flag()) o.stride = x.pair();
      o.padding = x.pair();
      return {op % 61 == 46 ? max_pool_2d(a, o) : avg_pool_2d(a, o)};
    }
    case 48: {
      const Matrix a = x.matrix();
      const std::int64_t kernel = in.option(), stride = in.option();
      return {in.flag() ? max_pool_2d(a, kernel, stride, in.option()) : avg_pool_2d(a, kernel, stride, in.option())};
    }
    case 49: return {global_avg_pool_2d(x.matrix())};
    case 50: {
      const Matrix indices = x.matrix(), weight = x.matrix();
      return {embedding(indices, weight)};
    }
    case 51: {
      const Shape s = x.shape();
      std::vector<std::int32_t> indices(in.byte() % 8);
      for (std::int32_t& i : indices) i = static_cast<std::int32_t>(in.option());
      return {embedding(indices, s, x.matrix())};
    }
    case 52: {
      const Matrix a = x.matrix();
      const double p = in.real();
      const std::uint64_t seed = in.byte();
      return {dropout(a, p, seed, in.flag())};
    }
    case 53: return {log_softmax(x.matrix())};
    case 54: {
      const Matrix logits = x.matrix(), targets = x.matrix();
      CrossEntropyOptions o;
      o.reduction = reduction(in);
      o.ignore_index = in.option();
      o.label_smoothing = in.real();
      return {cross_entropy(logits, targets, o)};
    }
    case 55: {
      const Matrix a = x.matrix(), b = x.matrix();
      return {mse_loss(a, b, reduction(in))};
    }
    case 56: {
      const Matrix logits = x.matrix(), targets = x.matrix();
      return {accuracy(logits, targets)};
    }
    // Layout.
    case 57: {
      const Matrix a = x.matrix();
      if (in.flag()) return {mx::transpose(a, static_cast<int>(in.option()), static_cast<int>(in.option()))};
      std::vector<std::int64_t> dims(in.byte() % 5);
      for (auto& d : dims) d = in.option();
      return {mx::permute(a, dims)};
    }
    case 58: {
      const Matrix a = x.matrix();
      const int axis = static_cast<int>(in.option());
      if (in.flag()) return {mx::narrow(a, axis, in.option(), in.option())};
      std::optional<std::int64_t> start, stop;
      if (in.flag()) start = in.option();
      if (in.flag()) stop = in.option();
      return {mx::slice(a, axis, start, stop, in.option())};
    }
    case 59: {
      const Matrix a = x.matrix();
      const int axis = static_cast<int>(in.option());
      switch (in.byte() % 4) {
        case 0: return {in.flag() ? mx::squeeze(a, axis) : mx::squeeze(a)};
        case 1: return {mx::unsqueeze(a, axis)};
        case 2: return {mx::flatten(a, axis, static_cast<int>(in.option()))};
        default: {
          std::vector<std::int64_t> sizes(in.byte() % 4);
          for (auto& e : sizes) e = in.option();
          return {mx::unflatten(a, axis, sizes)};
        }
      }
    }
    default: {
      const Matrix a = x.matrix();
      return {Matrix::uniform(x.shape(), in.real(), in.real(), in.byte(), engine), a};
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const Engine& engine = fuzz::engine();
  Input in(data, size);
  fuzz::expect_return_or_error([&] {
    Operands x(in, engine);
    std::vector<Matrix> results;
    try {
      results = call_op(in, x, engine);
    } catch (const Error&) {
      if (engine.stats().semantic_ops != x.recorded()) fuzz::die("an op that threw had recorded work");
      throw;
    }
    Matrix loss;
    for (const Matrix& r : results) {
      if (!r.defined() || r.dtype() != DType::F32 || !requires_grad(r)) continue;
      const Matrix s = mx::sum_all(r);
      loss = loss.defined() ? mx::add(loss, s) : s;
    }
    if (loss.defined() && x.any_leaf()) backward(loss);
  });
  return 0;
}
