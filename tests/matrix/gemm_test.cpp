// The internal batched GEMM lowering (src/matrix/gemm.hpp), driven through a
// test-only semantic op so that every GemmProblem field can be exercised.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <string_view>

#include "matrix/gemm.hpp"
#include "matrix/lowering.hpp"
#include "oa/oa.hpp"
#include "support/expect.hpp"
#include "support/forced_tuning.hpp"
#include "support/gemm_case.hpp"
#include "reference/dtype.hpp"
#include "reference/linalg.hpp"

namespace {

using oa::DType;
using oa::Matrix;
using oa::detail::GemmProblem;
namespace ref = oa::reference;
namespace kernels = oa::kernels;

const bool kTestGemm = [] {
  oa::register_contract({"test::gemm", -1, 1, {}});
  return true;
}();

using oa_test::random_values;
using oa_test::run_checks;

// Records p through the test's semantic op.
std::vector<oa::runtime::ComputeDispatch> run(const GemmProblem& p) { return oa_test::record_gemm(p, "test::gemm"); }

// C after the GEMM against the f64 reference; tolerance relative to the
// magnitude of the terms. With 16-bit operands (a, b, c0 and bias hold the
// values as rounded to their dtypes) the bound is derived: f32 accumulation
// over K products and the epilogue terms, (K + 4) 2^-24 times the magnitude,
// plus, for a 16-bit C, half an ulp of C's format at the result.
void expect_gemm(const GemmProblem& p, const std::vector<float>& a, const std::vector<float>& b, const std::vector<float>& c0,
                 const std::vector<float>* bias) {
  const DType in = p.k > 0 ? p.a.matrix->dtype() : DType::F32, out = p.c.matrix->dtype();
  const auto ref = oa::reference::gemm(p.batch, p.m, p.n, p.k, p.trans_a, p.trans_b, p.alpha, p.beta,
                                       {&a, p.a.offset, p.a.batch_stride}, {&b, p.b.offset, p.b.batch_stride}, c0, p.c.offset,
                                       p.c.batch_stride, bias);
  const auto got = p.c.matrix->to_vector();
  ASSERT_EQ(got.size(), ref.value.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    double tol = 1e-5 * ref.magnitude[i] + 1e-6;
    if (in != DType::F32 || out != DType::F32) {
      tol = static_cast<double>(p.k + 4) * 0x1p-24 * ref.magnitude[i];
      if (out != DType::F32) tol += 0.5 * ref::ulp(out == DType::F16 ? ref::kF16 : ref::kBF16, std::abs(ref.value[i]) + tol);
    }
    ASSERT_NEAR(got[i], ref.value[i], tol) << "element " << i << " of batch " << p.batch << " M " << p.m << " N " << p.n << " K "
                                           << p.k << " trans_a " << p.trans_a << " trans_b " << p.trans_b << " in "
                                           << to_string(in) << " C " << to_string(out);
  }
}

// Records the GEMM of `cs` (in `dispatches` dispatches where that is not 0)
// and returns the check of its result (run after everything is recorded: one
// submission for many cases).
std::function<void()> case_check(const oa_test::GemmCase& cs, std::uint32_t seed, std::size_t dispatches = 0) {
  const auto ops = std::make_shared<const oa_test::GemmCaseOperands>(oa_test::gemm_case_operands(cs, seed));
  const std::size_t recorded = run(ops->problem).size();
  EXPECT_TRUE(dispatches == 0 || recorded == dispatches) << recorded << " dispatches for M " << cs.m << " N " << cs.n << " K " << cs.k;
  return [ops] { expect_gemm(ops->problem, ops->a, ops->b, ops->c0, ops->problem.bias ? &ops->bias : nullptr); };
}

TEST(MatrixGemm, TransposeAlphaBetaBiasCombinations) {
  std::vector<std::function<void()>> checks;
  std::uint32_t seed = 1;
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      // Odd sizes with odd offsets (scalar loads), packed batch.
      checks.push_back(case_check({3, 17, 33, 65, ta, tb, 1.5f, 0.0f, false, 1, -1, 3, -1, 5, -1}, seed++));
      // beta and bias, B broadcast over the batch (stride 0), padded C items.
      checks.push_back(case_check({2, 33, 17, 63, ta, tb, -0.5f, 0.75f, true, 0, -1, 2, 0, 0, 33 * 17 + 3}, seed++));
      // Sizes, offsets and strides that are multiples of 4 (vec4 loads and stores), A broadcast.
      checks.push_back(case_check({2, 36, 40, 64, ta, tb, 1.0f, 1.0f, true, 4, 0, 8, -1, 12, -1}, seed++));
    }
  run_checks(checks);
}

