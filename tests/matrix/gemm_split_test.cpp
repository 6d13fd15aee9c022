// The f32 GEMM of Engine::set_float32_matmul_precision(High): split f16
// operands, three f16 products and the scaling epilogue
// (src/matrix/gemm_split.cpp). The split runs on every device here: the tests
// force gemm.f32_high's split-f16-always (without cooperative matrices its f16
// products take the 16-bit kernels with f32 arithmetic). Each case runs the
// plain FP32 path, the split and f16 operands (the f32 values rounded) against
// the f64 reference of the f32 values; errors are relative to the magnitude of
// the terms (sum |a b|, |beta c|, |bias|).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string_view>
#include <vector>

#include "matrix/gemm.hpp"
#include "oa/oa.hpp"
#include "reference/linalg.hpp"
#include "support/expect.hpp"
#include "support/forced_tuning.hpp"
#include "support/gemm_case.hpp"

namespace {

using oa::DType;
using oa::Matrix;
using oa::MatmulPrecision;
using oa_test::GemmCase;
namespace kernels = oa::kernels;

const bool kTestGemmSplit = [] {
  oa::register_contract({"test::gemm_split", -1, 1, {}});
  return true;
}();

// The default engine's f32 matmul precision while it lives.
class Precision {
 public:
  explicit Precision(MatmulPrecision p) : saved_(engine().float32_matmul_precision()) { engine().set_float32_matmul_precision(p); }
  ~Precision() { engine().set_float32_matmul_precision(saved_); }
  Precision(const Precision&) = delete;
  Precision& operator=(const Precision&) = delete;
  static oa::Engine engine() { return oa::Engine::default_engine(); }

 private:
  MatmulPrecision saved_;
};

// The operands of a case as f32 values (A, B, C before, bias).
struct Values {
  std::vector<float> a, b, c0, bias;
};

std::int64_t packed(std::int64_t stride, std::int64_t extent) { return stride < 0 ? extent : stride; }

// The result of one run: C after the GEMM and the kernels it dispatched.
struct GemmRun {
  std::vector<float> c;
  std::vector<std::string_view> kernels;
};

// Runs the GEMM of `cs` on `v` with A and B stored as `in` (f32, or f16 rounded
// to nearest) under the engine's settings now.
GemmRun run(const GemmCase& cs, const Values& v, DType in) {
  auto matrix = [](const std::vector<float>& x, DType d) {
    return Matrix::from_vector({static_cast<std::int64_t>(x.size())}, oa_test::stored(x, d), d);
  };
  const Matrix a = matrix(v.a, in), b = matrix(v.b, in), c = matrix(v.c0, DType::F32), bias = matrix(v.bias, DType::F32);
  const oa::detail::GemmProblem p{.batch = cs.batch, .m = cs.m, .n = cs.n, .k = cs.k, .trans_a = cs.trans_a, .trans_b = cs.trans_b,
                                  .alpha = cs.alpha, .beta = cs.beta,
                                  .a = {&a, cs.a_off, packed(cs.a_stride, cs.m * cs.k)},
                                  .b = {&b, cs.b_off, packed(cs.b_stride, cs.k * cs.n)},
                                  .c = {&c, cs.c_off, packed(cs.c_stride, cs.m * cs.n)},
                                  .bias = cs.bias ? &bias : nullptr};
  GemmRun r;
  for (const auto& d : oa_test::record_gemm(p, "test::gemm_split")) r.kernels.push_back(d.kernel);
  r.c = c.to_vector();
  return r;
}

oa::reference::GemmResult reference(const GemmCase& cs, const Values& v) {
  return oa::reference::gemm(cs.batch, cs.m, cs.n, cs.k, cs.trans_a, cs.trans_b, cs.alpha, cs.beta,
                             {&v.a, cs.a_off, packed(cs.a_stride, cs.m * cs.k)}, {&v.b, cs.b_off, packed(cs.b_stride, cs.k * cs.n)},
                             v.c0, cs.c_off, packed(cs.c_stride, cs.m * cs.n), cs.bias ? &v.bias : nullptr);
}

// The largest |got - want| / magnitude; inf where a non-finite or an element
// of magnitude 0 (a zero row, C outside every item) differs at all.
double max_error(const std::vector<float>& got, const oa::reference::GemmResult& ref) {
  double worst = 0.0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    const double diff = std::abs(static_cast<double>(got[i]) - ref.value[i]);
    if (diff == 0.0) continue;
    worst = std::max(worst, std::isfinite(diff) && ref.magnitude[i] > 0.0 ? diff / ref.magnitude[i]
                                                                            : std::numeric_limits<double>::infinity());
  }
  return worst;
}

// Errors of the three paths on one case.
struct Errors {
  double fp32, split, f16;
};

Errors errors(const GemmCase& cs, const Values& v) {
  const auto ref = reference(cs, v);
  Errors e{};
  e.fp32 = max_error(run(cs, v, DType::F32).c, ref);
  e.f16 = max_error(run(cs, v, DType::F16).c, ref);
  const Precision high(MatmulPrecision::High);
  const oa_test::Forced split("gemm.f32_high", "split-f16-always");
  const GemmRun r = run(cs, v, DType::F32);
  EXPECT_EQ(std::count(r.kernels.begin(), r.kernels.end(), kernels::matrix_gemm_split), cs.batch > 0 ? 2 : 0);
  e.split = max_error(r.c, ref);
  return e;
}

