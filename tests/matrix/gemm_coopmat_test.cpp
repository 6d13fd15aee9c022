// The tensor-core GEMM (src/matrix/gemm_coopmat.cpp, matrix/gemm_coopmat)
// through lower_gemm, for f16 and bf16 A and B, against the f64 reference of
// the rounded inputs. These tests need a device with cooperative matrices (f16
// or bf16 * the same + f32, 16 x 16 x 16, subgroup scope): each dtype runs where
// the device has its configuration; elsewhere (lavapipe) the tests skip.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cmath>
#include <functional>
#include <iostream>
#include <memory>

#include "matrix/gemm.hpp"
#include "oa/oa.hpp"
#include "reference/linalg.hpp"
#include "support/expect.hpp"
#include "support/gemm_case.hpp"

namespace {

using oa::DType;
using oa::Matrix;
using oa::detail::GemmProblem;
using oa_test::run_checks;

const bool kTestGemm16 = [] {
  oa::register_contract({"test::gemm_coopmat", -1, 1, {}});
  return true;
}();

// The 16-bit dtypes the device multiplies on its tensor cores.
std::vector<DType> tensor_core_dtypes() {
  std::vector<DType> out;
  for (DType d : {DType::F16, DType::BF16})
    if (oa::Engine::default_engine().device().has_cooperative_matrix({d, d, DType::F32, DType::F32, 16, 16, 16})) out.push_back(d);
  return out;
}
#define OA_NEED_TENSOR_CORES()                                                                                         \
  if (tensor_core_dtypes().empty())                                                                                    \
  GTEST_SKIP() << "the device has no cooperative matrices (f16 or bf16 * the same + f32 -> f32, 16x16x16, subgroup "  \
                  "scope): the tensor-core GEMM runs on devices that have them (the H200), not here"

// The largest error seen per dtype, relative to the magnitude of the terms (sum |a b|, |beta c|, |bias|).
double g_worst[2] = {0.0, 0.0};

// f16 and bf16 products are exact in f32, so the error is the f32 accumulation's: at
// most K additions of relative error u each (u = 2^-24 for rounding; 2^-22
// allows for tensor cores that align and truncate the addends), plus alpha,
// beta and bias: (K + 3) * 2^-22 times the magnitude of the terms; a 16-bit C
// adds half an ulp of its format at the result (the worst error is taken over
// f32 C only).
void expect_close(const GemmProblem& p, const std::vector<float>& got, const oa::reference::GemmResult& ref) {
  namespace ref_dt = oa::reference;
  const DType out = p.c.matrix->dtype();
  double& worst = g_worst[p.a.matrix->dtype() == DType::F16 ? 0 : 1];
  ASSERT_EQ(got.size(), ref.value.size());
  const double u = std::ldexp(1.0, -22);
  for (std::size_t i = 0; i < got.size(); ++i) {
    double tol = (static_cast<double>(p.k) + 3.0) * u * ref.magnitude[i] + 1e-30;
    if (out != DType::F32) tol += 0.5 * ref_dt::ulp(out == DType::F16 ? ref_dt::kF16 : ref_dt::kBF16, std::abs(ref.value[i]) + tol);
    if (ref.magnitude[i] > 0 && out == DType::F32) worst = std::max(worst, std::abs(got[i] - ref.value[i]) / ref.magnitude[i]);
    ASSERT_NEAR(got[i], ref.value[i], tol) << "element " << i << " of batch " << p.batch << " M " << p.m << " N " << p.n
                                           << " K " << p.k << " trans_a " << p.trans_a << " trans_b " << p.trans_b << " "
                                           << oa::to_string(p.a.matrix->dtype());
  }
}

// Records the GEMM of `cs` (`dtype` A and B; C and the bias as cs.out) and
// returns the check of its result, which asserts that a tensor-core kernel ran
// when K > 0.
std::function<void()> case_check(oa_test::GemmCase cs, std::uint32_t seed, DType dtype) {
  cs.in = dtype;
  const auto ops = std::make_shared<const oa_test::GemmCaseOperands>(oa_test::gemm_case_operands(cs, seed));
  const GemmProblem& p = ops->problem;
  const auto ds = oa_test::record_gemm(p, "test::gemm_coopmat");
  const bool coopmat = !ds.empty() && ds[0].kernel == (dtype == DType::F16 ? oa::kernels::matrix_gemm_coopmat
                                                                           : oa::kernels::matrix_gemm_coopmat_bf16);
  return [ops, ds, coopmat] {
    const GemmProblem& p = ops->problem;
    EXPECT_TRUE(coopmat || p.k == 0) << "M " << p.m << " N " << p.n << " K " << p.k << " took " << (ds.empty() ? "" : ds[0].kernel);
    const auto ref = oa::reference::gemm(p.batch, p.m, p.n, p.k, p.trans_a, p.trans_b, p.alpha, p.beta,
                                         {&ops->a, p.a.offset, p.a.batch_stride}, {&ops->b, p.b.offset, p.b.batch_stride}, ops->c0,
                                         p.c.offset, p.c.batch_stride, p.bias ? &ops->bias : nullptr);
    expect_close(p, p.c.matrix->to_vector(), ref);
  };
}

TEST(MatrixGemmCoopmat, EveryLayoutRaggedAndAligned) {
  OA_NEED_TENSOR_CORES();
  std::vector<std::function<void()>> checks;
  std::uint32_t seed = 1;
  for (DType dt : tensor_core_dtypes())
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        // Ragged M, N, K with odd offsets (half-by-half loads, staged C stores), packed batch.
        checks.push_back(case_check({3, 77, 45, 70, ta, tb, 1.5f, 0.0f, false, 1, -1, 3, -1, 5, -1}, seed++, dt));
        // beta and bias, B broadcast over the batch, padded C items; K one past a step.
        checks.push_back(case_check({2, 130, 129, 33, ta, tb, -0.5f, 0.75f, true, 0, -1, 2, 0, 0, 130 * 129 + 3}, seed++, dt));
        // Multiples of 8 (uvec4 loads, direct C stores), A broadcast, beta.
        checks.push_back(case_check({2, 256, 136, 96, ta, tb, 1.0f, 1.0f, false, 8, 0, 16, -1, 12, -1}, seed++, dt));
        // Many large tiles; K not a multiple of the 32-element step.
        checks.push_back(case_check({1, 640, 520, 200, ta, tb, 1.0f, 0.0f, true, 0, -1, 0, -1, 0, -1}, seed++, dt));
      }
  run_checks(checks);
  std::cout << "[ coopmat  ] worst |error| / magnitude vs f64: f16 " << g_worst[0] << ", bf16 " << g_worst[1] << "\n";
}

