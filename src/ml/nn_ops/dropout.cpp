// dropout: validation, the counter-based mask kernel (forward and backward),
// autograd rule.
#include "ml/nn_ops/common.hpp"

namespace oa::ml {

namespace {

using namespace nn_ops;

constexpr const char* kDropout = "oa::ml::dropout";
const detail::ContractRegistration kDropoutContract{{kDropout, 1, 1, {{"p", AttributeType::Float}, {"seed", AttributeType::Int}}}};

// out = mask(seed) * x / (1 - p), recorded as `op` (the forward, or its
// backward applied to the output gradient: dropout is linear in x).
Matrix apply_mask(const Matrix& x, double p, std::uint64_t seed, bool backward) {
  const Engine& engine = x.engine();
  Matrix y = detail::allocate(engine, x.shape());
  const float scale = p < 1.0 ? static_cast<float>(1.0 / (1.0 - p)) : 0.0f;
  std::vector<ComputeDispatch> ds;
  for (auto c : detail::element_chunks(engine, x.numel())) {
    const auto off = static_cast<std::uint64_t>(c.begin) * 4, bytes = static_cast<std::uint64_t>(c.count) * 4;
    ComputeDispatch d;
    d.kernel = "ml/nn/dropout";
    d.bindings = {BufferBinding::read(x.storage(), off, bytes), BufferBinding::write(y.storage(), off, bytes)};
    d.push.u32(static_cast<std::uint32_t>(c.count)).u32(detail::shader_u32(c.begin, "element index", kDropout));
    d.push.u32(static_cast<std::uint32_t>(seed)).u32(static_cast<std::uint32_t>(seed >> 32)).f32(static_cast<float>(p)).f32(scale);
    d.groups = {detail::groups_for(c.count, 1024), 1, 1};
    ds.push_back(std::move(d));
  }
  engine.record(detail::semantic(kDropout, {&x}, {&y}, {{"p", p}, {"seed", static_cast<std::int64_t>(seed)}}, backward), ds);
  return y;
}

}  // namespace

Matrix dropout(const Matrix& x, double p, std::uint64_t seed, bool training) {
  detail::require_f32(x, kDropout, "x");
  require_range(p, 0.0, 1.0, x, kDropout, "p");
  detail::shader_u32(x.numel(), "element count of x", kDropout);
  if (!training) return x;
  Matrix y = apply_mask(x, p, seed, false);
  autograd::record(kDropout, {x}, {y}, [p, seed](const std::vector<Matrix>& gy, const std::vector<bool>&) {
    return std::vector<Matrix>{apply_mask(gy[0], p, seed, true)};
  });
  return y;
}

}  // namespace oa::ml