Values case_values(const GemmCase& cs, std::uint32_t seed) {
  const auto ops = oa_test::gemm_case_operands(cs, seed);
  return {ops.a, ops.b, ops.c0, ops.bias};
}

// The split's error stays within a small factor of FP32's (both against f64,
// FP32's at least one f32 rounding) and far below f16 operands'.
void expect_fp32_accuracy(const GemmCase& cs, const Errors& e, const char* what) {
  std::printf("  %s batch %lld M %lld N %lld K %lld trans %d%d: max error fp32 %.3g split %.3g f16 %.3g\n", what,
              static_cast<long long>(cs.batch), static_cast<long long>(cs.m), static_cast<long long>(cs.n),
              static_cast<long long>(cs.k), cs.trans_a, cs.trans_b, e.fp32, e.split, e.f16);
  EXPECT_LE(e.split, 4.0 * std::max(e.fp32, 0x1p-24)) << what;
  EXPECT_LE(100.0 * e.split, e.f16) << what;
}

TEST(MatrixGemmSplit, FP32AccuracyEveryLayoutTailsBatchesAlphaBetaBias) {
  std::vector<GemmCase> cases{
      {1, 37, 45, 70, false, false, 1.0f, 0.0f, false, 0, -1, 0, -1, 0, -1},
      {1, 8, 16, 8, false, false, 1.0f, 0.0f, false, 0, -1, 0, -1, 0, -1},
      {1, 50, 60, 1030, false, false, 1.0f, 0.0f, false, 0, -1, 0, -1, 0, -1},
      {3, 17, 70, 9, false, true, -1.5f, 1.0f, true, 0, -1, 2, 0, 0, -1},    // B shared by the batch
      {2, 1, 33, 300, true, false, 1.0f, 0.0f, false, 1, 0, 0, -1, 3, -1},   // A shared, one row
      {1, 200, 1, 64, false, true, 2.0f, 0.0f, true, 0, -1, 0, -1, 0, -1},   // one column
  };
  for (bool ta : {false, true})
    for (bool tb : {false, true}) cases.push_back({2, 67, 29, 131, ta, tb, 0.75f, 0.5f, true, 3, 67 * 131 + 5, 5, -1, 1, 67 * 29 + 2});
  std::uint32_t seed = 100;
  for (const GemmCase& cs : cases) expect_fp32_accuracy(cs, errors(cs, case_values(cs, seed += 10)), "uniform [-1, 1)");
}

// Magnitudes 10^u, u uniform in [-6, 6] within each matrix, random signs:
// the per-row and per-column scales keep the terms that matter in F16's
// range (plain f16 operands overflow at 65520 and underflow below 2^-24).
TEST(MatrixGemmSplit, WideMagnitudesKeepFP32Accuracy) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const GemmCase cs{2, 45, 38, 150, ta, tb, 1.0f, 0.0f, false, 0, -1, 0, -1, 0, -1};
      Values v = case_values(cs, 7);
      std::mt19937 gen(11);
      std::uniform_real_distribution<float> u(-6.0f, 6.0f);
      for (auto* x : {&v.a, &v.b})
        for (float& e : *x) e = std::copysign(std::pow(10.0f, u(gen)), e);
      expect_fp32_accuracy(cs, errors(cs, v), "magnitudes 1e-6..1e6");
      // Uniform values, each stored row of A (K or M elements) scaled by 10^-6 .. 10^6.
      v.a = case_values(cs, 7).a;
      const std::int64_t row = ta ? cs.m : cs.k;
      for (std::size_t i = 0; i < v.a.size(); ++i) v.a[i] *= std::pow(10.0f, static_cast<float>(static_cast<std::int64_t>(i) / row % 13) - 6.0f);
      expect_fp32_accuracy(cs, errors(cs, v), "stored rows of A 1e-6..1e6");
    }
}

