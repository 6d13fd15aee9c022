// bmm, bmm_nt, bmm_tn: validation, the lowering through the shared tiled GEMM
// (src/matrix/gemm.hpp), the backward lowering of each layout, and their
// autograd rules.
#include "matrix/gemm.hpp"
#include "ml/attention/internal.hpp"

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

constexpr const char* kNames[3] = {"oa::ml::bmm", "oa::ml::bmm_nt", "oa::ml::bmm_tn"};
const bool kRegistered = [] {
  for (const char* name : kNames) register_contract({name, 2, 1, {}});
  return true;
}();

const char* name_of(BmmLayout layout) { return kNames[static_cast<int>(layout)]; }

// Shape of op(a) op(b) for the layout: [N, M, P]. Throws InvalidArgument naming
// the op and both shapes.
Shape bmm_shape(BmmLayout layout, const Matrix& a, const Matrix& b) {
  const char* name = name_of(layout);
  detail::require_f32(a, name, "a");
  detail::require_f32(b, name, "b");
  detail::require_same_engine(a, b, name);
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

// Records the gradients of op(a) op(b) that are needed as "<op> backward":
// d a reads b and grad, d b reads a and grad (an operand not read may be
// undefined). Shapes are the operands' shapes.
BmmGradients record_bmm_backward(BmmLayout layout, const Matrix& a, const Matrix& b, const Shape& a_shape, const Shape& b_shape,
                                 const Matrix& grad, bool need_a, bool need_b) {
  BmmGradients g;
  if (!need_a && !need_b) return g;
  const Engine& engine = grad.engine();
  std::vector<runtime::ComputeDispatch> dispatches;
  auto add = [&](Matrix& slot, const Shape& shape, BmmLayout l, const Matrix& x, const Matrix& y) {
    slot = detail::allocate(engine, shape);
    append(dispatches, lower_bmm(engine, l, x, y, slot));
  };
  // C = A B:     dA = G B^T, dB = A^T G.
  // C = A B^T:   dA = G B,   dB (stored [P, K]) = G^T A.
  // C = A^T B:   dA (stored [K, M]) = B G^T, dB = A G.
  switch (layout) {
    case BmmLayout::NN:
      if (need_a) add(g.a, a_shape, BmmLayout::NT, grad, b);
      if (need_b) add(g.b, b_shape, BmmLayout::TN, a, grad);
      break;
    case BmmLayout::NT:
      if (need_a) add(g.a, a_shape, BmmLayout::NN, grad, b);
      if (need_b) add(g.b, b_shape, BmmLayout::TN, grad, a);
      break;
    case BmmLayout::TN:
      if (need_a) add(g.a, a_shape, BmmLayout::NT, b, grad);
      if (need_b) add(g.b, b_shape, BmmLayout::NN, a, grad);
      break;
  }
  SemanticOp op = detail::semantic(name_of(layout), {&grad}, {}, {}, true);
  op.inputs.insert(op.inputs.begin(), {a_shape, b_shape});
  for (const Matrix* m : {&g.a, &g.b})
    if (m->defined()) op.outputs.push_back(m->shape());
  engine.record(std::move(op), dispatches);
  return g;
}

Matrix forward(BmmLayout layout, const Matrix& a, const Matrix& b) {
  const Shape shape = bmm_shape(layout, a, b);
  Matrix c = detail::allocate(a.engine(), shape);
  a.engine().record(detail::semantic(name_of(layout), {&a, &b}, {&c}), lower_bmm(a.engine(), layout, a, b, c));
  if (autograd::needs_record({&a, &b})) {
    // d a reads b, d b reads a: save only what a needed gradient reads.
    using autograd::SavedValue;
    SavedValue saved_a = requires_grad(b) ? SavedValue(a) : SavedValue();
    SavedValue saved_b = requires_grad(a) ? SavedValue(b) : SavedValue();
    autograd::record(name_of(layout), {a, b}, {c},
                     [layout, saved_a, saved_b, sa = a.shape(), sb = b.shape()](const std::vector<Matrix>& gc, const std::vector<bool>& needs) {
                       BmmGradients g = record_bmm_backward(layout, saved_a.get(), saved_b.get(), sa, sb, gc[0], needs[0], needs[1]);
                       return std::vector<Matrix>{g.a, g.b};
                     });
  }
  return c;
}

}  // namespace

Matrix bmm(const Matrix& a, const Matrix& b) { return forward(BmmLayout::NN, a, b); }
Matrix bmm_nt(const Matrix& a, const Matrix& b) { return forward(BmmLayout::NT, a, b); }
Matrix bmm_tn(const Matrix& a, const Matrix& b) { return forward(BmmLayout::TN, a, b); }

BmmGradients bmm_backward(BmmLayout layout, const Matrix& a, const Matrix& b, const Matrix& grad, bool need_a, bool need_b) {
  const char* name = name_of(layout);
  const Shape out = bmm_shape(layout, a, b);
  detail::require_f32(grad, name, "grad");
  detail::require_same_engine(a, grad, name);
  if (!(grad.shape() == out))
    fail(ErrorKind::InvalidArgument, "{} backward: grad {} must have the output's shape {} (a {}, b {})", name, grad.shape(), out,
         a.shape(), b.shape());
  return record_bmm_backward(layout, a, b, a.shape(), b.shape(), grad, need_a, need_b);
}

}  // namespace oa::ml