// Each fixed tile of gemm.tile forced, over extents that are not multiples
// of any tile, in every layout: A [M, K] and B [K, N] read by elements (odd
// extents and offsets); both transposed, read by quads (multiples of 4), with
// batch strides (padded, broadcast), beta and bias; B transposed, by elements;
// A transposed with a long K over one tile, which splits K (partial last
// step), with beta and bias.
TEST(MatrixGemm, EveryFixedTileEveryLayout) {
  for (const std::string_view tile_name : oa::tuning_point("gemm.tile").variants) {
    if (tile_name == "busy" || tile_name == "busy-square") continue;
    const std::string tile(tile_name);
    SCOPED_TRACE(tile);
    const oa_test::Forced forced("gemm.tile", tile);
    run_checks({case_check({2, 131, 70, 37, false, false, 1.5f, 0.0f, false, 1, -1, 3, -1, 5, -1}, 400),
                case_check({2, 68, 136, 52, true, true, -0.5f, 0.75f, true, 4, 0, 8, 52 * 136 + 8, 12, -1}, 401),
                case_check({1, 45, 262, 41, false, true, 2.0f, 0.0f, true, 3, -1, 1, -1, 0, -1}, 402),
                case_check({2, 72, 40, 600, true, false, 0.5f, -1.0f, true, 0, -1, 4, -1, 8, -1}, 403, 2)});
  }
}

TEST(MatrixGemm, OddSizes) {
  std::vector<std::function<void()>> checks;
  std::uint32_t seed = 100;
  for (std::int64_t m : {1, 7, 65})
    for (std::int64_t n : {1, 17, 129})
      for (std::int64_t k : {1, 64, 127})
        checks.push_back(case_check({1, m, n, k, true, false, 1.0f, 0.0f, false, 0, -1, 0, -1, 0, -1}, seed++));
  run_checks(checks);
}

TEST(MatrixGemm, ZeroKGivesBetaCPlusBias) {
  run_checks({case_check({2, 5, 7, 0, false, false, 1.0f, 0.5f, true, 0, -1, 0, -1, 1, -1}, 7),
              case_check({2, 5, 7, 0, false, true, 1.0f, 0.0f, false, 0, -1, 0, -1, 0, -1}, 8)});
}

TEST(MatrixGemm, EmptyProblemHasNoDispatches) {
  const Matrix c = Matrix::zeros({4});
  GemmProblem p;
  p.m = 0;
  p.n = 4;
  p.k = 3;
  p.c = {&c, 0, 0};
  EXPECT_TRUE(oa::detail::lower_gemm(c.engine(), p).empty());
}

