// dropout and log_softmax against the f64 references, with gradient checks.
#include <limits>

#include "ml/nn_common.hpp"

namespace {

using namespace oa::nn_test;

constexpr float kInf = std::numeric_limits<float>::infinity();

TEST(NnDropout, MaskComesFromTheSeededPhiloxStream) {
  for (std::int64_t n : {1, 5, 1023, 4101}) {
    for (double p : {0.25, 0.5}) {
      SCOPED_TRACE(testing::Message() << "n " << n << " p " << p);
      const auto x = test_values(n, 3, 0.5, 2.0);  // nonzero, so a zero marks a dropped element
      const std::uint64_t seed = 0x123456789abcull + static_cast<std::uint64_t>(n);
      Matrix y;
      const auto ops = traced([&] { y = ml::dropout(Matrix::from_vector({n}, x), p, seed); });
      expect_trace(ops, {{"oa::ml::dropout", 1}});
      const auto got = y.to_vector();
      EXPECT_TRUE(oa_test::near(got, ref::dropout(f64(x), p, seed), 0, 1e-6));
      // The documented relation to Matrix::uniform with the same seed.
      const auto u = Matrix::uniform({n}, 0, 1, seed).to_vector();
      std::int64_t kept = 0;
      for (std::int64_t i = 0; i < n; ++i) {
        EXPECT_EQ(got[i] != 0.0f, u[i] >= p) << i;
        kept += got[i] != 0.0f;
      }
      if (n > 1000) {
        EXPECT_NEAR(double(kept) / double(n), 1 - p, 0.05);
      }
    }
  }
}

TEST(NnDropout, EvalIsIdentityAndEdgeProbabilities) {
  const Matrix x = Matrix::from_vector({6}, test_values(6, 1, 0.5, 1.0));
  const auto ops = traced([&] { EXPECT_TRUE(ml::dropout(x, 0.5, 1, false).same_as(x)); });
  EXPECT_TRUE(ops.empty());
  EXPECT_EQ(ml::dropout(x, 0.0, 7).to_vector(), x.to_vector());
  EXPECT_EQ(ml::dropout(x, 1.0, 7).to_vector(), std::vector<float>(6, 0.0f));
}

TEST(NnDropout, GradientRegeneratesTheMask) {
  gradcheck({random_input({3, 37}, 5)}, [](const std::vector<Matrix>& in) { return ml::dropout(in[0], 0.25, 99); },
            [](const std::vector<std::vector<double>>& in) { return ref::dropout(in[0], 0.25, 99); });
  const Matrix x = Matrix::from_vector({10}, test_values(10, 6));
  oa::set_requires_grad(x);
  const Matrix y = ml::dropout(x, 0.5, 3);
  expect_trace(traced([&] { oa::backward(y, Matrix::ones({10})); }), {{"oa::ml::dropout backward", 1}});
}

TEST(NnDropout, InvalidArgumentsRecordNothing) {
  const Matrix x = Matrix::zeros({4});
  expect_invalid([&] { ml::dropout(x, 1.5, 1); }, "oa::ml::dropout", {"p"});
  expect_invalid([&] { ml::dropout(x, -0.1, 1); }, "oa::ml::dropout", {"p"});
  expect_invalid([&] { ml::dropout(Matrix(), 0.1, 1); }, "oa::ml::dropout", {"x"});
}

TEST(NnLogSoftmax, ForwardIsStableForRowsOfAnyLength) {
  for (std::int64_t L : {1, 2, 9, 256, 1000, 5000}) {
    SCOPED_TRACE(testing::Message() << "L " << L);
    auto x = test_values(3 * L, 7 + L, -30.0, 30.0);
    x[0] = 80.0f;  // exp overflows without the max shift
    Matrix y;
    const auto ops = traced([&] { y = ml::log_softmax(Matrix::from_vector({3, L}, x)); });
    expect_trace(ops, {{"oa::ml::log_softmax", 1}});
    EXPECT_TRUE(oa_test::near(y.to_vector(), ref::log_softmax(f64(x), L), 2e-5, 2e-6));
  }
}

TEST(NnLogSoftmax, NoRowsBesideAVeryLongAxis) {
  // No rows of 2^62 columns: no work, sized without overflow (the sanitizer build checks).
  const Matrix y = ml::log_softmax(Matrix::zeros({0, std::int64_t{1} << 62}));
  EXPECT_EQ(y.shape(), oa::Shape({0, std::int64_t{1} << 62}));
}

TEST(NnLogSoftmax, Gradients) {
  for (std::int64_t L : {1, 6, 300}) {
    SCOPED_TRACE(testing::Message() << "L " << L);
    gradcheck({random_input({2, 2, L}, 11, -3, 3)}, [](const std::vector<Matrix>& in) { return ml::log_softmax(in[0]); },
              [L](const std::vector<std::vector<double>>& in) { return ref::log_softmax(in[0], L); });
  }
}

TEST(NnLogSoftmax, LargeCommonOffsetsMatchTheReference) {
  // log_softmax is shift-invariant: (x - max) - log(sum) keeps the row's
  // spread, where x - (max + log(sum)) rounds log(sum) away next to the max.
  for (std::int64_t L : {2, 7, 300}) {
    for (double offset : kOffsets) {
      SCOPED_TRACE(testing::Message() << "L " << L << " offset " << offset);
      auto x = offset_values(3 * L, offset, 4, 30 + L);
      for (std::int64_t j = 0; j < L; ++j) x[j] = static_cast<float>(offset);  // a row of ties: -log(L) each
      const Matrix mx = Matrix::from_vector({3, L}, x);
      oa::set_requires_grad(mx);
      const Matrix y = ml::log_softmax(mx);
      EXPECT_TRUE(oa_test::near(y.to_vector(), ref::log_softmax(f64(x), L), 2e-5, 2e-6)) << "forward";
      const auto w = test_values(3 * L, 31);
      oa::backward(y, Matrix::from_vector({3, L}, w));
      EXPECT_TRUE(oa_test::near(oa::grad(mx).to_vector(), ref::log_softmax_backward(f64(x), f64(w), L), 1e-5, 1e-4)) << "gradient";
      if (offset <= 1e4)  // the f64 finite differences resolve the row at this offset
        gradcheck({{Shape{3, L}, x}}, [](const std::vector<Matrix>& in) { return ml::log_softmax(in[0]); },
                  [L](const std::vector<std::vector<double>>& in) { return ref::log_softmax(in[0], L); });
    }
  }
}

// 256 lanes keep 1..16 slots of 4 columns of a row in registers and fold
// the rest online (common/row_slots.glsl): rows at the slot sizes +- 1 and of
// vocabularies, aligned (L % 4 == 0, vec4 loads) or not. Row 0 holds a NaN
// past the slots, row 1 -inf every third element, row 2 only -inf, row 3 a
// logit that overflows exp without the max shift.
TEST(NnLogSoftmax, LongRowsFoldTheirTailOnline) {
  for (std::int64_t L : {3, 4, 5, 1023, 1025, 4097, 16383, 16384, 16385, 32000, 50257, 128256}) {
    SCOPED_TRACE(testing::Message() << "L " << L);
    auto x = test_values(4 * L, 40 + L, -6.0, 6.0);
    x[static_cast<std::size_t>(L - 1)] = kNaN;
    for (std::int64_t j = 0; j < L; ++j) {
      if (j % 3 == 0) x[static_cast<std::size_t>(L + j)] = -kInf;
      x[static_cast<std::size_t>(2 * L + j)] = -kInf;
    }
    x[static_cast<std::size_t>(3 * L + L / 2)] = 90.0f;
    const Matrix mx = Matrix::from_vector({4, L}, x);
    oa::set_requires_grad(mx);
    const Matrix y = ml::log_softmax(mx);
    EXPECT_TRUE(oa_test::near(y.to_vector(), ref::log_softmax(f64(x), L), 2e-5, 2e-6)) << "forward";
    const auto w = test_values(4 * L, 41);
    oa::backward(y, Matrix::from_vector({4, L}, w));
    EXPECT_TRUE(oa_test::near(oa::grad(mx).to_vector(), ref::log_softmax_backward(f64(x), f64(w), L), 1e-5, 1e-4)) << "gradient";
  }
}

// Rows of 9 reduce within a subgroup; rows of 300 across subgroups (256 lanes).
TEST(NnLogSoftmax, NanInARowMakesThatRowNan) {
  for (const std::int64_t L : {9, 300}) {
    SCOPED_TRACE(testing::Message() << "L " << L);
    auto x = test_values(4 * L, 32);
    x[0] = kNaN;              // row 0: at the start
    x[2 * L + L / 2] = kNaN;  // row 2: inside, after a larger value
    x[2 * L + 1] = 1e30f;
    const Matrix mx = Matrix::from_vector({4, L}, x);
    oa::set_requires_grad(mx);
    const Matrix y = ml::log_softmax(mx);
    expect_nan_rows(y.to_vector(), L, {0, 2}, "y");
    oa::backward(y, Matrix::from_vector({4, L}, test_values(4 * L, 33)));
    expect_nan_rows(oa::grad(mx).to_vector(), L, {0, 2}, "dx");
  }
}

// The row kernels' lowering cuts rows into dispatches whose windows fit the
// device's maxStorageBufferRange (128 MiB on lavapipe): 2^25 + 2^14 elements
// of log_softmax, checked on the rows next to each cut.
TEST(NnLogSoftmax, RowsPastStorageBufferRangeAreCut) {
  const std::int64_t L = 1024, R = (std::int64_t{1} << 15) + 16;
  std::vector<float> x(static_cast<std::size_t>(R * L));
  for (std::int64_t i = 0; i < R * L; ++i) x[i] = static_cast<float>((i * 7919) % 1009) * 0.01f;
  const Matrix mx = Matrix::from_vector({R, L}, x);
  Matrix y;
  const auto ops = traced([&] { y = ml::log_softmax(mx); });
  const auto range = static_cast<std::int64_t>(mx.engine().device().max_storage_buffer_range);
  const std::int64_t per = R * L * 4 <= range ? R : range / (L * 4) / 64 * 64;
  expect_trace(ops, {{"oa::ml::log_softmax", static_cast<std::uint32_t>((R + per - 1) / per)}});
  const auto got = y.to_vector();
  for (std::int64_t r : {std::int64_t{0}, per - 1, std::min(per, R - 1), R - 1}) {
    SCOPED_TRACE(testing::Message() << "row " << r);
    const std::vector<float> row(x.begin() + r * L, x.begin() + (r + 1) * L), out(got.begin() + r * L, got.begin() + (r + 1) * L);
    EXPECT_TRUE(oa_test::near(out, ref::log_softmax(f64(row), L), 1e-5, 1e-5));
  }
}

TEST(NnLogSoftmax, FullyMaskedRowsGiveMinusInfinityAndZeroGradient) {
  // Row 0 fully masked, row 1 partly masked.
  const std::vector<float> x = {-kInf, -kInf, -kInf, 0.5f, -kInf, 1.5f};
  const Matrix mx = Matrix::from_vector({2, 3}, x);
  oa::set_requires_grad(mx);
  const Matrix y = ml::log_softmax(mx);
  const auto got = y.to_vector();
  for (int j = 0; j < 3; ++j) EXPECT_EQ(got[j], -kInf);
  EXPECT_TRUE(oa_test::near({got[3], got[5]}, {0.5 - std::log(std::exp(0.5) + std::exp(1.5)), 1.5 - std::log(std::exp(0.5) + std::exp(1.5))},
                            1e-6, 1e-6));
  oa::backward(y, Matrix::from_vector({2, 3}, std::vector<float>{1, 2, 3, 1, 1, 1}));
  const auto g = oa::grad(mx).to_vector();
  for (int j = 0; j < 3; ++j) EXPECT_EQ(g[j], 0.0f);
  for (float v : g) EXPECT_FALSE(std::isnan(v));
}

TEST(NnLogSoftmax, InvalidArgumentsRecordNothing) {
  expect_invalid([] { ml::log_softmax(Matrix::zeros({})); }, "oa::ml::log_softmax", {"rank"});
  expect_invalid([] { ml::log_softmax(Matrix::from_i32({2}, std::vector<std::int32_t>{1, 2})); }, "oa::ml::log_softmax", {"f32"});
  // Along an axis other than the last: refused before the transpose, in the user's op and shape.
  const Matrix i32 = Matrix::from_i32({2, 3, 4}, std::vector<std::int32_t>(24, 1));
  expect_invalid([&] { ml::log_softmax(i32, 0); }, "oa::ml::log_softmax", {"x must be f32, f16 or bf16; found i32 [2, 3, 4]"});
  expect_invalid([&] { ml::softmax(i32, 0); }, "oa::ml::softmax", {"x must be f32, f16 or bf16; found i32 [2, 3, 4]"});
  expect_invalid([] { ml::softmax(Matrix::zeros({2, 3, 4}), 3); }, "oa::ml::softmax", {"dim", "[2, 3, 4]"});
}

}  // namespace
