#include "oa/matrix/linalg.hpp"

#include <algorithm>

#include "matrix/gemm.hpp"
#include "matrix/lowering.hpp"
#include "oa/matrix/autograd.hpp"
#include "oa/matrix/reduction.hpp"

namespace oa::matrix {

namespace {

using runtime::Access;
using runtime::ComputeDispatch;

const detail::ContractRegistration kMatmul{{"oa::matrix::matmul", 2, 1, {}}};
const detail::ContractRegistration kMatMulNt{{"oa::matrix::matmul_nt", 2, 1, {}}};
const detail::ContractRegistration kTranspose{{"oa::matrix::transpose", 1, 1, {}}};

// The gradients of c = a * op(b) (op(b) = b [..., K, N], or b^T for b [..., N, K]
// when trans_b) from gc [..., M, N], recorded as one backward op of `name`:
//   matmul:     ga = gc b^T,  gb = a^T gc
//   matmul_nt: ga = gc b,    gb = gc^T a
// A 2-D operand shared by a batch gets the sum over the batch: folded into the
// GEMM's K for b (the batch's rows are contiguous), summed by sum_to for a.
std::vector<Matrix> product_backward(const Matrix& gc, const Matrix& a, const Matrix& b, const Shape& shape_a,
                                     const Shape& shape_b, bool trans_b, const char* name, const std::vector<bool>& needs) {
  const std::int64_t m = shape_a.dim(-2), k = shape_a.dim(-1), n = gc.shape().dim(-1);
  const auto gc_dims = gc.shape().dims();
  const std::int64_t batch = Shape(gc_dims.first(gc_dims.size() - 2)).numel();
  const bool a_batched = shape_a.rank() > 2, b_batched = shape_b.rank() > 2;
  const Engine& engine = gc.engine();
  std::vector<Matrix> g(2);
  std::vector<ComputeDispatch> ds;
  auto add = [&ds](std::vector<ComputeDispatch> more) { ds.insert(ds.end(), more.begin(), more.end()); };
  Matrix ga_batched;  // [batch, M, K] when a is shared by a batch
  if (needs[0]) {
    // ga_b = gc_b op(b_b)^T: B-operand b, stored [K, N] (transposed) or [N, K] (as is).
    detail::GemmProblem p;
    p.n = k;
    p.k = n;
    p.trans_b = !trans_b;
    p.a = {&gc, 0, m * n};
    p.b = {&b, 0, b_batched ? k * n : 0};
    if (!b_batched) {  // fold the batch into M
      p.m = batch * m;
      p.a.batch_stride = 0;
    } else {
      p.batch = batch;
      p.m = m;
    }
    g[0] = detail::allocate(engine, shape_a);
    if (!a_batched && batch > 1 && b_batched) {
      ga_batched = detail::allocate(engine, Shape{batch, m, k});
      p.c = {&ga_batched, 0, m * k};
    } else {
      p.c = {&g[0], 0, b_batched ? m * k : 0};
    }
    add(detail::lower_gemm(engine, p));
  }
  if (needs[1]) {
    // matmul: gb_b = a_b^T gc_b [K, N]; matmul_nt: gb_b = gc_b^T a_b [N, K]. Both contract over M.
    detail::GemmProblem p;
    p.trans_a = true;
    const Matrix& left = trans_b ? gc : a;
    const Matrix& right = trans_b ? a : gc;
    const std::int64_t left_cols = trans_b ? n : k, right_cols = trans_b ? k : n;
    const bool left_batched = trans_b || a_batched, right_batched = !trans_b || a_batched;
    p.m = left_cols;
    p.n = right_cols;
    g[1] = detail::allocate(engine, shape_b);
    if (b_batched) {
      p.batch = batch;
      p.k = m;
      p.a = {&left, 0, left_batched ? m * left_cols : 0};
      p.b = {&right, 0, right_batched ? m * right_cols : 0};
      p.c = {&g[1], 0, left_cols * right_cols};
    } else {  // b shared: contract over the batch's rows too (a, gc are [batch * M, *] row-major)
      p.k = batch * m;
      p.a = {&left, 0, 0};
      p.b = {&right, 0, 0};
      p.c = {&g[1], 0, 0};
    }
    add(detail::lower_gemm(engine, p));
  }
  SemanticOp op = detail::semantic(name, {&gc}, {}, {}, true);
  for (const Matrix* x : {&a, &b})  // each is saved only when the other operand's gradient needs it
    if (x->defined()) op.inputs.push_back(x->shape());
  for (const Matrix& x : g)
    if (x.defined()) op.outputs.push_back(x.shape());
  engine.record(std::move(op), ds);
  if (ga_batched.defined()) g[0] = sum_to(ga_batched, shape_a);
  return g;
}

// a [..., M, K] times b [..., K, N] (or b [..., N, K] transposed when trans_b).
Matrix product(const Matrix& a, const Matrix& b, bool trans_b, const char* name) {
  detail::require_f32(a, name, "a");
  detail::require_f32(b, name, "b");
  detail::require_same_engine(a, b, name);
  const Shape &sa = a.shape(), &sb = b.shape();
  if (sa.rank() < 2 || sb.rank() < 2) fail(ErrorKind::InvalidArgument, "{}: a {} and b {} must both have rank >= 2", name, sa, sb);
  const std::int64_t m = sa.dim(-2), k = sa.dim(-1);
  const std::int64_t kb = trans_b ? sb.dim(-1) : sb.dim(-2), n = trans_b ? sb.dim(-2) : sb.dim(-1);
  if (k != kb)
    fail(ErrorKind::InvalidArgument, "{}: inner extents differ: a {} has K = {} but b {} has K = {}", name, sa, k, sb, kb);
  const auto la = sa.dims().first(sa.rank() - 2), lb = sb.dims().first(sb.rank() - 2);
  if (!la.empty() && !lb.empty() && !std::ranges::equal(la, lb))
    fail(ErrorKind::InvalidArgument, "{}: batch extents of a {} and b {} differ", name, sa, sb);
  std::vector<std::int64_t> dims(la.size() >= lb.size() ? la.begin() : lb.begin(), la.size() >= lb.size() ? la.end() : lb.end());
  const std::int64_t batch = Shape(dims).numel();
  dims.push_back(m);
  dims.push_back(n);
  const Shape out_shape(dims);
  out_shape.numel();  // checked: throws InvalidArgument on overflow

  Matrix c = detail::allocate(a.engine(), out_shape);
  detail::GemmProblem p;
  p.n = n;
  p.k = k;
  p.trans_b = trans_b;
  p.a = {&a, 0, la.empty() ? 0 : m * k};
  p.b = {&b, 0, lb.empty() ? 0 : k * n};
  p.c = {&c, 0, m * n};
  if (lb.empty()) {  // b is shared: fold a's batch into M (one larger GEMM)
    p.m = batch * m;
    p.a.batch_stride = p.c.batch_stride = 0;
  } else {
    p.batch = batch;
    p.m = m;
  }
  const auto dispatches = detail::lower_gemm(a.engine(), p);
  a.engine().record(detail::semantic(name, {&a, &b}, {&c}), dispatches);
  if (autograd::needs_record({&a, &b})) {
    // ga reads b, gb reads a: save only what a needed gradient reads.
    autograd::SavedValue saved_a = requires_grad(b) ? autograd::SavedValue(a) : autograd::SavedValue();
    autograd::SavedValue saved_b = requires_grad(a) ? autograd::SavedValue(b) : autograd::SavedValue();
    autograd::record(name, {a, b}, {c},
                     [saved_a, saved_b, sa, sb, trans_b, name](const std::vector<Matrix>& gc, const std::vector<bool>& needs) {
                       return product_backward(gc[0], saved_a.get(), saved_b.get(), sa, sb, trans_b, name, needs);
                     });
  }
  return c;
}

}  // namespace

Matrix matmul(const Matrix& a, const Matrix& b) { return product(a, b, false, "oa::matrix::matmul"); }
Matrix matmul_nt(const Matrix& a, const Matrix& b) { return product(a, b, true, "oa::matrix::matmul_nt"); }

namespace {

// Records y = x with its last two axes swapped: the forward of transpose, or
// (backward) its gradient.
Matrix transpose_lowering(const Matrix& x, bool backward) {
  const char* name = "oa::matrix::transpose";
  const Shape& s = x.shape();
  std::vector<std::int64_t> dims = s.to_vector();
  std::swap(dims[s.rank() - 2], dims[s.rank() - 1]);
  const std::int64_t r = s.dim(-2), c = s.dim(-1), rc = r * c;
  Matrix y = detail::allocate(x.engine(), Shape(dims));
  std::vector<ComputeDispatch> ds;
  if (rc > 0) {
    const std::int64_t batch = s.numel() / rc;
    const std::int64_t per = detail::window_batch(x.engine(), {{rc, rc}, {rc, rc}});
    for (std::int64_t b0 = 0; b0 < batch; b0 += per) {
      const std::int64_t q = std::min(per, batch - b0);
      const auto in = detail::element_window(x.storage(), b0 * rc, q * rc, Access::Read);
      const auto out = detail::element_window(y.storage(), b0 * rc, q * rc, Access::Write);
      ComputeDispatch d;
      d.kernel = "matrix/transpose";
      d.bindings = {in.binding, out.binding};
      d.push.u32(detail::shader_u32(r, "row count", name)).u32(detail::shader_u32(c, "column count", name));
      d.push.u32(in.offset).u32(out.offset);
      d.groups = {detail::groups_for(c, 32), detail::groups_for(r, 32), static_cast<std::uint64_t>(q)};
      ds.push_back(std::move(d));
    }
  }
  x.engine().record(detail::semantic(name, {&x}, {&y}, {}, backward), ds);
  return y;
}

}  // namespace

Matrix transpose(const Matrix& x) {
  const char* name = "oa::matrix::transpose";
  detail::require_f32(x, name, "x");
  if (x.rank() < 2) fail(ErrorKind::InvalidArgument, "{}: x {} must have rank >= 2", name, x.shape());
  Matrix y = transpose_lowering(x, false);
  autograd::record(name, {x}, {y}, [](const std::vector<Matrix>& gy, const std::vector<bool>&) {
    return std::vector<Matrix>{transpose_lowering(gy[0], true)};
  });
  return y;
}

}  // namespace oa::matrix