TEST(MatrixGemm, SplitKWhenFewTiles) {
  // One 64x64 tile and a long K: the lowering splits K and sums the partial
  // products in a second (epilogue) dispatch.
  GemmProblem p{.m = 40, .n = 36, .k = 1024, .alpha = 0.5f, .beta = -1.0f};
  const auto a = random_values(p.m * p.k, 31), b = random_values(p.k * p.n, 32), c0 = random_values(p.m * p.n, 33),
             bias = random_values(p.n, 34);
  const Matrix ma = Matrix::from_vector({p.m, p.k}, a), mb = Matrix::from_vector({p.k, p.n}, b),
               mc = Matrix::from_vector({p.m, p.n}, c0), mbias = Matrix::from_vector({p.n}, bias);
  p.a = {&ma};
  p.b = {&mb};
  p.c = {&mc};
  p.bias = &mbias;
  oa::TraceCapture trace(mc.engine());
  const auto ds = run(p);
  ASSERT_EQ(ds.size(), 2u);
  EXPECT_EQ(ds[0].kernel, kernels::matrix_gemm);
  EXPECT_GT(ds[0].groups[2], 1u);  // the K splits
  EXPECT_EQ(ds[1].kernel, kernels::matrix_gemm_epilogue);
  const auto ops = trace.ops();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].dispatches, 2u);
  expect_gemm(p, a, b, c0, &bias);
}

TEST(MatrixGemm, LargeTileForManyBigTiles) {
  // 64 items of 129 x 130: enough 128x128 tiles for the large-tile kernel.
  const std::int64_t batch = 64, m = 129, n = 132, k = 33;
  const auto a = random_values(batch * m * k, 41), b = random_values(batch * k * n, 42);
  const Matrix ma = Matrix::from_vector({batch * m * k}, a), mb = Matrix::from_vector({batch * k * n}, b);
  const Matrix mc = Matrix::empty({batch * m * n});
  GemmProblem p;
  p.batch = batch;
  p.m = m;
  p.n = n;
  p.k = k;
  p.a = {&ma, 0, m * k};
  p.b = {&mb, 0, k * n};
  p.c = {&mc, 0, m * n};
  const auto ds = run(p);
  ASSERT_EQ(ds.size(), 1u);
  ASSERT_GE(ds[0].specialization.size(), 2u);
  EXPECT_EQ(ds[0].specialization[1], 128u);  // BM
  expect_gemm(p, a, b, std::vector<float>(batch * m * n, 0.0f), nullptr);
}

TEST(MatrixGemm, WideTileBetweenLargeAndMedium) {
  // 64 items of 65 x 130: too few 128x128 tiles, enough 64x128 ones.
  const std::int64_t batch = 64, m = 65, n = 130, k = 33;
  const auto a = random_values(batch * m * k, 51), b = random_values(batch * k * n, 52), bias = random_values(n, 53);
  const Matrix ma = Matrix::from_vector({batch * m * k}, a), mb = Matrix::from_vector({batch * k * n}, b);
  const Matrix mc = Matrix::empty({batch * m * n}), mbias = Matrix::from_vector({n}, bias);
  const GemmProblem p{.batch = batch, .m = m, .n = n, .k = k, .a = {&ma, 0, m * k}, .b = {&mb, 0, k * n}, .c = {&mc, 0, m * n}, .bias = &mbias};
  const auto ds = run(p);
  ASSERT_EQ(ds.size(), 1u);
  ASSERT_GE(ds[0].specialization.size(), 6u);
  EXPECT_EQ(ds[0].specialization[1], 64u);   // BM
  EXPECT_EQ(ds[0].specialization[2], 128u);  // BN
  EXPECT_EQ(ds[0].specialization[5], 8u);    // TN
  expect_gemm(p, a, b, std::vector<float>(batch * m * n, 0.0f), &bias);
}

