// matmul, matmul_nt and transpose against the f64 references.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "oa/oa.hpp"
#include "support/expect.hpp"
#include "reference/linalg.hpp"

namespace {

using oa::Matrix;
using oa::Shape;

using oa_test::random_values;
using oa_test::run_checks;

// Records out = a x op(b) for a [batch?, M, K] and b [batch?, K, N] (or
// [batch?, N, K] when nt), checks the trace, and returns the check of the
// result against the reference (run after everything is recorded: one
// submission for many products).
std::function<void()> product_check(std::int64_t batch, bool a_batched, bool b_batched, std::int64_t m, std::int64_t n,
                                    std::int64_t k, bool nt, std::uint32_t seed) {
  const std::int64_t ab = a_batched ? batch : 1, bb = b_batched ? batch : 1;
  auto a = random_values(ab * m * k, seed), b = random_values(bb * k * n, seed + 1);
  const Shape sa = a_batched ? Shape{batch, m, k} : Shape{m, k};
  const Shape sb = b_batched ? (nt ? Shape{batch, n, k} : Shape{batch, k, n}) : (nt ? Shape{n, k} : Shape{k, n});
  const Matrix ma = Matrix::from_vector(sa, a), mb = Matrix::from_vector(sb, b);
  oa::TraceCapture trace(ma.engine());
  Matrix c = nt ? oa::matrix::matmul_nt(ma, mb) : oa::matrix::matmul(ma, mb);
  const auto ops = trace.ops();
  EXPECT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops.at(0).name, nt ? "oa::matrix::matmul_nt" : "oa::matrix::matmul");
  const bool batched = a_batched || b_batched;
  EXPECT_EQ(c.shape(), batched ? Shape({batch, m, n}) : Shape({m, n}));
  return [=, a = std::move(a), b = std::move(b)] {
    SCOPED_TRACE(testing::Message() << "batch " << batch << " M " << m << " N " << n << " K " << k << " nt " << nt);
    const std::int64_t items = batched ? batch : 1;
    const auto ref = oa::reference::gemm(items, m, n, k, false, nt, 1.0, 0.0, {&a, 0, a_batched ? m * k : 0},
                                         {&b, 0, b_batched ? k * n : 0}, std::vector<float>(items * m * n), 0, m * n);
    const auto got = c.to_vector();
    ASSERT_EQ(got.size(), ref.value.size());
    for (std::size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], ref.value[i], 1e-5 * ref.magnitude[i] + 1e-6) << "element " << i;
  };
}

const std::int64_t kSizes[] = {1, 7, 17, 33, 65, 129};
const std::int64_t kInner[] = {1, 63, 64, 65, 127, 129};

TEST(MatrixMatmul, OddSizes) {
  // Every M with every N, K cycling so that each pair of extents meets each K value.
  std::vector<std::function<void()>> checks;
  std::uint32_t seed = 1;
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j)
      for (int d : {0, 3}) checks.push_back(product_check(1, false, false, kSizes[i], kSizes[j], kInner[(i + j + d) % 6], false, seed++));
  run_checks(checks);
}

TEST(MatrixMatmul, AlignedSizes) {
  run_checks({product_check(1, false, false, 64, 64, 64, false, 5), product_check(1, false, false, 128, 96, 32, false, 6)});
}

TEST(MatrixMatmul, Batched) {
  run_checks({product_check(3, true, true, 17, 33, 65, false, 11), product_check(2, true, true, 64, 32, 16, false, 12),
              product_check(4, true, false, 7, 129, 63, false, 13),    // b shared by every item
              product_check(3, false, true, 33, 7, 17, false, 14)});  // a shared by every item
}

TEST(MatrixMatmul, SeventyThousandSmallProducts) {
  // Batch 70000 runs on the z grid past the 65535 limit: the engine splits it.
  const std::int64_t batch = 70000, m = 2, n = 3, k = 5;
  const auto a = random_values(batch * m * k, 21), b = random_values(batch * k * n, 22);
  const Matrix ma = Matrix::from_vector({batch, m, k}, a), mb = Matrix::from_vector({batch, k, n}, b);
  oa::TraceCapture trace(ma.engine());
  const auto got = oa::matrix::matmul(ma, mb).to_vector();
  const auto ops = trace.ops();
  ASSERT_EQ(ops.size(), 1u);
  const std::uint64_t z_limit = ma.engine().device().max_workgroup_count[2];
  EXPECT_EQ(ops[0].dispatches, (batch + z_limit - 1) / z_limit);  // 2 where z stops at 65535
  const auto ref = oa::reference::gemm(batch, m, n, k, false, false, 1.0, 0.0, {&a, 0, m * k}, {&b, 0, k * n},
                                       std::vector<float>(batch * m * n), 0, m * n);
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], ref.value[i], 1e-5 * ref.magnitude[i] + 1e-6) << "element " << i;
}

