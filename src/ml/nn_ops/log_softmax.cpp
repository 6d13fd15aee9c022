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
  const std::uint32_t lanes = row_lanes(L);
  ComputeDispatch d;
  d.kernel = "ml/nn/log_softmax_backward";
  d.specialization = {lanes};
  d.bindings = {BufferBinding::read(y.storage()), BufferBinding::read(row_max.storage()), BufferBinding::read(gy.storage()),
                BufferBinding::write(dx.storage())};
  d.push.u32(static_cast<std::uint32_t>(R)).u32(static_cast<std::uint32_t>(L));
  d.groups = {row_groups(R, lanes), 1, 1};
  engine.record(detail::semantic(kLogSoftmax, {&gy, &y, &row_max}, {&dx}, {}, true), {&d, 1});
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
  const std::uint32_t lanes = row_lanes(L);
  ComputeDispatch d;
  d.kernel = "ml/nn/log_softmax";
  d.specialization = {lanes};
  d.bindings = {BufferBinding::read(x.storage()), BufferBinding::write(y.storage()), BufferBinding::write(row_max.storage())};
  d.push.u32(static_cast<std::uint32_t>(R)).u32(static_cast<std::uint32_t>(L));
  d.groups = {row_groups(R, lanes), 1, 1};
  engine.record(detail::semantic(kLogSoftmax, {&x}, {&y}), {&d, 1});
  autograd::record(kLogSoftmax, {x}, {y},
                   [sy = autograd::SavedValue(y), smax = autograd::SavedValue(row_max)](const std::vector<Matrix>& gy, const std::vector<bool>&) {
                     return std::vector<Matrix>{log_softmax_backward(gy[0], sy.get(), smax.get())};
                   });
  return y;
}

}  // namespace oa::ml