TEST(MatrixGemm, SkinnyRowsEveryLayout) {
  // M <= 16 takes matrix/gemm_skinny: odd and vec4-aligned sizes, batches
  // (packed, broadcast, padded), beta and bias, and K long enough to split.
  std::vector<std::function<void()>> checks;
  std::uint32_t seed = 200;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (std::int64_t m : {1, 2, 7, 16}) {
        const bool odd = m % 2 == 1;  // half the row counts per shape keeps the pipelines few
        if (odd) checks.push_back(case_check({1, m, 33, 67, ta, tb, 1.0f, 0.0f, false, 1, -1, 3, -1, 5, -1}, seed++));
        if (!odd) checks.push_back(case_check({3, m, 17, 1031, ta, tb, -0.5f, 0.75f, true, 0, -1, 2, 0, 0, m * 17 + 3}, seed++));
        if (odd) checks.push_back(case_check({2, m, 132, 1024, ta, tb, 1.0f, 1.0f, true, 4, 0, 8, -1, 12, -1}, seed++));
        if (!odd) checks.push_back(case_check({2, m, 129, 5, ta, tb, 2.0f, 0.0f, false, 0, -1, 0, -1, 0, -1}, seed++));
        if (m == 1) checks.push_back(case_check({2, m, 7, 0, ta, tb, 1.0f, 0.5f, true, 0, -1, 0, -1, 1, -1}, seed++));
      }
  run_checks(checks);
}

TEST(MatrixGemm, SkinnyPathForFewRowsIsDeterministic) {
  // 16 rows take the skinny kernel (here with split K and the epilogue), 17 the
  // tiled one; repeated runs give bit-identical results.
  for (std::int64_t m : {16, 17}) {
    GemmProblem p;
    p.m = m;
    p.n = 40;
    p.k = 2049;
    p.trans_b = true;
    const auto a = random_values(p.m * p.k, 61), b = random_values(p.k * p.n, 62);
    const Matrix ma = Matrix::from_vector({p.m, p.k}, a), mb = Matrix::from_vector({p.n, p.k}, b);
    const Matrix c1 = Matrix::empty({p.m, p.n}), c2 = Matrix::empty({p.m, p.n});
    p.a = {&ma};
    p.b = {&mb};
    p.c = {&c1};
    const auto ds = run(p);
    ASSERT_FALSE(ds.empty());
    EXPECT_EQ(ds[0].kernel, m <= 16 ? kernels::matrix_gemm_skinny : kernels::matrix_gemm);
    if (m <= 16) {
      ASSERT_EQ(ds.size(), 2u);
      EXPECT_GT(ds[0].groups[2], 1u);  // the K splits
      EXPECT_EQ(ds[1].kernel, kernels::matrix_gemm_epilogue);
    }
    p.c = {&c2};
    run(p);
    EXPECT_EQ(c1.to_vector(), c2.to_vector());
    expect_gemm(p, a, b, std::vector<float>(p.m * p.n, 0.0f), nullptr);
  }
}

// 16-bit A and B (f16 and bf16), C and bias f32 or A's dtype: every layout,
// odd and vec4-aligned sizes and offsets (odd offsets put elements in either
// half of a word), beta, bias, broadcast and padded batches, the skinny
// kernel (M <= 16), split K and K = 0.
TEST(MatrixGemm, SixteenBitOperandsEveryPath) {
  // Few cases per dtype pair: every distinct specialization is a pipeline that lavapipe compiles slowly.
  std::vector<std::function<void()>> checks;
  std::uint32_t seed = 300;
  auto add = [&](oa_test::GemmCase c, DType in, DType out) {
    c.in = in;
    c.out = out;
    checks.push_back(case_check(c, seed++));
  };
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      add({3, 17, 33, 65, ta, tb, 1.5f, 0.0f, false, 1, -1, 3, -1, 5, -1}, DType::F16, DType::F16);  // tiled, odd offsets
      add({2, 7, 33, 67, ta, tb, 1.0f, 0.0f, false, 1, -1, 3, -1, 5, -1}, DType::F16, DType::F16);   // skinny
    }
  for (DType in : {DType::F16, DType::BF16}) {
    add({2, 33, 17, 63, true, false, -0.5f, 0.75f, true, 0, -1, 2, 0, 1, 33 * 17 + 3}, in, in);  // beta, bias, padded C
    add({2, 36, 40, 64, false, true, 1.0f, 1.0f, true, 4, 0, 8, -1, 12, -1}, in, in);            // vec4 loads and stores
    add({1, 40, 36, 1024, false, false, 0.5f, -1.0f, true, 0, -1, 0, -1, 0, -1}, in, in);        // split K
    add({3, 16, 17, 1031, false, true, -0.5f, 0.75f, true, 0, -1, 2, 0, 1, 16 * 17 + 3}, in, in);  // skinny, split K
    add({2, 5, 7, 0, false, false, 1.0f, 0.5f, true, 0, -1, 0, -1, 1, -1}, in, in);              // K = 0
    add({2, 33, 17, 63, false, false, 1.0f, 0.0f, true, 0, -1, 0, -1, 0, -1}, in, DType::F32);   // f32 C and bias
    add({2, 3, 17, 63, false, false, 1.0f, 0.5f, true, 0, -1, 0, -1, 0, -1}, in, DType::F32);
  }
  run_checks(checks);
}

