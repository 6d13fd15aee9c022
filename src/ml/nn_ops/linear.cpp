// linear(), declared once (matrix/op_def.hpp): validation, the
// GEMM-with-bias forward lowering and the backward lowering.
#include "oa/ml/linear.hpp"

#include "matrix/gemm.hpp"
#include "matrix/op_def.hpp"
#include "oa/matrix/cast.hpp"
#include "oa/matrix/reduction.hpp"

namespace oa::ml {

namespace {

using detail::NoAttributes;

// y = x W^T + b with x [..., in], weight [out, in], bias [out] (optional).
// The backward, with x viewed as [rows, in]: gx = gy W [rows, in] and
// gW = gy^T x [out, in] as one backward op, gb = column sums of gy (sum_to).
// x, weight and y have one dtype (f32, f16 or bf16), as do their gradients;
// the bias has it too or is f32 (added to the f32 accumulators before the
// one rounding; autocast keeps an f32 bias so), and gb has the bias's dtype,
// summed in f32 (a 16-bit gb rounded once).
const detail::Lowering<NoAttributes> kLinearLowering = [](const detail::OpCall<NoAttributes>& c, const std::vector<Matrix>& out,
                                                          std::vector<runtime::ComputeDispatch>& ds) {
  const Matrix &x = c.inputs[0], &weight = c.inputs[1], &bias = c.inputs[2];
  detail::append_gemm(c.engine,
                      {.m = x.shape().rows(),
                       .n = weight.dim(0),
                       .k = weight.dim(1),
                       .trans_b = true,
                       .a = {&x, 0, 0},
                       .b = {&weight, 0, 0},
                       .c = {&out[0], 0, 0},
                       .bias = bias.defined() ? &bias : nullptr},
                      ds);
};

const detail::Op<NoAttributes> kLinear{
    {.name = "oa::ml::linear",
     .inputs = {"x", "weight", {"bias", true, false, true}},
     .infer = [](const detail::OpCall<NoAttributes>& c) {
       const Matrix &x = c.inputs[0], &weight = c.inputs[1], &bias = c.inputs[2];
       detail::require_same_dtype(x, "x", weight, "weight", c.name);
       if (x.rank() < 1 || weight.rank() != 2)
         fail(ErrorKind::InvalidArgument, "{}: x {} must have rank >= 1 and weight {} must be [out, in]", c.name, x.shape(),
              weight.shape());
       const std::int64_t in = weight.dim(1), out = weight.dim(0);
       if (x.dim(-1) != in)
         fail(ErrorKind::InvalidArgument, "{}: the last extent of x {} differs from in = {} of weight {}", c.name, x.shape(), in,
              weight.shape());
       if (bias.defined()) {
         if (bias.dtype() != DType::F32) detail::require_same_dtype(x, "x", bias, "bias", c.name);
         if (!(bias.shape() == Shape{out}))
           fail(ErrorKind::InvalidArgument, "{}: bias {} must be [out] = [{}] for weight {}", c.name, bias.shape(), out, weight.shape());
       }
       std::vector<std::int64_t> dims = x.shape().to_vector();
       dims.back() = out;
       const Shape y_shape(dims);
       y_shape.numel();  // checked: throws InvalidArgument on overflow
       return std::vector<detail::OutputSpec>{{y_shape, x.dtype()}};
     },
     .lower = {{DType::F32, kLinearLowering}, {DType::F16, kLinearLowering}, {DType::BF16, kLinearLowering}},
     // gx reads the weight, gW reads x, gb the bias's dtype: save only what a needed gradient reads.
     .saves = [](const detail::OpCall<NoAttributes>&, const std::vector<bool>& needs) {
       return detail::Saves{{needs[1], needs[0], needs[2]}, {}};
     },
     .backward = [](const detail::BackwardCall<NoAttributes>& c) {
       const Matrix &x = c.inputs[0], &weight = c.inputs[1];
       const DType dtype = (x.defined() ? x : weight.defined() ? weight : c.grad_outputs[0]).dtype();  // the inputs' dtype
       const Matrix gy = matrix::cast(c.grad_outputs[0], dtype);
       const Shape& x_shape = c.input_shapes[0];
       const Engine& engine = gy.engine();
       const std::int64_t out = gy.shape().dim(-1), in = x_shape.dim(-1), rows = x_shape.rows();
       std::vector<Matrix> g(3);
       std::vector<runtime::ComputeDispatch> ds;
       if (c.needs[0]) {  // gx [rows, in] = gy W
         g[0] = detail::allocate(engine, x_shape, dtype);
         detail::append_gemm(engine, {.m = rows, .n = in, .k = out, .a = {&gy, 0, 0}, .b = {&weight, 0, 0}, .c = {&g[0], 0, 0}}, ds);
       }
       if (c.needs[1]) {  // gW [out, in] = gy^T x
         g[1] = detail::allocate(engine, Shape{out, in}, dtype);
         detail::append_gemm(engine, {.m = out, .n = in, .k = rows, .trans_a = true, .a = {&gy, 0, 0}, .b = {&x, 0, 0}, .c = {&g[1], 0, 0}},
                             ds);
       }
       const Matrix none;
       if (c.needs[0] || c.needs[1]) c.record(ds, {&gy, c.needs[0] ? &weight : &none, c.needs[1] ? &x : &none}, {&g[0], &g[1]});
       if (c.needs[2]) {
         const DType bias_dtype = c.inputs[2].dtype();
         g[2] = matrix::sum_to(bias_dtype == dtype ? gy : matrix::cast(gy, bias_dtype), c.input_shapes[2]);
       }
       return g;
     }}};

}  // namespace

Matrix linear(const Matrix& x, const Matrix& weight, const Matrix& bias) { return detail::apply(kLinear, {x, weight, bias})[0]; }

}  // namespace oa::ml