// C in A's 16-bit dtype, the bias in C's dtype or f32 (as autocast keeps it):
// pairs of columns stored as words where they fill one, element by element
// where a pair straddles two words (odd offsets, odd N), beta and bias, and
// split K (f32 partial products rounded by the epilogue).
TEST(MatrixGemmCoopmat, SixteenBitCAndBias) {
  OA_NEED_TENSOR_CORES();
  std::vector<std::function<void()>> checks;
  std::uint32_t seed = 200;
  for (DType dt : tensor_core_dtypes()) {
    auto add = [&](oa_test::GemmCase c) {
      c.out = dt;
      checks.push_back(case_check(c, seed++, dt));
      c.f32_bias = true;
      if (c.bias) checks.push_back(case_check(c, seed++, dt));
    };
    for (bool ta : {false, true})
      for (bool tb : {false, true}) {
        add({3, 77, 45, 70, ta, tb, 1.5f, 0.0f, false, 1, -1, 3, -1, 5, -1});
        add({2, 130, 129, 33, ta, tb, -0.5f, 0.75f, true, 0, -1, 2, 0, 1, 130 * 129 + 3});
      }
    add({1, 640, 520, 200, false, true, 1.0f, 0.0f, true, 0, -1, 0, -1, 0, -1});
    add({2, 256, 136, 96, true, false, 1.0f, 1.0f, true, 8, 0, 16, -1, 12, -1});
    add({1, 128, 100, 4100, false, true, 0.5f, -1.0f, true, 0, -1, 0, -1, 0, -1});
    add({2, 200, 264, 72, false, false, 0.5f, 0.25f, true, 0, -1, 0, -1, 16, 200 * 264 + 8});  // 8-aligned C: uvec4 stores
  }
  run_checks(checks);
}

TEST(MatrixGemmCoopmat, SmallSizesAndSkinnyRows) {
  OA_NEED_TENSOR_CORES();
  std::vector<std::function<void()>> checks;
  std::uint32_t seed = 100;
  for (DType dt : tensor_core_dtypes())
    for (std::int64_t m : {1, 16, 17})
      for (std::int64_t n : {1, 15, 64})
        for (std::int64_t k : {1, 16, 31})
          checks.push_back(case_check({1, m, n, k, m == 17, n == 15, 1.0f, 0.0f, false, 0, -1, 0, -1, 0, -1}, seed++, dt));
  run_checks(checks);
}

TEST(MatrixGemmCoopmat, ZeroKGivesBetaCPlusBias) {
  OA_NEED_TENSOR_CORES();
  for (DType dt : tensor_core_dtypes())
    run_checks({case_check({2, 5, 7, 0, false, false, 1.0f, 0.5f, true, 0, -1, 0, -1, 1, -1}, 7, dt),
                case_check({2, 5, 7, 0, true, true, 1.0f, 0.0f, false, 0, -1, 0, -1, 0, -1}, 8, dt)});
}

