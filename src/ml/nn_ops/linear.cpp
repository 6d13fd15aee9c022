// linear(): validation, the GEMM-with-bias forward lowering, the backward
// lowering and the autograd rule.
#include "oa/ml/linear.hpp"

#include "matrix/gemm.hpp"
#include "matrix/lowering.hpp"
#include "oa/matrix/autograd.hpp"
#include "oa/matrix/reduction.hpp"

namespace oa::ml {

namespace {

constexpr const char* kLinear = "oa::ml::linear";
const detail::ContractRegistration kLinearContract{{kLinear, -1, 1, {}}};

// Gradients of y = x W^T + b from gy [rows, out] (x viewed as [rows, in]),
// recorded as one backward op:
//   gx = gy W [rows, in], gW = gy^T x [out, in], gb = column sums of gy.
std::vector<Matrix> linear_backward(const Matrix& gy, const Matrix& x, const Matrix& weight, const Shape& x_shape,
                                    const Shape& bias_shape, const std::vector<bool>& needs) {
  const Engine& engine = gy.engine();
  const std::int64_t out = gy.shape().dim(-1), in = x_shape.dim(-1), rows = x_shape.rows();
  std::vector<Matrix> g(3);
  std::vector<runtime::ComputeDispatch> ds;
  SemanticOp op = detail::semantic(kLinear, {&gy}, {}, {}, true);
  if (needs[0]) {
    g[0] = detail::allocate(engine, x_shape);
    detail::GemmProblem p;
    p.m = rows;
    p.n = in;
    p.k = out;
    p.a = {&gy, 0, 0};
    p.b = {&weight, 0, 0};
    p.c = {&g[0], 0, 0};
    const auto more = detail::lower_gemm(engine, p);
    ds.insert(ds.end(), more.begin(), more.end());
    op.inputs.push_back(weight.shape());
    op.outputs.push_back(x_shape);
  }
  if (needs[1]) {
    g[1] = detail::allocate(engine, Shape{out, in});
    detail::GemmProblem p;
    p.m = out;
    p.n = in;
    p.k = rows;
    p.trans_a = true;
    p.a = {&gy, 0, 0};
    p.b = {&x, 0, 0};
    p.c = {&g[1], 0, 0};
    const auto more = detail::lower_gemm(engine, p);
    ds.insert(ds.end(), more.begin(), more.end());
    op.inputs.push_back(x_shape);
    op.outputs.push_back(g[1].shape());
  }
  if (needs[0] || needs[1]) engine.record(std::move(op), ds);
  if (needs[2]) g[2] = matrix::sum_to(gy, bias_shape);
  return g;
}

}  // namespace

Matrix linear(const Matrix& x, const Matrix& weight, const Matrix& bias) {
  detail::require_f32(x, kLinear, "x");
  detail::require_f32(weight, kLinear, "weight");
  detail::require_same_engine(x, weight, kLinear);
  if (x.rank() < 1 || weight.rank() != 2)
    fail(ErrorKind::InvalidArgument, "{}: x {} must have rank >= 1 and weight {} must be [out, in]", kLinear, x.shape(),
         weight.shape());
  const std::int64_t in = weight.dim(1), out = weight.dim(0);
  if (x.dim(-1) != in)
    fail(ErrorKind::InvalidArgument, "{}: the last extent of x {} differs from in = {} of weight {}", kLinear, x.shape(), in,
         weight.shape());
  if (bias.defined()) {
    detail::require_f32(bias, kLinear, "bias");
    detail::require_same_engine(x, bias, kLinear);
    if (!(bias.shape() == Shape{out}))
      fail(ErrorKind::InvalidArgument, "{}: bias {} must be [out] = [{}] for weight {}", kLinear, bias.shape(), out, weight.shape());
  }
  std::vector<std::int64_t> dims = x.shape().to_vector();
  dims.back() = out;
  const Shape y_shape(dims);
  y_shape.numel();  // checked: throws InvalidArgument on overflow
  const std::int64_t rows = x.shape().rows();

  Matrix y = detail::allocate(x.engine(), y_shape);
  detail::GemmProblem p;
  p.m = rows;
  p.n = out;
  p.k = in;
  p.trans_b = true;
  p.a = {&x, 0, 0};
  p.b = {&weight, 0, 0};
  p.c = {&y, 0, 0};
  p.bias = bias.defined() ? &bias : nullptr;
  const auto dispatches = detail::lower_gemm(x.engine(), p);
  x.engine().record(bias.defined() ? detail::semantic(kLinear, {&x, &weight, &bias}, {&y})
                                   : detail::semantic(kLinear, {&x, &weight}, {&y}),
                    dispatches);

  if (autograd::needs_record({&x, &weight, &bias})) {
    // gx reads the weight, gW reads x: save only what a needed gradient reads.
    const autograd::SavedValue saved_x = requires_grad(weight) ? autograd::SavedValue(x) : autograd::SavedValue();
    const autograd::SavedValue saved_w = requires_grad(x) ? autograd::SavedValue(weight) : autograd::SavedValue();
    const Shape bias_shape = bias.defined() ? bias.shape() : Shape{};
    autograd::record(kLinear, {x, weight, bias}, {y},
                     [saved_x, saved_w, x_shape = x.shape(), bias_shape](const std::vector<Matrix>& gy,
                                                                         const std::vector<bool>& needs) {
                       return linear_backward(gy[0], saved_x.get(), saved_w.get(), x_shape, bias_shape, needs);
                     });
  }
  return y;
}

}  // namespace oa::ml
