// dropout, declared once (matrix/op_def.hpp): validation, the counter-based
// mask kernel (forward and backward).
#include "matrix/op_def.hpp"
#include "ml/nn_ops/common.hpp"

namespace oa::ml {

namespace {

using namespace nn_ops;

struct DropoutAttributes {
  double p = 0;
  std::uint64_t seed = 0;
  static constexpr auto fields = std::tuple{detail::field("p", &DropoutAttributes::p), detail::field("seed", &DropoutAttributes::seed)};
};

constexpr const char* kDropoutName = "oa::ml::dropout";

// The checks of dropout, in training or not.
void require_dropout(const Matrix& x, double p, const char* name) {
  detail::require_f32(x, name, "x");
  require_range(p, 0.0, 1.0, x, name, "p");
  detail::shader_u32(x.numel(), "element count of x", name);
}

// Appends y = mask(seed) * x / (1 - p) (ml/nn/dropout) over flat element chunks.
void mask_dispatches(const char* name, const Matrix& x, const Matrix& y, const DropoutAttributes& a, std::vector<ComputeDispatch>& ds) {
  const float scale = a.p < 1.0 ? static_cast<float>(1.0 / (1.0 - a.p)) : 0.0f;
  for (auto c : detail::element_chunks(x.engine(), x.numel())) {
    const auto off = static_cast<std::uint64_t>(c.begin) * 4, bytes = static_cast<std::uint64_t>(c.count) * 4;
    ComputeDispatch d;
    d.kernel = kernels::ml_nn_dropout;
    d.bindings = {BufferBinding::read(x.storage(), off, bytes), BufferBinding::write(y.storage(), off, bytes)};
    d.push.set(push::ml_nn_dropout{.n = static_cast<std::uint32_t>(c.count),
                                   .base = detail::shader_u32(c.begin, "element index", name),
                                   .seed_lo = static_cast<std::uint32_t>(a.seed),
                                   .seed_hi = static_cast<std::uint32_t>(a.seed >> 32),
                                   .p = static_cast<float>(a.p),
                                   .scale = scale});
    d.groups = {detail::groups_for(c.count, 1024), 1, 1};
    ds.push_back(std::move(d));
  }
}

// Dropout is linear in x: the backward applies the same mask to dy.
const detail::Op<DropoutAttributes> kDropout{
    {.name = kDropoutName,
     .inputs = {"x"},
     .infer = [](const detail::OpCall<DropoutAttributes>& c) {
       require_dropout(c.inputs[0], c.attributes.p, c.name);
       return std::vector<detail::OutputSpec>{{c.inputs[0].shape()}};
     },
     .lower = {{DType::F32,
                [](const detail::OpCall<DropoutAttributes>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
                  mask_dispatches(c.name, c.inputs[0], out[0], c.attributes, ds);
                }}},
     .backward = [](const detail::BackwardCall<DropoutAttributes>& c) {
       const Matrix& gy = c.grad_outputs[0];
       Matrix dx = detail::allocate(gy.engine(), gy.shape());
       std::vector<ComputeDispatch> ds;
       mask_dispatches(c.name, gy, dx, c.attributes, ds);
       c.record(ds, {&gy}, {&dx}, detail::attribute_values(c.attributes));
       return std::vector<Matrix>{dx};
     }}};

}  // namespace

Matrix dropout(const Matrix& x, double p, std::uint64_t seed, bool training) {
  if (training) return detail::apply(kDropout, {x}, {p, seed})[0];
  require_dropout(x, p, kDropoutName);
  return x;
}

}  // namespace oa::ml