TEST(MatrixGemmCoopmat, SplitKForFewTilesAndLongK) {
  OA_NEED_TENSOR_CORES();
  // One 128x128 tile and a long K: the K splits are summed by the epilogue.
  for (DType dt : tensor_core_dtypes()) {
    GemmProblem p{.m = 128, .n = 100, .k = 4100, .trans_b = true, .alpha = 0.5f, .beta = -1.0f};
    const auto a = oa_test::stored(oa_test::random_values(p.m * p.k, 31), dt);
    const auto b = oa_test::stored(oa_test::random_values(p.k * p.n, 32), dt);
    const auto c0 = oa_test::random_values(p.m * p.n, 33), bias = oa_test::random_values(p.n, 34);
    const Matrix ma = Matrix::from_vector({p.m, p.k}, a, dt), mb = Matrix::from_vector({p.n, p.k}, b, dt);
    const Matrix mc = Matrix::from_vector({p.m, p.n}, c0), mbias = Matrix::from_vector({p.n}, bias);
    p.a = {&ma};
    p.b = {&mb};
    p.c = {&mc};
    p.bias = &mbias;
    const auto ds = oa_test::record_gemm(p, "test::gemm_coopmat");
    ASSERT_EQ(ds.size(), 2u);
    EXPECT_EQ(ds[0].kernel, dt == DType::F16 ? oa::kernels::matrix_gemm_coopmat : oa::kernels::matrix_gemm_coopmat_bf16);
    EXPECT_GT(ds[0].groups[2], 1u);
    EXPECT_EQ(ds[1].kernel, oa::kernels::matrix_gemm_epilogue);
    const auto ref = oa::reference::gemm(1, p.m, p.n, p.k, false, true, p.alpha, p.beta, {&a, 0, 0}, {&b, 0, 0}, c0, 0, 0, &bias);
    expect_close(p, mc.to_vector(), ref);
  }
}

// Every variant of the tuning point gemm.coopmat_tile, forced: ragged edges
// (M, N, K not multiples of any tile, staged C stores with bias), aligned
// ones (uvec4 loads, direct C stores) and a K of one or two steps, in every
// layout; a fixed tile the device can run must be the one dispatched.
TEST(MatrixGemmCoopmat, EveryTileVariant) {
  OA_NEED_TENSOR_CORES();
  const oa::Engine engine = oa::Engine::default_engine();
  const oa::Tuning saved = *oa::tuning_of(engine);
  std::uint32_t seed = 300;
  for (const std::string_view variant : oa::tuning_point("gemm.coopmat_tile").variants) {
    std::vector<oa::TuningTable> layers{oa::TuningTable::parse(
        R"({"oa_tuning": 1, "points": {"gemm.coopmat_tile": [{"use": ")" + std::string(variant) + R"("}]}})", "test")};
    layers.insert(layers.end(), saved.layers().begin(), saved.layers().end());
    oa::set_tuning(engine, oa::Tuning(std::move(layers)));
    std::uint32_t bm = 0, bn = 0;
    const bool fixed = std::sscanf(std::string(variant).c_str(), "%ux%u", &bm, &bn) == 2;
    std::vector<std::function<void()>> checks;
    for (DType dt : tensor_core_dtypes())
      for (bool ta : {false, true})
        for (bool tb : {false, true}) {
          checks.push_back(case_check({1, 300, 520, 200, ta, tb, 1.5f, 0.5f, true, 0, -1, 0, -1, 0, -1}, seed++, dt));
          checks.push_back(case_check({1, 512, 264, 96, ta, tb, 1.0f, 0.0f, false, 0, -1, 0, -1, 0, -1}, seed++, dt));
          // One or two K steps: the loads ahead run past K.
          checks.push_back(case_check({1, 256, 512, 40, ta, tb, 1.0f, 0.0f, false, 0, -1, 0, -1, 0, -1}, seed++, dt));
        }
    if (fixed) {
      const Matrix a = Matrix::empty({300, 200}, tensor_core_dtypes()[0]), b = Matrix::empty({200, 520}, a.dtype());
      const Matrix c = Matrix::empty({300, 520});
      const auto ds = oa::detail::lower_gemm(engine, {.m = 300, .n = 520, .k = 200, .a = {&a}, .b = {&b}, .c = {&c}});
      ASSERT_FALSE(ds.empty());
      EXPECT_EQ(ds[0].specialization[1], bm) << variant;
      EXPECT_EQ(ds[0].specialization[2], bn) << variant;
    }
    run_checks(checks);
  }
  oa::set_tuning(engine, saved);
}

TEST(MatrixGemmCoopmat, RepeatedRunsAreBitIdentical) {
  OA_NEED_TENSOR_CORES();
  const std::int64_t m = 300, n = 260, k = 777;
  const DType dt = tensor_core_dtypes().back();
  const auto a = oa_test::stored(oa_test::random_values(m * k, 51), dt);
  const auto b = oa_test::stored(oa_test::random_values(k * n, 52), dt);
  const Matrix ma = Matrix::from_vector({m, k}, a, dt), mb = Matrix::from_vector({k, n}, b, dt);
  std::vector<float> first;
  for (int r = 0; r < 2; ++r) {
    const Matrix mc = Matrix::empty({m, n});
    oa_test::record_gemm({.m = m, .n = n, .k = k, .a = {&ma}, .b = {&mb}, .c = {&mc}}, "test::gemm_coopmat");
    if (r == 0) first = mc.to_vector();
    else EXPECT_EQ(mc.to_vector(), first);
  }
}

}  // namespace
