// The autocast policy table, its per-thread state and cast cache, and the
// input casts that the generic apply (matrix/op_def.hpp) asks for.
#include "oa/matrix/autocast.hpp"

#include <algorithm>
#include <unordered_map>

#include "matrix/op_def.hpp"
#include "oa/matrix/cast.hpp"

namespace oa {

namespace {

// The one table (see oa/matrix/autocast.hpp); ops not listed are Promote.
constexpr std::pair<std::string_view, AutocastPolicy> kPolicies[] = {
    // GEMMs: the tensor-core ops.
    {"oa::matrix::matmul", AutocastPolicy::Lower},
    {"oa::matrix::matmul_nt", AutocastPolicy::Lower},
    {"oa::ml::linear", AutocastPolicy::Lower},
    {"oa::ml::bmm", AutocastPolicy::Lower},
    {"oa::ml::bmm_nt", AutocastPolicy::Lower},
    {"oa::ml::bmm_tn", AutocastPolicy::Lower},
    {"oa::ml::conv_1d", AutocastPolicy::Lower},
    {"oa::ml::conv_2d", AutocastPolicy::Lower},
    {"oa::ml::conv_transpose_1d", AutocastPolicy::Lower},
    {"oa::ml::conv_transpose_2d", AutocastPolicy::Lower},
    // Attention: 16-bit q, k, v and output, f32 softmax statistics (the mask, detached, stays as given).
    {"oa::ml::scaled_dot_product_attention", AutocastPolicy::Lower},
    {"oa::ml::scaled_dot_product_attention_causal", AutocastPolicy::Lower},
    // No 16-bit lowering yet.
    {"oa::ml::lstm_cell", AutocastPolicy::F32},
    {"oa::ml::gru_cell", AutocastPolicy::F32},
    {"oa::ml::lstm_layer", AutocastPolicy::F32},
    {"oa::ml::gru_layer", AutocastPolicy::F32},
    // Softmax statistics, norms, losses.
    {"oa::ml::softmax_scaled_masked", AutocastPolicy::F32},
    {"oa::ml::log_softmax", AutocastPolicy::F32},
    {"oa::ml::layer_norm", AutocastPolicy::F32},
    {"oa::ml::rms_norm", AutocastPolicy::F32},
    {"oa::ml::group_norm", AutocastPolicy::F32},
    {"oa::ml::batch_norm_2d", AutocastPolicy::F32},
    {"oa::ml::cross_entropy", AutocastPolicy::F32},
    {"oa::ml::mse_loss", AutocastPolicy::F32},
    // Reductions and the functions whose range or accuracy 16 bits lose.
    {"oa::matrix::sum", AutocastPolicy::F32},
    {"oa::matrix::mean", AutocastPolicy::F32},
    {"oa::matrix::prod", AutocastPolicy::F32},
    {"oa::matrix::norm", AutocastPolicy::F32},
    {"oa::matrix::var", AutocastPolicy::F32},
    {"oa::matrix::std", AutocastPolicy::F32},
    {"oa::matrix::logsumexp", AutocastPolicy::F32},
    {"oa::matrix::cumsum", AutocastPolicy::F32},
    {"oa::matrix::sum_to", AutocastPolicy::F32},
    {"oa::matrix::exp", AutocastPolicy::F32},
    {"oa::matrix::exp2", AutocastPolicy::F32},
    {"oa::matrix::expm1", AutocastPolicy::F32},
    {"oa::matrix::log", AutocastPolicy::F32},
    {"oa::matrix::log1p", AutocastPolicy::F32},
    {"oa::matrix::pow", AutocastPolicy::F32},
    {"oa::matrix::reciprocal", AutocastPolicy::F32},
    {"oa::matrix::rsqrt", AutocastPolicy::F32},
    {"oa::matrix::softplus", AutocastPolicy::F32},
    // The cast the policy inserts.
    {"oa::matrix::cast", AutocastPolicy::Keep},
};

thread_local std::optional<DType> t_dtype;
thread_local int t_enabled_depth = 0;  // enabled scopes alive on this thread

// Casts of leaves that require a gradient, made in the outermost enabled scope.
struct CachedCast {
  Matrix source;  // kept alive so that its address is not reused
  std::uint64_t version = 0;
  Matrix f16, bf16;
};
thread_local std::unordered_map<const MatrixImpl*, CachedCast> t_cache;

bool is_requires_grad_leaf(const Matrix& m) {
  const auto& a = m.impl()->autograd;
  return a && a->requires_grad && !a->grad_fn;
}

// x cast to `dtype`, through the cache for a leaf that requires a gradient
// (while gradient mode is on: a cast made under NoGradGuard has no history).
Matrix cast_input(const Matrix& x, DType dtype) {
  if (dtype == DType::F32 || !grad_enabled() || !is_requires_grad_leaf(x)) return matrix::cast(x, dtype);
  CachedCast& c = t_cache[x.impl().get()];
  const std::uint64_t version = x.storage()->version();
  if (!c.source.defined() || c.version != version) c = {x, version, {}, {}};
  Matrix& slot = dtype == DType::F16 ? c.f16 : c.bf16;
  if (!slot.defined()) slot = matrix::cast(x, dtype);
  return slot;
}

DType widest(DType a, DType b) {
  if (a == b) return a;
  return DType::F32;  // f32 with anything, and f16 with bf16
}

}  // namespace

AutocastPolicy autocast_policy(std::string_view op) {
  for (const auto& [name, policy] : kPolicies)
    if (name == op) return policy;
  return AutocastPolicy::Promote;
}

std::span<const std::pair<std::string_view, AutocastPolicy>> autocast_table() { return kPolicies; }

std::optional<DType> autocast_dtype() { return t_dtype; }

AutocastGuard::AutocastGuard(DType dtype, bool enabled) : previous_(t_dtype) {
  if (enabled && dtype != DType::F16 && dtype != DType::BF16)
    fail(ErrorKind::InvalidArgument, "oa::AutocastGuard: dtype must be f16 or bf16; found {}", to_string(dtype));
  if (enabled) {
    t_dtype = dtype;
    ++t_enabled_depth;
  } else {
    t_dtype.reset();
  }
}

AutocastGuard::~AutocastGuard() {
  if (t_dtype && --t_enabled_depth == 0) t_cache.clear();
  t_dtype = previous_;
}

namespace detail {

bool autocast_active() { return t_dtype.has_value(); }

bool autocast_inputs(AutocastPolicy policy, std::span<const Matrix> inputs, unsigned lowered_dtypes, unsigned kept_inputs, unsigned f32_inputs,
                     std::size_t group, std::vector<Matrix>& out) {
  if (policy == AutocastPolicy::Keep) return false;
  // Lower casts what carries a gradient; a detached input (a mask) and an f32
  // bias added to f32 accumulators keep their dtype.
  const auto kept = [&](const Matrix& m) {
    const std::size_t i = static_cast<std::size_t>(&m - inputs.data()) % std::max<std::size_t>(group, 1);
    return policy == AutocastPolicy::Lower && i < 32 && ((kept_inputs >> i & 1u) || ((f32_inputs >> i & 1u) && m.dtype() == DType::F32));
  };
  auto floating = [&](const Matrix& m) { return m.defined() && is_floating_point(m.dtype()) && !kept(m); };
  std::optional<DType> target;
  if (policy == AutocastPolicy::Lower) {
    target = *t_dtype;
  } else if (policy == AutocastPolicy::F32) {
    target = DType::F32;
  } else {
    for (const auto& m : inputs)
      if (floating(m)) target = target ? widest(*target, m.dtype()) : m.dtype();
    if (target && !(lowered_dtypes & (1u << static_cast<unsigned>(*target)))) target = DType::F32;
  }
  if (!target || std::ranges::none_of(inputs, [&](const Matrix& m) { return floating(m) && m.dtype() != *target; })) return false;
  out.clear();
  out.reserve(inputs.size());
  for (const auto& m : inputs) out.push_back(floating(m) && m.dtype() != *target ? cast_input(m, *target) : m);
  return true;
}

}  // namespace detail

}  // namespace oa
