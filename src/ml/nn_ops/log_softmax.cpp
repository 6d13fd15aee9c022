// log_softmax: validation, forward and backward row kernels, autograd rule.
#include "ml/nn_ops/common.hpp"

namespace oa::ml {

namespace {

using namespace nn_ops;

constexpr const char* kLogSoftmax = "oa::ml::log_softmax";
const detail::ContractRegistration kLogSoftmaxContract{{kLogSoftmax, 1, 1, {}}};

// dx = dy - exp(y) * sum(dy) per row, recorded as "oa::ml::log_softmax backward".
Matrix log_softmax_backward(const Matrix& gy, const Matrix& y, const Matrix& row_max) {
  const Engine& engine = y.engine();
  const std::int64_t L = y.shape().dim(-1), R = L > 0 ? y.numel() / L : 0;
  Matrix dx = detail::allocate(engine, y.shape());
  const auto ds = detail::lower_rows(engine, kLogSoftmax, R, L, detail::RowLanes::PerColumn, [&](ComputeDispatch& d, const detail::RowChunk& c) {
    d.kernel = "ml/nn/log_softmax_backward";
    d.bindings = {c.window(y.storage(), L, Access::Read), c.window(row_max.storage(), 1, Access::Read),
                  c.window(gy.storage(), L, Access::Read), c.window(dx.storage(), L, Access::Write)};
    d.push.u32(static_cast<std::uint32_t>(c.count)).u32(static_cast<std::uint32_t>(L));
  });
  engine.record(detail::semantic(kLogSoftmax, {&gy, &y, &row_max}, {&dx}, {}, true), ds);
  return dx;
}

}  // namespace

Matrix log_softmax(const Matrix& x) {
  detail::require_f32(x, kLogSoftmax, "x");
  if (x.rank() == 0) fail(ErrorKind::InvalidArgument, "{}: x {} must have rank >= 1", kLogSoftmax, x.shape());
  detail::shader_u32(x.numel(), "element count of x", kLogSoftmax);
  const Engine& engine = x.engine();
  const std::int64_t L = x.shape().dim(-1), R = L > 0 ? x.numel() / L : 0;
  Matrix y = detail::allocate(engine, x.shape());
  Matrix row_max = detail::allocate(engine, Shape{R});
  const auto ds = detail::lower_rows(engine, kLogSoftmax, R, L, detail::RowLanes::PerColumn, [&](ComputeDispatch& d, const detail::RowChunk& c) {
    d.kernel = "ml/nn/log_softmax";
    d.bindings = {c.window(x.storage(), L, Access::Read), c.window(y.storage(), L, Access::Write),
                  c.window(row_max.storage(), 1, Access::Write)};
    d.push.u32(static_cast<std::uint32_t>(c.count)).u32(static_cast<std::uint32_t>(L));
  });
  engine.record(detail::semantic(kLogSoftmax, {&x}, {&y}), ds);
  autograd::record(kLogSoftmax, {x}, {y},
                   [sy = autograd::SavedValue(y), smax = autograd::SavedValue(row_max)](const std::vector<Matrix>& gy, const std::vector<bool>&) {
                     return std::vector<Matrix>{log_softmax_backward(gy[0], sy.get(), smax.get())};
                   });
  return y;
}

}  // namespace oa::ml
