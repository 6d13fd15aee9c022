// bmm, bmm_nt, bmm_tn: one OpDef each (matrix/op_def.hpp) with validation,
// the lowering through the shared tiled GEMM (src/matrix/gemm.hpp) and the
// backward of each layout.
#include "matrix/gemm.hpp"
#include "ml/attention/internal.hpp"
#include "oa/matrix/cast.hpp"

namespace oa::ml {

namespace attention_detail {

std::vector<runtime::ComputeDispatch> lower_bmm(const Engine& engine, BmmLayout layout, const Matrix& a, const Matrix& b,
                                                const Matrix& c, float beta) {
  detail::GemmProblem p;
  const auto dims = c.shape().dims();
  p.batch = Shape(dims.first(dims.size() - 2)).numel();
  p.m = c.dim(-2);
  p.n = c.dim(-1);
  p.k = layout == BmmLayout::TN ? a.dim(-2) : a.dim(-1);
  p.trans_a = layout == BmmLayout::TN;
  p.trans_b = layout == BmmLayout::NT;
  p.beta = beta;
  p.a = {&a, 0, p.m * p.k};
  p.b = {&b, 0, p.k * p.n};
  p.c = {&c, 0, p.m * p.n};
  return detail::lower_gemm(engine, p);
}

}  // namespace attention_detail

namespace {

using namespace attention_detail;
using detail::NoAttributes;

constexpr const char* kNames[3] = {"oa::ml::bmm", "oa::ml::bmm_nt", "oa::ml::bmm_tn"};

const char* name_of(BmmLayout layout) { return kNames[static_cast<int>(layout)]; }

// Shape of op(a) op(b) for the layout: [N, M, P]. Throws InvalidArgument naming
// the op and both shapes.
Shape bmm_shape(BmmLayout layout, const Matrix& a, const Matrix& b) {
  const char* name = name_of(layout);
  detail::require_same_dtype(a, "a", b, "b", name);
  detail::require_same_engine(a, "a", b, "b", name);
  static constexpr const char* kForms[3] = {"a [N, M, K] and b [N, K, P]", "a [N, M, K] and b [N, P, K]",
                                            "a [N, K, M] and b [N, K, P]"};
  const char* form = kForms[static_cast<int>(layout)];
  if (a.rank() != 3 || b.rank() != 3)
    fail(ErrorKind::InvalidArgument, "{}: needs {}; found a {} and b {}", name, form, a.shape(), b.shape());
  const std::int64_t n = a.dim(0);
  const std::int64_t m = layout == BmmLayout::TN ? a.dim(2) : a.dim(1);
  const std::int64_t k = layout == BmmLayout::TN ? a.dim(1) : a.dim(2);
  const std::int64_t kb = layout == BmmLayout::NT ? b.dim(2) : b.dim(1);
  const std::int64_t p = layout == BmmLayout::NT ? b.dim(1) : b.dim(2);
  if (b.dim(0) != n || kb != k)
    fail(ErrorKind::InvalidArgument, "{}: needs {}; batch or inner extents differ between a {} and b {}", name, form, a.shape(),
         b.shape());
  const Shape out{n, m, p};
  detail::shader_u32(out.numel(), "output element count", name);
  return out;
}

// The gradients of op(a) op(b) that are needed, recorded as "<op> backward":
// d a reads b and grad, d b reads a and grad (an operand not read is
// undefined). They have the operands' dtype and go through the same GEMM.
std::vector<Matrix> bmm_gradients(BmmLayout layout, const BackwardCall<NoAttributes>& c) {
  const Matrix &a = c.inputs[0], &b = c.inputs[1];
  std::vector<Matrix> g(2);
  if (!c.needs[0] && !c.needs[1]) return g;
  const DType dtype = (a.defined() ? a : b).dtype();  // the operand a needed gradient reads; both have it
  const Matrix grad = matrix::cast(c.grad_outputs[0], dtype);
  const Engine& engine = grad.engine();
  std::vector<runtime::ComputeDispatch> dispatches;
  auto add = [&](std::size_t slot, BmmLayout l, const Matrix& x, const Matrix& y) {
    if (!c.needs[slot]) return;
    g[slot] = detail::allocate(engine, c.input_shapes[slot], dtype);
    append(dispatches, lower_bmm(engine, l, x, y, g[slot]));
  };
  // C = A B:     dA = G B^T, dB = A^T G.
  // C = A B^T:   dA = G B,   dB (stored [P, K]) = G^T A.
  // C = A^T B:   dA (stored [K, M]) = B G^T, dB = A G.
  switch (layout) {
    case BmmLayout::NN:
      add(0, BmmLayout::NT, grad, b);
      add(1, BmmLayout::TN, a, grad);
      break;
    case BmmLayout::NT:
      add(0, BmmLayout::NN, grad, b);
      add(1, BmmLayout::TN, grad, a);
      break;
    case BmmLayout::TN:
      add(0, BmmLayout::NT, b, grad);
      add(1, BmmLayout::NN, a, grad);
      break;
  }
  c.record(dispatches, {&a, &b, &grad}, {&g[0], &g[1]});
  return g;
}

// One layout's op: c = op(a) op(b) through the shared GEMM lowering; a, b and
// c have one dtype (f32, f16 or bf16).
Op<NoAttributes> bmm_op(BmmLayout layout) {
  const detail::Lowering<NoAttributes> lower = [layout](const OpCall<NoAttributes>& c, const std::vector<Matrix>& out,
                                                         std::vector<runtime::ComputeDispatch>& ds) {
    append(ds, lower_bmm(c.engine, layout, c.inputs[0], c.inputs[1], out[0]));
  };
  return Op<NoAttributes>({.name = name_of(layout),
                           .inputs = {"a", "b"},
                           .infer = [layout](const OpCall<NoAttributes>& c) {
                             return std::vector<OutputSpec>{{bmm_shape(layout, c.inputs[0], c.inputs[1]), c.inputs[0].dtype()}};
                           },
                           .lower = {{DType::F32, lower}, {DType::F16, lower}, {DType::BF16, lower}},
                           // d a reads b, d b reads a: save only what a needed gradient reads.
                           .saves = [](const OpCall<NoAttributes>&, const std::vector<bool>& needs) {
                             return Saves{{needs[1], needs[0]}, {}};
                           },
                           .backward = [layout](const BackwardCall<NoAttributes>& c) { return bmm_gradients(layout, c); }});
}

const Op<NoAttributes> kBmm[3] = {bmm_op(BmmLayout::NN), bmm_op(BmmLayout::NT), bmm_op(BmmLayout::TN)};

const Op<NoAttributes>& op_of(BmmLayout layout) { return kBmm[static_cast<int>(layout)]; }

}  // namespace

Matrix bmm(const Matrix& a, const Matrix& b) { return detail::apply(op_of(BmmLayout::NN), {a, b})[0]; }
Matrix bmm_nt(const Matrix& a, const Matrix& b) { return detail::apply(op_of(BmmLayout::NT), {a, b})[0]; }
Matrix bmm_tn(const Matrix& a, const Matrix& b) { return detail::apply(op_of(BmmLayout::TN), {a, b})[0]; }

BmmGradients bmm_backward(BmmLayout layout, const Matrix& a, const Matrix& b, const Matrix& grad, bool need_a, bool need_b) {
  const char* name = name_of(layout);
  const Shape out = bmm_shape(layout, a, b);
  detail::require_same_dtype(a, "a", grad, "grad", name);
  detail::require_same_engine(a, "a", grad, "grad", name);
  if (!(grad.shape() == out))
    fail(ErrorKind::InvalidArgument, "{} backward: grad {} must have the output's shape {} (a {}, b {})", name, grad.shape(), out,
         a.shape(), b.shape());
  const auto g = detail::apply_backward(op_of(layout), {a, b}, {}, {grad}, {need_a, need_b});
  return {g[0], g[1]};
}

}  // namespace oa::ml
