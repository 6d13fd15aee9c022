#include "oa/matrix/linalg.hpp"

#include <algorithm>

#include "matrix/gemm.hpp"
#include "matrix/op_def.hpp"
#include "oa/matrix/cast.hpp"
#include "oa/matrix/layout.hpp"
#include "oa/matrix/reduction.hpp"

namespace oa::matrix {

namespace {

using namespace detail::op_def;

// The extents of c = a * op(b) for a [..., M, K] and b [..., K, N] (or
// b [..., N, K] transposed when trans_b), validated: a missing batch prefix
// broadcasts the 2-D operand over the other's batch.
struct Product {
  std::int64_t batch = 1, m = 0, k = 0, n = 0;
  bool a_batched = false, b_batched = false;
  Shape out;
};

Product product_extents(const Shape& sa, const Shape& sb, bool trans_b, const char* name) {
  if (sa.rank() < 2 || sb.rank() < 2) fail(ErrorKind::InvalidArgument, "{}: a {} and b {} must both have rank >= 2", name, sa, sb);
  Product p;
  p.m = sa.dim(-2);
  p.k = sa.dim(-1);
  const std::int64_t kb = trans_b ? sb.dim(-1) : sb.dim(-2);
  p.n = trans_b ? sb.dim(-2) : sb.dim(-1);
  if (p.k != kb)
    fail(ErrorKind::InvalidArgument, "{}: inner extents differ: a {} has K = {} but b {} has K = {}", name, sa, p.k, sb, kb);
  const auto la = sa.dims().first(sa.rank() - 2), lb = sb.dims().first(sb.rank() - 2);
  if (!la.empty() && !lb.empty() && !std::ranges::equal(la, lb))
    fail(ErrorKind::InvalidArgument, "{}: batch extents of a {} and b {} differ", name, sa, sb);
  std::vector<std::int64_t> dims(la.size() >= lb.size() ? la.begin() : lb.begin(), la.size() >= lb.size() ? la.end() : lb.end());
  p.batch = Shape(dims).numel();
  p.a_batched = !la.empty();
  p.b_batched = !lb.empty();
  dims.push_back(p.m);
  dims.push_back(p.n);
  p.out = Shape(dims);
  p.out.numel();  // checked: throws InvalidArgument on overflow
  return p;
}

// The gradients of c = a * op(b) from gc [..., M, N]:
//   matmul:     ga = gc b^T,  gb = a^T gc
//   matmul_nt: ga = gc b,    gb = gc^T a
// A 2-D operand shared by a batch gets the sum over the batch: folded into the
// GEMM's K for b (the batch's rows are contiguous), summed by sum_to for a
// (over f32 products, rounded once to a 16-bit a's dtype). The gradients have
// the operands' dtype and go through the same GEMM.
std::vector<Matrix> product_backward(const BackwardCall<NoAttributes>& call, bool trans_b) {
  const Matrix &a = call.inputs[0], &b = call.inputs[1];
  const DType dtype = (a.defined() ? a : b).dtype();  // the operand a needed gradient reads; both have it
  const Matrix gc = cast(call.grad_outputs[0], dtype);
  const Shape &shape_a = call.input_shapes[0], &shape_b = call.input_shapes[1];
  const std::int64_t m = shape_a.dim(-2), k = shape_a.dim(-1), n = gc.shape().dim(-1);
  const auto gc_dims = gc.shape().dims();
  const std::int64_t batch = Shape(gc_dims.first(gc_dims.size() - 2)).numel();
  const bool a_batched = shape_a.rank() > 2, b_batched = shape_b.rank() > 2;
  const Engine& engine = gc.engine();
  std::vector<Matrix> g(2);
  std::vector<ComputeDispatch> ds;
  Matrix ga_batched;  // [batch, M, K] when a is shared by a batch
  if (call.needs[0]) {
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
    g[0] = detail::allocate(engine, shape_a, dtype);
    if (!a_batched && batch > 1 && b_batched) {
      ga_batched = detail::allocate(engine, Shape{batch, m, k});  // f32: summed before rounding
      p.c = {&ga_batched, 0, m * k};
    } else {
      p.c = {&g[0], 0, b_batched ? m * k : 0};
    }
    detail::append_gemm(engine, p, ds);
  }
  if (call.needs[1]) {
    // matmul: gb_b = a_b^T gc_b [K, N]; matmul_nt: gb_b = gc_b^T a_b [N, K]. Both contract over M.
    detail::GemmProblem p;
    p.trans_a = true;
    const Matrix& left = trans_b ? gc : a;
    const Matrix& right = trans_b ? a : gc;
    const std::int64_t left_cols = trans_b ? n : k, right_cols = trans_b ? k : n;
    const bool left_batched = trans_b || a_batched, right_batched = !trans_b || a_batched;
    p.m = left_cols;
    p.n = right_cols;
    g[1] = detail::allocate(engine, shape_b, dtype);
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
    detail::append_gemm(engine, p, ds);
  }
  call.record(ds, {gc, a, b}, g);  // a and b are saved only when the other operand's gradient reads them
  if (ga_batched.defined()) g[0] = cast(sum_to(ga_batched, shape_a), dtype);
  return g;
}

// c = a * op(b) as one batched GEMM; see product_extents. a and b have one
// dtype (f32, f16 or bf16), which c has.
Op<NoAttributes> product_op(const char* name, bool trans_b) {
  const detail::Lowering<NoAttributes> lower = [trans_b](const OpCall<NoAttributes>& c, const std::vector<Matrix>& out,
                                                          std::vector<ComputeDispatch>& ds) {
    const Matrix &a = c.inputs[0], &b = c.inputs[1];
    const Product e = product_extents(a.shape(), b.shape(), trans_b, c.name);
    detail::GemmProblem p;
    p.n = e.n;
    p.k = e.k;
    p.trans_b = trans_b;
    p.a = {&a, 0, e.a_batched ? e.m * e.k : 0};
    p.b = {&b, 0, e.b_batched ? e.k * e.n : 0};
    p.c = {&out[0], 0, e.m * e.n};
    if (!e.b_batched) {  // b is shared: fold a's batch into M (one larger GEMM)
      p.m = e.batch * e.m;
      p.a.batch_stride = p.c.batch_stride = 0;
    } else {
      p.batch = e.batch;
      p.m = e.m;
    }
    detail::append_gemm(c.engine, p, ds);
  };
  return Op<NoAttributes>(
      {.name = name,
       .inputs = {"a", "b"},
       .infer = [trans_b](const OpCall<NoAttributes>& c) {
         detail::require_same_dtype(c.inputs[0], "a", c.inputs[1], "b", c.name);
         return std::vector<OutputSpec>{
             {product_extents(c.inputs[0].shape(), c.inputs[1].shape(), trans_b, c.name).out, c.inputs[0].dtype()}};
       },
       .lower = {{DType::F32, lower}, {DType::F16, lower}, {DType::BF16, lower}},
       // ga reads b, gb reads a: save only what a needed gradient reads.
       .saves = [](const OpCall<NoAttributes>&, const std::vector<bool>& needs) { return Saves{{needs[1], needs[0]}, {}}; },
       .backward = [trans_b](const BackwardCall<NoAttributes>& c) { return product_backward(c, trans_b); }});
}

const auto kMatmul = product_op("oa::matrix::matmul", false);
const auto kMatmulNt = product_op("oa::matrix::matmul_nt", true);

// Appends y = x with its last two axes swapped: the forward of transpose, or
// (backward) its gradient.
void transpose_dispatches(const Matrix& x, const Matrix& y, const char* name, std::vector<ComputeDispatch>& ds) {
  const Shape& s = x.shape();
  const std::int64_t r = s.dim(-2), c = s.dim(-1);
  detail::transpose_into(x.engine(), name, x.dtype(), x.storage(), y.storage(), r * c == 0 ? 0 : s.numel() / (r * c), r, c, ds);
}

void transpose_lowering(const OpCall<NoAttributes>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
  transpose_dispatches(c.inputs[0], out[0], c.name, ds);
}

Shape swapped(const Shape& s) {
  std::vector<std::int64_t> dims = s.to_vector();
  std::swap(dims[s.rank() - 2], dims[s.rank() - 1]);
  return Shape(dims);
}

const Op<NoAttributes> kTranspose{
    {.name = "oa::matrix::transpose",
     .inputs = {"x"},
     .infer = [](const OpCall<NoAttributes>& c) {
       if (c.inputs[0].rank() < 2) fail(ErrorKind::InvalidArgument, "{}: x {} must have rank >= 2", c.name, c.inputs[0].shape());
       return std::vector<OutputSpec>{{swapped(c.inputs[0].shape()), c.inputs[0].dtype()}};
     },
     .lower = every_dtype<NoAttributes>(transpose_lowering),
     .backward = [](const BackwardCall<NoAttributes>& c) {
       const Matrix& gy = c.grad_outputs[0];
       Matrix gx = detail::allocate(gy.engine(), swapped(gy.shape()), gy.dtype());
       std::vector<ComputeDispatch> ds;
       transpose_dispatches(gy, gx, c.name, ds);
       c.record(ds, {&gy}, {&gx});
       return std::vector<Matrix>{gx};
     }}};

}  // namespace

// torch.matmul around the product op: a 1-D a is a row and a 1-D b a column,
// dropped from the result; batch extents broadcast, an operand with one batch
// item shared as a 2-D one, one that only lacks axes of 1 reshaped, any other
// expanded to the broadcast batch.
Matrix matmul(const Matrix& a, const Matrix& b) {
  const char* op = kMatmul.def.name;
  detail::require_defined(a, op, "a");
  detail::require_defined(b, op, "b");
  const Shape &sa = a.shape(), &sb = b.shape();
  if (sa.rank() == 0 || sb.rank() == 0) fail(ErrorKind::InvalidArgument, "{}: a {} and b {} must both have rank >= 1", op, sa, sb);
  const std::int64_t k = sa.dim(-1), kb = sb.rank() == 1 ? sb[0] : sb.dim(-2);
  if (k != kb) fail(ErrorKind::InvalidArgument, "{}: inner extents differ: a {} has K = {} but b {} has K = {}", op, sa, k, sb, kb);
  // Checked on the shapes given, before a 1-D operand is reshaped or an expand recorded (under autocast apply() casts).
  if (!(a.engine() == b.engine())) fail(ErrorKind::InvalidArgument, "{}: b {} lives on another engine than a {}", op, sb, sa);
  if (!detail::autocast_active()) {
    detail::require_same_dtype(a, "a", b, "b", op);
    if (!is_floating_point(a.dtype()))
      fail(ErrorKind::InvalidArgument, "{}: a {} {} must be f32, f16 or bf16", op, to_string(a.dtype()), sa);
  }
  if (sa.rank() == 1 || sb.rank() == 1) {
    const Matrix c = matmul(sa.rank() == 1 ? a.reshape({1, k}) : a, sb.rank() == 1 ? b.reshape({k, 1}) : b);
    std::vector<std::int64_t> dims = c.shape().to_vector();
    if (sb.rank() == 1) dims.pop_back();
    if (sa.rank() == 1) dims.erase(dims.end() - (sb.rank() == 1 ? 1 : 2));
    return c.reshape(dims);
  }
  const Shape la(sa.dims().first(sa.rank() - 2)), lb(sb.dims().first(sb.rank() - 2));
  if (la.rank() == 0 || lb.rank() == 0 || la == lb) return apply(kMatmul, {a, b})[0];
  const std::string batch_a = fmt::format("the batch extents of a {}", sa), batch_b = fmt::format("the batch extents of b {}", sb);
  const Shape batch = detail::broadcast_shapes(op, {{batch_a.c_str(), la}, {batch_b.c_str(), lb}});
  const auto fit = [&batch](const Matrix& x, const Shape& x_batch) {
    std::vector<std::int64_t> dims = batch.to_vector();
    dims.push_back(x.shape().dim(-2));
    dims.push_back(x.shape().dim(-1));
    if (x_batch.numel() == 1) return x.reshape(std::vector<std::int64_t>(dims.end() - 2, dims.end()));
    return x_batch.numel() == batch.numel() ? x.reshape(dims) : expand(x, dims);  // the same items, or repeated ones
  };
  const Matrix c = apply(kMatmul, {fit(a, la), fit(b, lb)})[0];
  std::vector<std::int64_t> out = batch.to_vector();
  out.push_back(sa.dim(-2));
  out.push_back(sb.dim(-1));
  return c.shape() == Shape(out) ? c : c.reshape(out);
}
Matrix matmul_nt(const Matrix& a, const Matrix& b) { return apply(kMatmulNt, {a, b})[0]; }
Matrix transpose(const Matrix& x) { return apply(kTranspose, {x})[0]; }

}  // namespace oa::matrix

