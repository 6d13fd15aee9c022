#pragma once
// The batched GEMM cases that matrix/gemm_test and matrix/gemm_coopmat_test
// run through the internal lowering (src/matrix/gemm.hpp): a problem with
// offsets and batch strides, its operands' values and matrices.
#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "matrix/gemm.hpp"
#include "oa/oa.hpp"
#include "reference/dtype.hpp"
#include "support/expect.hpp"

namespace oa_test {

struct GemmCase {
  std::int64_t batch, m, n, k;
  bool trans_a, trans_b;
  float alpha, beta;
  bool bias;
  std::int64_t a_off, a_stride, b_off, b_stride, c_off, c_stride;  // stride -1: packed
  oa::DType in = oa::DType::F32;   // A and B
  oa::DType out = oa::DType::F32;  // C and, unless f32_bias, the bias
  bool f32_bias = false;
};

// The values of `v` as stored in dtype d.
inline std::vector<float> stored(const std::vector<float>& v, oa::DType d) {
  namespace ref = oa::reference;
  return d == oa::DType::F32 ? v : ref::rounded(d == oa::DType::F16 ? ref::kF16 : ref::kBF16, v);
}

// A case bound to its operands: random values as stored in their dtypes (C
// NaN at c_off when beta == 0, as C must not be read then) and the matrices
// that problem points at, shared by whoever checks the result later.
struct GemmCaseOperands {
  oa::detail::GemmProblem problem;
  std::vector<float> a, b, c0, bias;
  std::shared_ptr<const std::array<oa::Matrix, 4>> matrices;  // A, B, C, the bias
};

inline GemmCaseOperands gemm_case_operands(const GemmCase& cs, std::uint32_t seed) {
  GemmCaseOperands r;
  oa::detail::GemmProblem& p = r.problem;
  p = {.batch = cs.batch, .m = cs.m, .n = cs.n, .k = cs.k, .trans_a = cs.trans_a, .trans_b = cs.trans_b, .alpha = cs.alpha, .beta = cs.beta};
  auto stride = [](std::int64_t s, std::int64_t packed) { return s < 0 ? packed : s; };
  const std::int64_t as = stride(cs.a_stride, cs.m * cs.k), bs = stride(cs.b_stride, cs.k * cs.n),
                     cstr = stride(cs.c_stride, cs.m * cs.n);
  r.a = stored(random_values(cs.a_off + (cs.batch - 1) * as + cs.m * cs.k + 3, seed), cs.in);
  r.b = stored(random_values(cs.b_off + (cs.batch - 1) * bs + cs.k * cs.n + 5, seed + 1), cs.in);
  r.c0 = stored(random_values(cs.c_off + (cs.batch - 1) * cstr + cs.m * cs.n + 2, seed + 2), cs.out);
  if (cs.beta == 0.0f) r.c0[cs.c_off] = std::nanf("");
  const oa::DType bias_dtype = cs.f32_bias ? oa::DType::F32 : cs.out;
  r.bias = stored(random_values(cs.n, seed + 3), bias_dtype);
  auto size = [](const std::vector<float>& v) { return static_cast<std::int64_t>(v.size()); };
  r.matrices = std::make_shared<const std::array<oa::Matrix, 4>>(std::array<oa::Matrix, 4>{
      oa::Matrix::from_vector({size(r.a)}, r.a, cs.in), oa::Matrix::from_vector({size(r.b)}, r.b, cs.in),
      oa::Matrix::from_vector({size(r.c0)}, r.c0, cs.out), oa::Matrix::from_vector({cs.n}, r.bias, bias_dtype)});
  const auto& m = *r.matrices;
  p.a = {&m[0], cs.a_off, as};
  p.b = {&m[1], cs.b_off, bs};
  p.c = {&m[2], cs.c_off, cstr};
  p.bias = cs.bias ? &m[3] : nullptr;
  return r;
}

// Records lower_gemm of p as one semantic op `name` (a registered contract
// with C as its input and output) and returns the dispatches it produced.
inline std::vector<oa::runtime::ComputeDispatch> record_gemm(const oa::detail::GemmProblem& p, const char* name) {
  const oa::Engine engine = p.c.matrix->engine();
  auto ds = oa::detail::lower_gemm(engine, p);
  oa::SemanticOp op;
  op.name = name;
  op.inputs = op.outputs = {p.c.matrix->shape()};
  engine.record(std::move(op), ds);
  return ds;
}

}  // namespace oa_test