TEST(MatrixMatmul, ZeroExtents) {
  const Matrix a = Matrix::ones({3, 0}), b = Matrix::ones({0, 4});
  const auto c = oa::matrix::matmul(a, b);  // K = 0: zeros
  EXPECT_EQ(c.shape(), Shape({3, 4}));
  EXPECT_EQ(c.to_vector(), std::vector<float>(12, 0.0f));
  const auto e = oa::matrix::matmul(Matrix::ones({2, 0, 5}), Matrix::ones({2, 5, 3}));
  EXPECT_EQ(e.shape(), Shape({2, 0, 3}));
}

TEST(MatrixMatMulNt, OddSizes) {
  std::vector<std::function<void()>> checks;
  std::uint32_t seed = 300;
  for (int i = 0; i < 6; ++i)
    for (int j = 0; j < 6; ++j) checks.push_back(product_check(1, false, false, kSizes[i], kSizes[j], kInner[(i + 2 * j) % 6], true, seed++));
  run_checks(checks);
}

TEST(MatrixMatMulNt, Batched) {
  run_checks({product_check(3, true, true, 33, 17, 64, true, 31), product_check(5, true, false, 7, 65, 129, true, 32),
              product_check(2, false, true, 17, 9, 20, true, 33)});
}

void expect_error(const std::function<void()>& f, oa::ErrorKind kind, const std::string& needle) {
  try {
    f();
    FAIL() << "expected an error mentioning " << needle;
  } catch (const oa::Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(MatrixMatmul, Errors) {
  const oa::Engine engine = oa::Engine::default_engine();
  oa::TraceCapture trace(engine);
  const Matrix a = Matrix::zeros({2, 3}), b = Matrix::zeros({4, 5});
  expect_error([&] { oa::matrix::matmul(a, b); }, oa::ErrorKind::InvalidArgument, "oa::matrix::matmul");
  expect_error([&] { oa::matrix::matmul_nt(a, b); }, oa::ErrorKind::InvalidArgument, "oa::matrix::matmul_nt");
  expect_error([&] { oa::matrix::matmul(Matrix::zeros({}), Matrix::zeros({3, 2})); }, oa::ErrorKind::InvalidArgument, "rank >= 1");
  expect_error([&] { oa::matrix::matmul_nt(Matrix::zeros({3}), Matrix::zeros({2, 3})); }, oa::ErrorKind::InvalidArgument, "rank");
  expect_error([&] { oa::matrix::matmul(Matrix::zeros({4}), Matrix::zeros({3, 2})); }, oa::ErrorKind::InvalidArgument,
               "a [4] has K = 4 but b [3, 2] has K = 3");
  expect_error([&] { oa::matrix::matmul(Matrix::zeros({2, 2, 3}), Matrix::zeros({3, 3, 2})); }, oa::ErrorKind::InvalidArgument,
               "do not broadcast: the batch extents of a [2, 2, 3] [2], the batch extents of b [3, 3, 2] [3]");
  expect_error([&] { oa::matrix::matmul(Matrix::zeros({2, 3, 2, 3}), Matrix::zeros({2, 3, 2})); },
               oa::ErrorKind::InvalidArgument, "batch");
  expect_error([&] { oa::matrix::matmul_nt(Matrix::zeros({2, 2, 2, 3}), Matrix::zeros({2, 2, 3})); },
               oa::ErrorKind::InvalidArgument, "batch");
  const Matrix idx = Matrix::from_i32({3, 2}, std::vector<std::int32_t>(6, 1));
  expect_error([&] { oa::matrix::matmul(a, idx); }, oa::ErrorKind::InvalidArgument, "f32");
  const oa::Engine other;
  const Matrix foreign = Matrix::zeros({3, 2}, other);
  expect_error([&] { oa::matrix::matmul(a, foreign); }, oa::ErrorKind::InvalidArgument, "b [3, 2] lives on another engine");
  const Matrix idx3 = Matrix::from_i32({2, 1, 3, 2}, std::vector<std::int32_t>(12, 1));
  expect_error([&] { oa::matrix::matmul(idx3, Matrix::from_i32({4, 2, 2}, std::vector<std::int32_t>(16, 1))); },
               oa::ErrorKind::InvalidArgument, "i32");
  expect_error([&] { oa::matrix::matmul(Matrix::zeros({2, 1, 3, 2}), Matrix::zeros({4, 2, 2}, other)); }, oa::ErrorKind::InvalidArgument,
               "another engine");
  expect_error([&] { oa::matrix::transpose(Matrix::zeros({4})); }, oa::ErrorKind::InvalidArgument, "oa::matrix::transpose");
  EXPECT_TRUE(trace.ops().empty());  // nothing recorded for a failed call
}

// A batch of one item is shared as is; other broadcast batches are expanded first.
TEST(MatrixMatmul, BroadcastTrace) {
  const oa::Engine engine = oa::Engine::default_engine();
  const auto labels = [&](const Shape& sa, const Shape& sb) {
    const Matrix a = Matrix::zeros(sa), b = Matrix::zeros(sb);
    oa::TraceCapture trace(engine);
    oa::matrix::matmul(a, b);
    std::vector<std::string> out;
    for (const auto& op : trace.ops()) out.push_back(op.label());
    return out;
  };
  using L = std::vector<std::string>;
  EXPECT_EQ(labels({1, 3, 4}, {2, 4, 5}), L{"oa::matrix::matmul"});
  EXPECT_EQ(labels({2, 3, 4}, {1, 1, 4, 5}), L{"oa::matrix::matmul"});
  EXPECT_EQ(labels({4}, {2, 4, 5}), L{"oa::matrix::matmul"});
  EXPECT_EQ(labels({2, 1, 3, 4}, {5, 4, 6}), (L{"oa::matrix::expand", "oa::matrix::expand", "oa::matrix::matmul"}));
  EXPECT_EQ(labels({2, 3, 4}, {3, 1, 4, 5}), (L{"oa::matrix::expand", "oa::matrix::expand", "oa::matrix::matmul"}));
}

// transpose of random values of `dtype` (16-bit ones rounded from f32): a
// copy of bits, so equal to the reference's element for element.
void check_transpose(const Shape& s, std::uint32_t seed, oa::DType dtype = oa::DType::F32) {
  SCOPED_TRACE(testing::Message() << "shape " << s.to_string() << " " << oa::to_string(dtype));
  const Matrix mx = oa::matrix::cast(Matrix::from_vector(s, random_values(s.numel(), seed)), dtype);
  const auto x = oa::matrix::cast(mx, oa::DType::F32).to_vector();
  oa::TraceCapture trace(mx.engine());
  const Matrix y = oa::matrix::transpose(mx);
  const auto ops = trace.ops();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].name, "oa::matrix::transpose");
  auto dims = s.to_vector();
  std::swap(dims[dims.size() - 2], dims[dims.size() - 1]);
  EXPECT_EQ(y.shape(), Shape(dims));
  EXPECT_EQ(y.dtype(), dtype);
  const std::int64_t r = s.dim(-2), c = s.dim(-1), batch = r * c != 0 ? s.numel() / (r * c) : 0;
  const auto ref = oa::reference::transpose(x, batch, r, c);
  const auto got = oa::matrix::cast(y, oa::DType::F32).to_vector();
  ASSERT_EQ(got.size(), ref.size());
  for (std::size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], static_cast<float>(ref[i])) << "element " << i;
}

TEST(MatrixTranspose, Shapes) {
  check_transpose({1, 1}, 1);
  check_transpose({7, 129}, 2);
  check_transpose({33, 65}, 3);
  check_transpose({3, 17, 64}, 4);
  check_transpose({2, 2, 1, 33}, 5);
  check_transpose({0, 5}, 6);
}

TEST(MatrixTranspose, SeventyThousandItems) {
  check_transpose({70000, 2, 3}, 7);
}

// 16-bit: 64 x 32 tiles of two-element words where the row count R is even
// (partial tiles on both axes, batches, a single row pair), a strided copy
// where it is odd.
TEST(MatrixTranspose, SixteenBit) {
  for (oa::DType d : {oa::DType::F16, oa::DType::BF16}) {
    check_transpose({66, 34}, 8, d);
    check_transpose({3, 64, 33}, 9, d);
    check_transpose({2, 130, 97}, 10, d);
    check_transpose({5, 2, 1}, 11, d);
    check_transpose({7, 129}, 12, d);
    check_transpose({3, 33, 65}, 13, d);
    check_transpose({70000, 2, 3}, 14, d);
  }
}

}  // namespace