// Zero rows and columns give exact zeros; inf and NaN propagate to the outputs
// of their row or column as FP32's do (NaN where FP32 gives NaN, inf of the
// same sign), and the other outputs keep FP32 accuracy.
TEST(MatrixGemmSplit, ZerosInfAndNaNAsFP32) {
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const GemmCase cs{2, 21, 19, 37, ta, tb, 1.0f, 0.0f, true, 0, -1, 0, -1, 0, -1};
      Values v = case_values(cs, 3);
      const float inf = std::numeric_limits<float>::infinity();
      auto a_at = [&](std::int64_t item, std::int64_t m, std::int64_t k) -> float& {
        return v.a[item * cs.m * cs.k + (ta ? k * cs.m + m : m * cs.k + k)];
      };
      auto b_at = [&](std::int64_t item, std::int64_t k, std::int64_t n) -> float& {
        return v.b[item * cs.k * cs.n + (tb ? n * cs.k + k : k * cs.n + n)];
      };
      for (std::int64_t k = 0; k < cs.k; ++k) {
        a_at(0, 2, k) = 0.0f;  // a zero row
        b_at(1, k, 4) = 0.0f;  // a zero column
      }
      a_at(0, 5, 7) = inf;                  // inf * b: +-inf, NaN against the zero column
      a_at(1, 6, 0) = std::nanf("");
      b_at(0, 3, 8) = -inf;
      b_at(1, 9, 10) = inf;
      a_at(1, 11, 9) = -inf;               // meets b's inf in column 10: -inf; NaN where both signs meet
      v.bias[4] = 0.0f;
      const auto ref = reference(cs, v);
      const GemmRun fp32 = run(cs, v, DType::F32);
      const Precision high(MatmulPrecision::High);
      const oa_test::Forced split("gemm.f32_high", "split-f16-always");
      const GemmRun got = run(cs, v, DType::F32);
      double worst = 0.0;
      for (std::size_t i = 0; i < got.c.size(); ++i) {
        const double want = ref.value[i];
        if (!std::isfinite(want)) {
          EXPECT_EQ(std::isnan(got.c[i]), std::isnan(want)) << i << " got " << got.c[i] << " want " << want;
          if (std::isinf(want)) {
            EXPECT_EQ(got.c[i], want) << i;
          }
          EXPECT_EQ(std::isnan(got.c[i]), std::isnan(fp32.c[i])) << i;
        } else if (ref.magnitude[i] == 0.0) {  // zero rows and columns, and C outside every item
          EXPECT_EQ(got.c[i], want) << i;
        } else {
          worst = std::max(worst, std::abs(got.c[i] - want) / ref.magnitude[i]);
        }
      }
      EXPECT_LE(worst, 4.0 * std::max(max_error(fp32.c, ref), 0x1p-24));
    }
}

// Highest is the FP32 path as before (the same kernels and bits as High with
// gemm.f32_high at fp32), and High on a device without f16 cooperative
// matrices keeps it too unless a test forces the split.
TEST(MatrixGemmSplit, HighestAndFallbackAreThePlainFP32Path) {
  for (const GemmCase& cs : {GemmCase{1, 37, 45, 70, false, true, 1.0f, 0.0f, true, 0, -1, 0, -1, 0, -1},
                             GemmCase{2, 9, 300, 64, true, false, 0.5f, 1.0f, false, 0, -1, 0, -1, 0, -1}}) {
    const Values v = case_values(cs, 21);
    ASSERT_EQ(Precision::engine().float32_matmul_precision(), MatmulPrecision::Highest);
    const GemmRun highest = run(cs, v, DType::F32);
    EXPECT_EQ(std::count(highest.kernels.begin(), highest.kernels.end(), kernels::matrix_gemm_split), 0);
    const Precision high(MatmulPrecision::High);
    EXPECT_EQ(Precision::engine().float32_matmul_precision(), MatmulPrecision::High);
    {
      const oa_test::Forced fp32("gemm.f32_high", "fp32");
      const GemmRun r = run(cs, v, DType::F32);
      EXPECT_EQ(r.kernels, highest.kernels);
      EXPECT_EQ(0, std::memcmp(r.c.data(), highest.c.data(), r.c.size() * sizeof(float)));
    }
    if (!Precision::engine().device().has_cooperative_matrix({DType::F16, DType::F16, DType::F32, DType::F32, 16, 16, 16})) {
      const GemmRun r = run(cs, v, DType::F32);
      EXPECT_EQ(r.kernels, highest.kernels);
      EXPECT_EQ(0, std::memcmp(r.c.data(), highest.c.data(), r.c.size() * sizeof(float)));
    }
  }
}

// The public products take the split under High: matmul (a shared 2-D
// operand) and matmul_nt, against the f64 reference.
TEST(MatrixGemmSplit, PublicProducts) {
  const std::int64_t B = 2, M = 33, K = 70, N = 27;
  const auto av = oa_test::random_values(B * M * K, 5), bv = oa_test::random_values(K * N, 6);
  const Matrix a = Matrix::from_vector({B, M, K}, av), b = Matrix::from_vector({K, N}, bv);
  const auto ref = oa::reference::gemm(B, M, N, K, false, false, 1.0, 0.0, {&av, 0, M * K}, {&bv, 0, 0},
                                       std::vector<float>(B * M * N), 0, M * N);
  const Precision high(MatmulPrecision::High);
  const oa_test::Forced split("gemm.f32_high", "split-f16-always");
  const auto before = Precision::engine().stats().dispatches;
  const Matrix c = oa::matrix::matmul(a, b);
  const Matrix c_nt = oa::matrix::matmul_nt(a, oa::matrix::transpose(b));
  EXPECT_LE(max_error(c.to_vector(), ref), 4.0 * 0x1p-24 * K);
  EXPECT_LE(max_error(c_nt.to_vector(), ref), 4.0 * 0x1p-24 * K);
  // Two splits, three products and an epilogue each (a transpose in between).
  EXPECT_GE(Precision::engine().stats().dispatches - before, 13u);
}

}  // namespace
