// Op table cases of the matrix products (oa/matrix/linalg.hpp, the batched
// products of oa/ml/attention.hpp and oa::ml::linear), in f32 with gradients
// and in f16 / bf16 (forward only).
#include <functional>

#include "ops/op_table.hpp"
#include "reference/attention.hpp"
#include "reference/linalg.hpp"
#include "reference/linear.hpp"

namespace oa::test {
namespace {

// 16-bit results are rounded once: half an ulp of 2^-11 (f16) or 2^-8 (bf16).
GradTolerance tolerance_of(DType dtype) {
  GradTolerance t;
  if (dtype == DType::F16) t.forward_rtol = t.forward_atol = 2e-3;
  if (dtype == DType::BF16) t.forward_rtol = t.forward_atol = 1e-2;
  return t;
}

std::string label_of(const char* label, DType dtype) { return std::string(label) + "_" + std::string(oa::to_string(dtype)); }

GradInput operand(const Shape& shape, std::uint64_t seed, DType dtype) {
  GradInput in = random_input(shape, seed, -1, 1, dtype == DType::F32);
  in.dtype = dtype;
  return in;
}

// `batch` copies of x (a 2-D operand shared by every batch item).
std::vector<double> repeated(const std::vector<double>& x, std::int64_t batch) {
  std::vector<double> y;
  for (std::int64_t b = 0; b < batch; ++b) y.insert(y.end(), x.begin(), x.end());
  return y;
}

// A product a x op(b) over a plain, a batched and a broadcast (2-D b) case,
// each with a ragged tile edge; `nt`: b is [..., N, K].
std::vector<OpCase> products(const std::function<Matrix(const Matrix&, const Matrix&)>& f, bool nt, bool broadcast) {
  struct Dims {
    const char* label;
    std::int64_t batch, M, N, K;
    bool shared_b;
  };
  std::vector<Dims> dims = {{"plain", 0, 5, 7, 9, false}, {"batched", 2, 3, 17, 4, false}};
  if (broadcast) dims.push_back({"shared_b", 2, 3, 5, 6, true});
  std::vector<OpCase> cases;
  std::uint64_t seed = 81;
  for (DType dtype : {DType::F32, DType::F16, DType::BF16})
    for (const auto& d : dims) {
      const std::int64_t n = std::max<std::int64_t>(d.batch, 1);
      Shape a = d.batch ? Shape{d.batch, d.M, d.K} : Shape{d.M, d.K};
      Shape b = nt ? Shape{d.N, d.K} : Shape{d.K, d.N};
      if (d.batch && !d.shared_b) b = nt ? Shape{d.batch, d.N, d.K} : Shape{d.batch, d.K, d.N};
      cases.push_back({label_of(d.label, dtype),
                       {operand(a, seed, dtype), operand(b, seed + 1, dtype)},
                       [f](const Inputs& x) { return f(x[0], x[1]); },
                       [d, n, nt](const RefInputs& x) {
                         const std::vector<double> b = d.shared_b ? repeated(x[1], n) : x[1];
                         return oa::reference::bmm(x[0], b, n, d.M, d.K, d.N, false, nt);
                       },
                       tolerance_of(dtype)});
      seed += 2;
    }
  return cases;
}

OA_OP_CASES(matmul, "oa::matrix::matmul") { return products(oa::matrix::matmul, false, true); }
OA_OP_CASES(matmul_nt, "oa::matrix::matmul_nt") { return products(oa::matrix::matmul_nt, true, true); }

OA_OP_CASES(transpose, "oa::matrix::transpose") {
  std::vector<OpCase> cases;
  std::uint64_t seed = 91;
  for (const Shape& shape : {Shape{1, 1}, Shape{3, 5}, Shape{2, 3, 4}, Shape{2, 17, 33}})
    cases.push_back({label("x", shape.numel()), {random_input(shape, seed++)},
                     [](const Inputs& x) { return oa::matrix::transpose(x[0]); },
                     [shape](const RefInputs& x) {
                       const std::int64_t R = shape[shape.rank() - 2], C = shape.cols();
                       return oa::reference::transpose(x[0], shape.numel() / (R * C), R, C);
                     }});
  return with_dtypes("oa::matrix::transpose", cases);
}

// bmm a [n, m, k] b [n, k, p] in the layouts NN, NT (b [n, p, k]) and TN (a [n, k, m]).
std::vector<OpCase> batched(const std::function<Matrix(const Matrix&, const Matrix&)>& f, bool ta, bool tb) {
  std::vector<OpCase> cases;
  std::uint64_t seed = 101;
  const std::int64_t n = 3, m = 5, k = 6, p = 7;
  for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
    const Shape a = ta ? Shape{n, k, m} : Shape{n, m, k}, b = tb ? Shape{n, p, k} : Shape{n, k, p};
    cases.push_back({label_of("n3", dtype),
                     {operand(a, seed, dtype), operand(b, seed + 1, dtype)},
                     [f](const Inputs& x) { return f(x[0], x[1]); },
                     [ta, tb](const RefInputs& x) { return oa::reference::bmm(x[0], x[1], n, m, k, p, ta, tb); },
                     tolerance_of(dtype)});
    seed += 2;
  }
  return cases;
}

OA_OP_CASES(bmm, "oa::ml::bmm") { return batched(oa::ml::bmm, false, false); }
OA_OP_CASES(bmm_nt, "oa::ml::bmm_nt") { return batched(oa::ml::bmm_nt, false, true); }
OA_OP_CASES(bmm_tn, "oa::ml::bmm_tn") { return batched(oa::ml::bmm_tn, true, false); }

// linear x [rows, in] W [out, in] (+ b [out]), also with x [2, 3, in].
OA_OP_CASES(linear, "oa::ml::linear") {
  std::vector<OpCase> cases;
  std::uint64_t seed = 111;
  const std::int64_t in = 6, out = 5;
  for (DType dtype : {DType::F32, DType::F16, DType::BF16})
    for (bool bias : {true, false})
      for (const Shape& xs : {Shape{4, in}, Shape{2, 3, in}}) {
        std::vector<GradInput> inputs = {operand(xs, seed, dtype), operand({out, in}, seed + 1, dtype)};
        if (bias) inputs.push_back(operand({out}, seed + 2, dtype));
        const std::int64_t rows = xs.numel() / in;
        cases.push_back({label_of(bias ? "bias" : "no_bias", dtype) + label("_x", static_cast<std::int64_t>(xs.rank())), inputs,
                         [bias](const Inputs& x) { return oa::ml::linear(x[0], x[1], bias ? x[2] : Matrix()); },
                         [bias, rows](const RefInputs& x) {
                           return oa::reference::linear(x[0], x[1], bias ? x[2] : std::vector<double>{}, rows, in, out);
                         },
                         tolerance_of(dtype)});
        seed += 3;
      }
  return cases;
}

}  // namespace
}  // namespace oa::test
