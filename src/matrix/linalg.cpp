#include "oa/matrix/linalg.hpp"

#include <algorithm>

#include "matrix/gemm.hpp"
#include "matrix/lowering.hpp"

namespace oa::matrix {

namespace {

using runtime::Access;
using runtime::ComputeDispatch;

const detail::ContractRegistration kMatmul{{"oa::matrix::matmul", 2, 1, {}}};
const detail::ContractRegistration kMatMulNt{{"oa::matrix::mat_mul_nt", 2, 1, {}}};
const detail::ContractRegistration kTranspose{{"oa::matrix::transpose", 1, 1, {}}};

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
  return c;
}

}  // namespace

Matrix matmul(const Matrix& a, const Matrix& b) { return product(a, b, false, "oa::matrix::matmul"); }
Matrix mat_mul_nt(const Matrix& a, const Matrix& b) { return product(a, b, true, "oa::matrix::mat_mul_nt"); }

Matrix transpose(const Matrix& x) {
  const char* name = "oa::matrix::transpose";
  detail::require_f32(x, name, "x");
  const Shape& s = x.shape();
  if (s.rank() < 2) fail(ErrorKind::InvalidArgument, "{}: x {} must have rank >= 2", name, s);
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
  x.engine().record(detail::semantic(name, {&x}, {&y}), ds);
  return y;
}

}  // namespace oa::matrix
