// log_softmax, declared once (matrix/op_def.hpp): validation, forward and
// backward row kernels; it and softmax along any axis.
#include "matrix/axis.hpp"
#include "matrix/float_lowering.hpp"
#include "matrix/op_def.hpp"
#include "ml/nn_ops/common.hpp"
#include "oa/matrix/layout.hpp"
#include "oa/ml/attention.hpp"

namespace oa::ml {

namespace {

using namespace nn_ops;

// Rows of x [..., L] over its last axis: outputs y and the auxiliary per-row
// maximum that the backward reads. The backward: dx = dy - exp(y) * sum(dy) per row.
const detail::Op<detail::NoAttributes> kLogSoftmax{
    {.name = "oa::ml::log_softmax",
     .inputs = {"x"},
     .infer = [](const detail::OpCall<detail::NoAttributes>& c) {
       const Matrix& x = c.inputs[0];
       if (x.rank() == 0) fail(ErrorKind::InvalidArgument, "{}: x {} must have rank >= 1", c.name, x.shape());
       detail::shader_u32(x.numel(), "element count of x", c.name);
       const std::int64_t L = x.shape().dim(-1), R = L > 0 ? x.numel() / L : 0;
       return std::vector<detail::OutputSpec>{{x.shape(), x.dtype()}, {Shape{R}, DType::F32, true}};
     },
     .lower = detail::float_lowerings<detail::NoAttributes>(
         [](const detail::OpCall<detail::NoAttributes>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
           const Matrix &x = c.inputs[0], &y = out[0], &row_max = out[1];
           const std::int64_t L = x.shape().dim(-1), R = L > 0 ? x.numel() / L : 0;
           const auto rows = detail::lower_rows(c.engine, c.name, R, L, detail::RowLanes::PerColumn, [&](ComputeDispatch& d, const detail::RowChunk& r) {
             d.kernel = kernels::ml_nn_log_softmax;
             detail::append_row_items(d, L, detail::RowCache::Slots);
             d.bindings = {r.window(x.storage(), L, Access::Read), r.window(y.storage(), L, Access::Write),
                           r.window(row_max.storage(), 1, Access::Write)};
             d.push.set(push::ml_nn_log_softmax{.R = static_cast<std::uint32_t>(r.count), .L = static_cast<std::uint32_t>(L)});
           });
           ds.insert(ds.end(), rows.begin(), rows.end());
         }),
     .saves = [](const detail::OpCall<detail::NoAttributes>&, const std::vector<bool>&) { return detail::Saves{{}, {true, true}}; },
     .backward = [](const detail::BackwardCall<detail::NoAttributes>& c) -> std::vector<Matrix> {
       const Matrix &gy = c.grad_outputs[0], &y = c.outputs[0], &row_max = c.outputs[1];
       if (detail::is_half(gy.dtype())) return detail::widened_backward<detail::NoAttributes>(c, kLogSoftmax.def.backward);
       const Engine& engine = y.engine();
       const std::int64_t L = y.shape().dim(-1), R = L > 0 ? y.numel() / L : 0;
       Matrix dx = detail::allocate(engine, y.shape());
       const auto ds = detail::lower_rows(engine, c.name, R, L, detail::RowLanes::PerColumn, [&](ComputeDispatch& d, const detail::RowChunk& r) {
         d.kernel = kernels::ml_nn_log_softmax_backward;
         d.bindings = {r.window(y.storage(), L, Access::Read), r.window(row_max.storage(), 1, Access::Read),
                       r.window(gy.storage(), L, Access::Read), r.window(dx.storage(), L, Access::Write)};
         d.push.set(push::ml_nn_log_softmax_backward{.R = static_cast<std::uint32_t>(r.count),
                                                     .L = static_cast<std::uint32_t>(L)});
       });
       c.record(ds, {&gy, &y, &row_max}, {&dx});
       return std::vector<Matrix>{dx};
     }}};

// last_axis(x) along axis `dim` of x: that axis swapped with the last one
// before and after, unless it is the last one. x and dim are validated first,
// naming `op` and x's shape, so that a refused call records nothing.
Matrix along_dim(const char* op, const Matrix& x, int dim, const std::function<Matrix(const Matrix&)>& last_axis) {
  detail::require_defined(x, op, "x");
  if (!is_floating_point(x.dtype()))
    fail(ErrorKind::InvalidArgument, "{}: x must be f32, f16 or bf16; found {} {}", op, to_string(x.dtype()), x.shape());
  const std::int64_t d = detail::existing_axis(op, x.shape(), dim, "dim");
  detail::shader_u32(x.numel(), "element count of x", op);
  if (d == static_cast<std::int64_t>(x.rank()) - 1) return last_axis(x);
  const int a = static_cast<int>(d);
  return matrix::transpose(last_axis(matrix::transpose(x, a, -1)), a, -1);
}

}  // namespace

Matrix log_softmax(const Matrix& x, int dim) {
  return along_dim(kLogSoftmax.def.name, x, dim, [](const Matrix& m) { return detail::apply(kLogSoftmax, {m})[0]; });
}

Matrix softmax(const Matrix& x, int dim) {
  return along_dim("oa::ml::softmax", x, dim, [](const Matrix& m) { return softmax_scaled_masked(m, Matrix(), 1.0f); });
}

}  // namespace oa::ml