TEST(MatrixGemm, SixteenBitOperandsTakeTheTensorCoresOrTheHalfKernels) {
  for (std::int64_t m : {4, 40}) {
    const Matrix a = Matrix::empty({m * 64}, DType::BF16), b = Matrix::empty({64 * 8}, DType::BF16);
    const Matrix c = Matrix::empty({m * 8}, DType::BF16);
    GemmProblem p;
    p.m = m;
    p.n = 8;
    p.k = 64;
    p.a = {&a};
    p.b = {&b};
    p.c = {&c};
    const auto ds = oa::detail::lower_gemm(c.engine(), p);
    if (c.engine().device().has_cooperative_matrix({DType::BF16, DType::BF16, DType::F32, DType::F32, 16, 16, 16})) {
      // Tensor cores, rounding into the bf16 C themselves.
      ASSERT_EQ(ds.size(), 1u);
      EXPECT_EQ(ds[0].kernel, kernels::matrix_gemm_coopmat_bf16);
    } else {
      ASSERT_EQ(ds.size(), 1u);
      EXPECT_EQ(ds[0].kernel, m <= 16 ? kernels::matrix_gemm_skinny_half : kernels::matrix_gemm_half);
    }
  }
}

TEST(MatrixGemm, InconsistentProblemIsInternalError) {
  const Matrix a = Matrix::zeros({10}), b = Matrix::zeros({10}), c = Matrix::zeros({4});
  GemmProblem p;
  p.m = 2;
  p.n = 2;
  p.k = 3;
  p.a = {&a};
  p.b = {&b};
  p.c = {&c};
  EXPECT_NO_THROW(oa::detail::lower_gemm(c.engine(), p));
  p.batch = 2;  // the second C item would lie outside c
  p.a.batch_stride = 0;
  p.b.batch_stride = 0;
  p.c.batch_stride = 4;
  try {
    oa::detail::lower_gemm(c.engine(), p);
    FAIL() << "expected an error";
  } catch (const oa::Error& e) {
    EXPECT_EQ(e.kind(), oa::ErrorKind::Internal);
    EXPECT_NE(std::string(e.what()).find("lower_gemm"), std::string::npos);
  }
  p.batch = 1;
  p.b.matrix = nullptr;
  EXPECT_THROW(oa::detail::lower_gemm(c.engine(), p), oa::Error);
  // A f16 with B f32 or bf16, and C or bias of a third dtype, are inconsistent.
  const Matrix h = Matrix::empty({10}, DType::F16), hb = Matrix::empty({10}, DType::BF16);
  const Matrix bias_bf16 = Matrix::empty({2}, DType::BF16);
  p.a = {&h};
  p.b = {&b};
  EXPECT_THROW(oa::detail::lower_gemm(c.engine(), p), oa::Error);
  p.b = {&hb};
  EXPECT_THROW(oa::detail::lower_gemm(c.engine(), p), oa::Error);
  p.b = {&h};
  EXPECT_NO_THROW(oa::detail::lower_gemm(c.engine(), p));
  p.bias = &bias_bf16;
  EXPECT_THROW(oa::detail::lower_gemm(c.engine(), p), oa::Error);
}

}  // namespace