namespace oa::detail {

// Declared in matrix/lowering.hpp.
void transpose_into(const Engine& engine, const char* op, DType dtype, const std::shared_ptr<runtime::Storage>& x, const std::shared_ptr<runtime::Storage>& y,
                    std::int64_t batch, std::int64_t r, std::int64_t c, std::vector<runtime::ComputeDispatch>& ds) {
  const std::int64_t rc = r * c;
  if (rc == 0 || batch == 0) return;
  const bool half = size_of(dtype) == 2;
  // Bool bytes, or 16-bit rows of odd length (a word of y would hold elements of two rows): a strided copy.
  if (size_of(dtype) == 1 || (half && r % 2 != 0)) {
    strided_copy(op, false, dtype, x, y, {batch, c, r}, {rc, 1, c}, 0, ds);
    return;
  }
  // Windows of 32-bit words; a 16-bit item of rc (even) elements starts on a whole word.
  const std::int64_t words = half ? rc / 2 : rc;
  const std::int64_t per = window_batch(engine, {{words, words}, {words, words}});
  for (std::int64_t b0 = 0; b0 < batch; b0 += per) {
    const std::int64_t q = std::min(per, batch - b0);
    const ElementWindow in = element_window(x, b0 * words, q * words, runtime::Access::Read);
    const ElementWindow out = element_window(y, b0 * words, q * words, runtime::Access::Write);
    runtime::ComputeDispatch d;
    d.kernel = kernels::matrix_transpose;
    d.specialization = {half ? 2u : 4u};
    d.bindings = {in.binding, out.binding};
    d.push.set(push::matrix_transpose{.R = shader_u32(r, "row count", op),
                                      .C = shader_u32(c, "column count", op),
                                      .x_off = half ? 2 * in.offset : in.offset,
                                      .y_off = half ? 2 * out.offset : out.offset});
    d.groups = {groups_for(c, 32), groups_for(r, half ? 64 : 32), static_cast<std::uint64_t>(q)};
    ds.push_back(std::move(d));
  }
}

}  // namespace oa::detail
