// layer_norm, rms_norm and batch_norm_2d against the f64 references, with gradient checks.
#include "ml/nn_common.hpp"

namespace {

using namespace oa::nn_test;

TEST(NnLayerNorm, ForwardMatchesReferenceForShortAndLongRows) {
  // Row lengths around the lane choices (1, odd, one workgroup, several strides).
  for (std::int64_t D : {1, 3, 17, 256, 700}) {
    for (bool affine : {true, false}) {
      SCOPED_TRACE(testing::Message() << "D " << D << " affine " << affine);
      const Shape shape{2, 3, D};
      const auto x = test_values(shape.numel(), 3 + D, -2.0, 3.0);
      const auto w = test_values(D, 5), b = test_values(D, 6);
      const Matrix mx = Matrix::from_vector(shape, x);
      const Matrix mw = affine ? Matrix::from_vector({D}, w) : Matrix(), mb = affine ? Matrix::from_vector({D}, b) : Matrix();
      Matrix y;
      const auto ops = traced([&] { y = ml::layer_norm(mx, mw, mb, 1e-5); });
      expect_trace(ops, {{"oa::ml::layer_norm", 1}});
      EXPECT_EQ(ops[0].inputs.size(), affine ? 3u : 1u);
      EXPECT_TRUE(y.shape() == shape);
      const auto want = ref::layer_norm(f64(x), D, affine ? f64(w) : std::vector<double>{}, affine ? f64(b) : std::vector<double>{}, 1e-5);
      EXPECT_TRUE(oa_test::near(y.to_vector(), want, 2e-5, 1e-4));
    }
  }
}

TEST(NnLayerNorm, GradientsForInputWeightAndBias) {
  for (std::int64_t D : {1, 5, 300}) {
    SCOPED_TRACE(testing::Message() << "D " << D);
    gradcheck({random_input({3, D}, 11, -2, 2), random_input({D}, 12), random_input({D}, 13)},
              [](const std::vector<Matrix>& in) { return ml::layer_norm(in[0], in[1], in[2], 1e-5); },
              [D](const std::vector<std::vector<double>>& in) { return ref::layer_norm(in[0], D, in[1], in[2], 1e-5); });
  }
  // Only some inputs need gradients; without weight and bias.
  gradcheck({random_input({2, 2, 7}, 14), random_input({7}, 15, -1, 1, false), random_input({7}, 16)},
            [](const std::vector<Matrix>& in) { return ml::layer_norm(in[0], in[1], in[2], 1e-3); },
            [](const std::vector<std::vector<double>>& in) { return ref::layer_norm(in[0], 7, in[1], in[2], 1e-3); });
  gradcheck({random_input({4, 9}, 17)}, [](const std::vector<Matrix>& in) { return ml::layer_norm(in[0], Matrix(), Matrix()); },
            [](const std::vector<std::vector<double>>& in) { return ref::layer_norm(in[0], 9, {}, {}, 1e-5); });
  gradcheck({random_input({4, 6}, 18, -1, 1, false), random_input({6}, 19), random_input({6}, 20)},
            [](const std::vector<Matrix>& in) { return ml::layer_norm(in[0], in[1], in[2]); },
            [](const std::vector<std::vector<double>>& in) { return ref::layer_norm(in[0], 6, in[1], in[2], 1e-5); });
}

TEST(NnRmsNorm, ForwardMatchesReferenceForShortAndLongRows) {
  for (std::int64_t D : {1, 3, 17, 256, 700}) {
    for (bool affine : {true, false}) {
      SCOPED_TRACE(testing::Message() << "D " << D << " affine " << affine);
      const Shape shape{2, 3, D};
      const auto x = test_values(shape.numel(), 7 + D, -2.0, 3.0);
      const auto w = test_values(D, 8);
      const Matrix mx = Matrix::from_vector(shape, x), mw = affine ? Matrix::from_vector({D}, w) : Matrix();
      Matrix y;
      const auto ops = traced([&] { y = ml::rms_norm(mx, mw, 1e-6); });
      expect_trace(ops, {{"oa::ml::rms_norm", 1}});
      EXPECT_EQ(ops[0].inputs.size(), affine ? 2u : 1u);
      EXPECT_EQ(ops[0].outputs.size(), 1u);
      EXPECT_TRUE(y.shape() == shape);
      EXPECT_TRUE(oa_test::near(y.to_vector(), ref::rms_norm(f64(x), D, affine ? f64(w) : std::vector<double>{}, 1e-6), 2e-5, 1e-4));
    }
  }
  // Without eps: float32's machine epsilon, as torch.nn.functional.rms_norm.
  const auto x = test_values(12, 9);
  EXPECT_TRUE(oa_test::near(ml::rms_norm(Matrix::from_vector({3, 4}, x)).to_vector(),
                            ref::rms_norm(f64(x), 4, {}, std::numeric_limits<float>::epsilon()), 2e-5, 1e-4));
}

TEST(NnRmsNorm, GradientsForInputAndWeight) {
  for (std::int64_t D : {1, 5, 300}) {
    SCOPED_TRACE(testing::Message() << "D " << D);
    gradcheck({random_input({3, D}, 21, -2, 2), random_input({D}, 22)},
              [](const std::vector<Matrix>& in) { return ml::rms_norm(in[0], in[1], 1e-5); },
              [D](const std::vector<std::vector<double>>& in) { return ref::rms_norm(in[0], D, in[1], 1e-5); });
  }
  gradcheck({random_input({2, 2, 7}, 23)}, [](const std::vector<Matrix>& in) { return ml::rms_norm(in[0], Matrix(), 1e-3); },
            [](const std::vector<std::vector<double>>& in) { return ref::rms_norm(in[0], 7, {}, 1e-3); });
  gradcheck({random_input({4, 6}, 24, -1, 1, false), random_input({6}, 25)},
            [](const std::vector<Matrix>& in) { return ml::rms_norm(in[0], in[1], 1e-5); },
            [](const std::vector<std::vector<double>>& in) { return ref::rms_norm(in[0], 6, in[1], 1e-5); });
}

TEST(NnRmsNorm, BadArgumentsNameTheOpAndRecordNothing) {
  const Matrix x = Matrix::zeros({2, 4});
  const auto ops = traced([&] {
    EXPECT_TRUE(oa_test::throws([&] { ml::rms_norm(x, Matrix::ones({3})); }, oa::ErrorKind::InvalidArgument,
                                {"oa::ml::rms_norm", "weight", "[3]"}));
    EXPECT_TRUE(oa_test::throws([&] { ml::rms_norm(x, Matrix(), -1.0); }, oa::ErrorKind::InvalidArgument, {"oa::ml::rms_norm", "eps"}));
    EXPECT_TRUE(oa_test::throws([&] { ml::rms_norm(Matrix::zeros({})); }, oa::ErrorKind::InvalidArgument, {"oa::ml::rms_norm", "rank"}));
    EXPECT_TRUE(oa_test::throws([&] { ml::rms_norm(Matrix::from_i32({2}, std::vector<std::int32_t>{1, 2})); },
                                oa::ErrorKind::InvalidArgument, {"oa::ml::rms_norm", "x", "f32", "i32"}));
    EXPECT_TRUE(oa_test::throws([&] { ml::rms_norm(Matrix()); }, oa::ErrorKind::InvalidArgument, {"oa::ml::rms_norm", "x"}));
  });
  EXPECT_TRUE(ops.empty());
}

// Offsets and spreads (in f32 ulps of the offset) for the normalisation tests:
// at 1e30 every f32 spread has a variance past FLT_MAX, so those rows are constant.
double norm_spread(double offset) { return offset == 1e30 ? 0.0 : 4.0; }

TEST(NnLayerNorm, LargeCommonOffsetsMatchTheReference) {
  // The statistics are taken about a value of the row, so the offset cancels
  // before anything is rounded at its magnitude.
  for (std::int64_t D : {3, 17, 96, 300, 1000, 16388}) {
    for (double offset : kOffsets) {
      SCOPED_TRACE(testing::Message() << "D " << D << " offset " << offset);
      const std::int64_t R = 4;
      auto x = offset_values(R * D, offset, norm_spread(offset), 60 + D);
      for (std::int64_t j = 0; j < D; ++j) x[j] = static_cast<float>(offset);  // a constant row: y = bias
      const auto w = test_values(D, 61), b = test_values(D, 62), dy = test_values(R * D, 63);
      const Matrix mx = Matrix::from_vector({R, D}, x), mw = Matrix::from_vector({D}, w), mb = Matrix::from_vector({D}, b);
      for (const auto& m : {mx, mw, mb}) oa::set_requires_grad(m);
      const Matrix y = ml::layer_norm(mx, mw, mb, 1e-5);
      EXPECT_TRUE(oa_test::near(y.to_vector(), ref::layer_norm(f64(x), D, f64(w), f64(b), 1e-5), 1e-4, 1e-4)) << "forward";
      oa::backward(y, Matrix::from_vector({R, D}, dy));
      const auto want = ref::layer_norm_backward(f64(x), D, f64(w), f64(dy), 1e-5);
      EXPECT_TRUE(oa_test::near(oa::grad(mx).to_vector(), want.dx, 1e-4 * max_abs(want.dx), 1e-3)) << "dx";
      EXPECT_TRUE(oa_test::near(oa::grad(mw).to_vector(), want.dweight, 1e-4, 1e-3)) << "dweight";
      EXPECT_TRUE(oa_test::near(oa::grad(mb).to_vector(), want.dbias, 1e-5, 1e-5)) << "dbias";
    }
  }
}

TEST(NnLayerNorm, WideSpreadsStayFinite) {
  // Rows spread over +-1e18 (squares near 1e36, their sum over D past FLT_MAX,
  // the mean of the squares not), every D: scalar and vec4 items, and items
  // past the register cache (D 16388). rms_norm likewise, its rows' values
  // the squares.
  for (std::int64_t D : {9, 1000, 16388}) {
    SCOPED_TRACE(testing::Message() << "D " << D);
    const std::int64_t R = 3;
    auto x = test_values(R * D, 67);
    for (float& v : x) v *= 1e18f;
    const Matrix mx = Matrix::from_vector({R, D}, x);
    const auto w = test_values(D, 68);
    const Matrix mw = Matrix::from_vector({D}, w);
    EXPECT_TRUE(oa_test::near(ml::layer_norm(mx, mw, Matrix(), 1e-5).to_vector(), ref::layer_norm(f64(x), D, f64(w), std::vector<double>(D), 1e-5),
                              1e-4, 1e-4))
        << "layer_norm";
    EXPECT_TRUE(oa_test::near(ml::rms_norm(mx, mw, 1e-5).to_vector(), ref::rms_norm(f64(x), D, f64(w), 1e-5), 1e-4, 1e-4)) << "rms_norm";
  }
  // Past the limit (a spread of 5e37: its square past FLT_MAX) the row gives
  // 0 or NaN, never finite garbage, whichever item is the large one.
  for (const std::int64_t at : {0, 8}) {
    std::vector<float> x(9, 0.0f);
    x[static_cast<std::size_t>(at)] = 5e37f;
    const Matrix mx = oa::set_requires_grad(Matrix::from_vector({1, 9}, x));
    const Matrix y = ml::layer_norm(mx, Matrix(), Matrix(), 1e-5);
    oa::backward(y, Matrix::ones({1, 9}));
    for (const auto& values : {y.to_vector(), oa::grad(mx).to_vector()})
      for (const float v : values) EXPECT_TRUE(v == 0.0f || std::isnan(v)) << "at " << at << ": " << v;
  }
}

TEST(NnLayerNorm, NanInARowMakesThatRowNan) {
  // Scalar and vec4 items, and a NaN in the part of a row past the register cache (D 16388).
  for (std::int64_t D : {9, 8, 1000, 16388}) {
    SCOPED_TRACE(testing::Message() << "D " << D);
    const std::int64_t R = 4;
    auto x = test_values(R * D, 64);
    x[0] = kNaN;              // row 0: at the start (the shift)
    x[2 * D + D - 2] = kNaN;  // row 2: inside
    const Matrix mx = Matrix::from_vector({R, D}, x);
    oa::set_requires_grad(mx);
    const Matrix y = ml::layer_norm(mx, Matrix::from_vector({D}, test_values(D, 65)), Matrix::from_vector({D}, test_values(D, 66)));
    expect_nan_rows(y.to_vector(), D, {0, 2}, "y");
    oa::backward(y, Matrix::from_vector({R, D}, test_values(R * D, 67)));
    expect_nan_rows(oa::grad(mx).to_vector(), D, {0, 2}, "dx");
  }
}

// Row lengths that reach every path of the row kernels (ml/nn/norm_row.glsl):
// scalar items (D % 4 != 0) and vec4 items, one lane a row up to a whole
// workgroup, rows inside the register cache and past it (16385, 16388: the
// rest re-read).
constexpr std::int64_t kRowLengths[] = {1, 3, 8, 96, 768, 1000, 1001, 4100, 12288, 16385, 16388};
// The absolute tolerance of dx there: its terms are O(1) (x in [-2, 3), dy
// in [-1, 1)), and where they cancel (D = 1, 3) dx is mere rounding of them.
constexpr double kDxAtol = 1e-5;

// The forward pass and every gradient against the f64 references, for R = 1
// and R = 37 (not a multiple of the rows a workgroup serves), with and without
// weight and bias.
TEST(NnLayerNorm, EveryRowPathMatchesTheReference) {
  for (std::int64_t D : kRowLengths)
    for (std::int64_t R : {1, 37})
      for (bool affine : {true, false}) {
        SCOPED_TRACE(testing::Message() << "R " << R << " D " << D << " affine " << affine);
        const auto x = test_values(R * D, 70 + D, -2.0, 3.0), w = test_values(D, 71, 0.5, 1.5), b = test_values(D, 72);
        const auto dy = test_values(R * D, 73);
        const Matrix mx = Matrix::from_vector({R, D}, x);
        const Matrix mw = affine ? Matrix::from_vector({D}, w) : Matrix(), mb = affine ? Matrix::from_vector({D}, b) : Matrix();
        for (const auto& m : {mx, mw, mb})
          if (m.defined()) oa::set_requires_grad(m);
        const Matrix y = ml::layer_norm(mx, mw, mb, 1e-5);
        const auto fw = affine ? f64(w) : std::vector<double>{};
        EXPECT_TRUE(
            oa_test::near(y.to_vector(), ref::layer_norm(f64(x), D, fw, affine ? f64(b) : std::vector<double>{}, 1e-5), 2e-5, 1e-4));
        oa::backward(y, Matrix::from_vector({R, D}, dy));
        const auto want = ref::layer_norm_backward(f64(x), D, fw, f64(dy), 1e-5);
        EXPECT_TRUE(oa_test::near(oa::grad(mx).to_vector(), want.dx, kDxAtol, 1e-3)) << "dx";
        if (!affine) continue;
        EXPECT_TRUE(oa_test::near(oa::grad(mw).to_vector(), want.dweight, 1e-4, 1e-3)) << "dweight";
        EXPECT_TRUE(oa_test::near(oa::grad(mb).to_vector(), want.dbias, 1e-4, 1e-4)) << "dbias";
      }
}

TEST(NnRmsNorm, EveryRowPathMatchesTheReference) {
  for (std::int64_t D : kRowLengths)
    for (std::int64_t R : {1, 37})
      for (bool affine : {true, false}) {
        SCOPED_TRACE(testing::Message() << "R " << R << " D " << D << " weight " << affine);
        const auto x = test_values(R * D, 80 + D, -2.0, 3.0), w = test_values(D, 81, 0.5, 1.5), dy = test_values(R * D, 82);
        const Matrix mx = Matrix::from_vector({R, D}, x), mw = affine ? Matrix::from_vector({D}, w) : Matrix();
        oa::set_requires_grad(mx);
        if (affine) oa::set_requires_grad(mw);
        const Matrix y = ml::rms_norm(mx, mw, 1e-6);
        const auto fw = affine ? f64(w) : std::vector<double>{};
        EXPECT_TRUE(oa_test::near(y.to_vector(), ref::rms_norm(f64(x), D, fw, 1e-6), 2e-5, 1e-4));
        oa::backward(y, Matrix::from_vector({R, D}, dy));
        const auto want = ref::rms_norm_backward(f64(x), D, fw, f64(dy), 1e-6);
        EXPECT_TRUE(oa_test::near(oa::grad(mx).to_vector(), want.dx, kDxAtol, 1e-3)) << "dx";
        if (affine) {
          EXPECT_TRUE(oa_test::near(oa::grad(mw).to_vector(), want.dweight, 1e-4, 1e-3)) << "dweight";
        }
      }
}

// Weight and bias gradients by finite differences over rows enough for several
// slabs of layer_norm_backward_affine.comp: vec4 and scalar items, one and
// several column blocks, and group_norm's per-channel sums (S = 6 with D % 4
// == 0, S = 4: vec4 items in the forward pass too, S = 1).
TEST(NnLayerNorm, WeightAndBiasGradientsOverManySlabs) {
  for (const Shape& shape : {Shape{2000, 8}, Shape{300, 96}, Shape{70, 1000}, Shape{100, 1001}}) {
    const std::int64_t D = shape.cols();
    SCOPED_TRACE(fmt::format("layer_norm {}", shape));
    gradcheck(
        {random_input(shape, 90, -2, 2, false), random_input({D}, 91, 0.5, 1.5), random_input({D}, 92)},
        [](const std::vector<Matrix>& in) { return ml::layer_norm(in[0], in[1], in[2], 1e-5); },
        [D](const std::vector<std::vector<double>>& in) { return ref::layer_norm(in[0], D, in[1], in[2], 1e-5); });
    SCOPED_TRACE("rms_norm");
    gradcheck(
        {random_input(shape, 93, -2, 2, false), random_input({D}, 94, 0.5, 1.5)},
        [](const std::vector<Matrix>& in) { return ml::rms_norm(in[0], in[1], 1e-5); },
        [D](const std::vector<std::vector<double>>& in) { return ref::rms_norm(in[0], D, in[1], 1e-5); });
  }
  for (const Shape& shape : {Shape{300, 4, 6}, Shape{600, 4, 2, 2}, Shape{3000, 4}}) {
    SCOPED_TRACE(fmt::format("group_norm {}", shape));
    const std::int64_t N = shape[0], C = shape[1], S = shape.numel() / (N * C);
    gradcheck(
        {random_input(shape, 95, -2, 2, false), random_input({C}, 96, 0.5, 1.5), random_input({C}, 97)},
        [](const std::vector<Matrix>& in) { return ml::group_norm(in[0], 2, in[1], in[2], 1e-5); },
        [N, C, S](const std::vector<std::vector<double>>& in) { return ref::group_norm(in[0], N, C, S, 2, in[1], in[2], 1e-5); });
  }
}

TEST(NnLayerNorm, BackwardIsOneSemanticOp) {
  const Matrix x = Matrix::from_vector({5, 8}, test_values(40, 21)), w = Matrix::ones({8}), b = Matrix::zeros({8});
  for (const auto& m : {x, w, b}) oa::set_requires_grad(m);
  const Matrix y = ml::layer_norm(x, w, b);
  const auto ops = traced([&] { oa::backward(y, Matrix::ones({5, 8})); });
  // dx, then the weight and bias gradients: 5 rows make one slab, whose sums are the gradients.
  expect_trace(ops, {{"oa::ml::layer_norm backward", 2}});
}

TEST(NnLayerNorm, InvalidArgumentsRecordNothing) {
  const Matrix x = Matrix::zeros({2, 4});
  expect_invalid([&] { ml::layer_norm(x, Matrix::ones({3}), Matrix()); }, "oa::ml::layer_norm", {"weight", "[3]", "[2, 4]"});
  expect_invalid([&] { ml::layer_norm(x, Matrix(), Matrix::ones({4, 1})); }, "oa::ml::layer_norm", {"bias"});
  expect_invalid([&] { ml::layer_norm(Matrix::zeros({}), Matrix(), Matrix()); }, "oa::ml::layer_norm", {"x", "rank"});
  expect_invalid([&] { ml::layer_norm(Matrix::zeros({2, 0}), Matrix(), Matrix()); }, "oa::ml::layer_norm", {"x"});
  expect_invalid([&] { ml::layer_norm(x, Matrix(), Matrix(), -1.0); }, "oa::ml::layer_norm", {"eps"});
  expect_invalid([&] { ml::layer_norm(Matrix::from_i32({2}, std::vector<std::int32_t>{1, 2}), Matrix(), Matrix()); },
                 "oa::ml::layer_norm", {"f32"});
}

struct BnCase {
  std::int64_t N, C, H, W;
};

TEST(NnBatchNorm, TrainingNormalisesWithBatchStatisticsAndUpdatesRunningStatistics) {
  for (const BnCase c : {BnCase{2, 3, 4, 5}, BnCase{1, 2, 3, 1}, BnCase{7, 1, 1, 1}, BnCase{3, 4, 9, 9}}) {
    SCOPED_TRACE(testing::Message() << "NCHW " << c.N << " " << c.C << " " << c.H << " " << c.W);
    const Shape shape{c.N, c.C, c.H, c.W};
    const auto x = test_values(shape.numel(), 31, -1.0, 4.0);
    const auto w = test_values(c.C, 32), b = test_values(c.C, 33), rm0 = test_values(c.C, 34), rv0 = test_values(c.C, 35, 0.5, 2.0);
    const Matrix mrm = Matrix::from_vector({c.C}, rm0), mrv = Matrix::from_vector({c.C}, rv0);
    const auto v_mean = mrm.version(), v_var = mrv.version();
    Matrix y;
    const auto ops = traced([&] {
      y = ml::batch_norm_2d(Matrix::from_vector(shape, x), Matrix::from_vector({c.C}, w), Matrix::from_vector({c.C}, b), mrm, mrv, true,
                            0.2, 1e-4);
    });
    ASSERT_EQ(ops.size(), 1u);
    EXPECT_EQ(ops[0].label(), "oa::ml::batch_norm_2d");
    EXPECT_EQ(ops[0].inputs.size(), 5u);
    EXPECT_GT(mrm.version(), v_mean);
    EXPECT_GT(mrv.version(), v_var);
    std::vector<double> rm = f64(rm0), rv = f64(rv0);
    const auto want = ref::batch_norm_2d(f64(x), c.N, c.C, c.H * c.W, f64(w), f64(b), &rm, &rv, true, 0.2, 1e-4);
    EXPECT_TRUE(oa_test::near(y.to_vector(), want, 3e-5, 2e-4));
    EXPECT_TRUE(oa_test::near(mrm.to_vector(), rm, 1e-6, 1e-5)) << "running_mean";
    EXPECT_TRUE(oa_test::near(mrv.to_vector(), rv, 1e-6, 1e-5)) << "running_var";
  }
}

TEST(NnBatchNorm, TrainingStatisticsWithLargeCommonOffsetsMatchTheReference) {
  const BnCase c{3, 2, 3, 5};
  const Shape shape{c.N, c.C, c.H, c.W};
  const std::int64_t S = c.H * c.W;
  for (double offset : kOffsets) {
    SCOPED_TRACE(testing::Message() << "offset " << offset);
    const auto x = offset_values(shape.numel(), offset, norm_spread(offset), 70);
    const auto w = test_values(c.C, 71), b = test_values(c.C, 72), dy = test_values(shape.numel(), 73);
    const Matrix mx = Matrix::from_vector(shape, x), mw = Matrix::from_vector({c.C}, w), mb = Matrix::from_vector({c.C}, b);
    for (const auto& m : {mx, mw, mb}) oa::set_requires_grad(m);
    const Matrix mrm = Matrix::zeros({c.C}), mrv = Matrix::ones({c.C});
    const Matrix y = ml::batch_norm_2d(mx, mw, mb, mrm, mrv, true, 0.1, 1e-5);
    std::vector<double> rm(c.C, 0.0), rv(c.C, 1.0);
    EXPECT_TRUE(oa_test::near(y.to_vector(), ref::batch_norm_2d(f64(x), c.N, c.C, S, f64(w), f64(b), &rm, &rv, true, 0.1, 1e-5), 1e-4, 1e-4))
        << "forward";
    EXPECT_TRUE(oa_test::near(mrm.to_vector(), rm, 1e-6, 1e-5)) << "running_mean";
    EXPECT_TRUE(oa_test::near(mrv.to_vector(), rv, 1e-6, 1e-4)) << "running_var";
    oa::backward(y, Matrix::from_vector(shape, dy));
    const auto want = ref::batch_norm_2d_backward(f64(x), c.N, c.C, S, f64(w), f64(dy), 1e-5);
    EXPECT_TRUE(oa_test::near(oa::grad(mx).to_vector(), want.dx, 1e-4 * max_abs(want.dx), 1e-3)) << "dx";
    EXPECT_TRUE(oa_test::near(oa::grad(mw).to_vector(), want.dweight, 1e-4, 1e-3)) << "dweight";
    EXPECT_TRUE(oa_test::near(oa::grad(mb).to_vector(), want.dbias, 1e-5, 1e-5)) << "dbias";
  }
}

TEST(NnBatchNorm, NanInAChannelMakesThatChannelNanInTraining) {
  const std::int64_t N = 2, C = 3, S = 4;
  auto x = test_values(N * C * S, 74);
  x[2 * S + 1] = kNaN;  // n 0, channel 2
  const Matrix mx = Matrix::from_vector({N, C, 2, 2}, x), mrm = Matrix::zeros({C}), mrv = Matrix::ones({C});
  oa::set_requires_grad(mx);
  const Matrix y = ml::batch_norm_2d(mx, Matrix(), Matrix(), mrm, mrv, true);
  // Rows of length S: (n, c) planes; channel 2 is planes 2 and 5.
  expect_nan_rows(y.to_vector(), S, {2, 5}, "y");
  expect_nan_rows(mrm.to_vector(), 1, {2}, "running_mean");
  oa::backward(y, Matrix::from_vector({N, C, 2, 2}, test_values(N * C * S, 75)));
  expect_nan_rows(oa::grad(mx).to_vector(), S, {2, 5}, "dx");
}

// num_batches_tracked is incremented by the training op on the GPU (no extra
// dispatch), and momentum nullopt takes 1 / its new value: the running
// statistics become the average of the batches' (300 channels: more than
// the statistics kernel's one workgroup of 256 invocations).
TEST(NnBatchNorm, TrainingCountsBatchesOnTheGpuAndMomentumNoneAverages) {
  const std::int64_t N = 2, C = 300, S = 4;
  const Shape shape{N, C, 2, 2};
  const Matrix mrm = Matrix::zeros({C}), mrv = Matrix::ones({C});
  const Matrix count = Matrix::from_i32(Shape{}, std::vector<std::int32_t>{4});
  std::vector<double> rm(C, 0.0), rv(C, 1.0);
  std::vector<oa::SemanticOp> with_count, without_count;
  for (int b = 0; b < 3; ++b) {
    const auto x = test_values(shape.numel(), 80 + b, -1.0, 3.0);
    const auto version = count.version();
    const auto ops = traced([&] { ml::batch_norm_2d(Matrix::from_vector(shape, x), Matrix(), Matrix(), mrm, mrv, true, std::nullopt, 1e-5, count); });
    EXPECT_GT(count.version(), version);
    if (b == 0) with_count = ops;
    ref::batch_norm_2d(f64(x), N, C, S, {}, {}, &rm, &rv, true, 1.0 / (5 + b), 1e-5);
  }
  EXPECT_EQ(count.to_i32(), std::vector<std::int32_t>{7});
  EXPECT_TRUE(oa_test::near(mrm.to_vector(), rm, 1e-6, 1e-5)) << "running_mean";
  EXPECT_TRUE(oa_test::near(mrv.to_vector(), rv, 1e-6, 1e-5)) << "running_var";
  ASSERT_EQ(with_count.size(), 1u);
  EXPECT_EQ(with_count[0].inputs.size(), 4u);  // x, running_mean, running_var, num_batches_tracked
  without_count = traced([&] { ml::batch_norm_2d(Matrix::ones(shape), Matrix(), Matrix(), mrm, mrv, true, 0.1); });
  EXPECT_EQ(with_count[0].dispatches, without_count[0].dispatches);
  // Eval leaves the count as it is.
  ml::batch_norm_2d(Matrix::ones(shape), Matrix(), Matrix(), mrm, mrv, false, std::nullopt, 1e-5, count);
  EXPECT_EQ(count.to_i32(), std::vector<std::int32_t>{7});
  using oa::ErrorKind;
  EXPECT_TRUE(oa_test::throws([&] { ml::batch_norm_2d(Matrix::ones(shape), Matrix(), Matrix(), mrm, mrv, true, std::nullopt); },
                              ErrorKind::InvalidArgument, {"oa::ml::batch_norm_2d", "momentum None", "num_batches_tracked", "[2, 300, 2, 2]"}));
  EXPECT_TRUE(oa_test::throws([&] { ml::batch_norm_2d(Matrix::ones(shape), Matrix(), Matrix(), mrm, mrv, true, 0.1, 1e-5, Matrix::zeros({})); },
                              ErrorKind::InvalidArgument, {"oa::ml::batch_norm_2d", "num_batches_tracked"}));
  EXPECT_TRUE(oa_test::throws(
      [&] { ml::batch_norm_2d(Matrix::ones(shape), Matrix(), Matrix(), mrm, mrv, true, 0.1, 1e-5, Matrix::from_i32({1}, std::vector<std::int32_t>{0})); },
      ErrorKind::InvalidArgument, {"oa::ml::batch_norm_2d", "num_batches_tracked must be a scalar", "[1]"}));
}

TEST(NnBatchNorm, EvalUsesRunningStatisticsAndLeavesThemUnchanged) {
  const Shape shape{2, 3, 2, 3};
  const auto x = test_values(shape.numel(), 41), rm = test_values(3, 42), rv = test_values(3, 43, 0.5, 1.5);
  const Matrix mrm = Matrix::from_vector({3}, rm), mrv = Matrix::from_vector({3}, rv);
  Matrix y;
  const auto ops = traced([&] { y = ml::batch_norm_2d(Matrix::from_vector(shape, x), Matrix(), Matrix(), mrm, mrv, false); });
  expect_trace(ops, {{"oa::ml::batch_norm_2d", 2}});  // statistics, normalisation
  std::vector<double> drm = f64(rm), drv = f64(rv);
  EXPECT_TRUE(oa_test::near(y.to_vector(), ref::batch_norm_2d(f64(x), 2, 3, 6, {}, {}, &drm, &drv, false, 0.1, 1e-5), 2e-5, 1e-4));
  EXPECT_EQ(mrm.to_vector(), rm);
  EXPECT_EQ(mrv.to_vector(), rv);
}

// An empty batch (N = 0), as PyTorch: an empty y in both modes, the running
// statistics kept; in training only the batch count moves (the statistics
// kernel alone, no normalisation pass), in eval nothing is dispatched.
TEST(NnBatchNorm, EmptyBatchKeepsTheRunningStatisticsAndCountsTheBatch) {
  const auto rm = test_values(3, 61), rv = test_values(3, 62, 0.5, 1.5);
  const Matrix mrm = Matrix::from_vector({3}, rm), mrv = Matrix::from_vector({3}, rv), x = Matrix::zeros({0, 3, 2, 2});
  const Matrix count = Matrix::from_i32(Shape{}, std::vector<std::int32_t>{4});
  for (bool training : {true, false})
    for (std::optional<double> momentum : {std::optional<double>(0.1), std::optional<double>()}) {
      Matrix y;
      const auto ops = traced([&] { y = ml::batch_norm_2d(x, Matrix(), Matrix(), mrm, mrv, training, momentum, 1e-5, count); });
      expect_trace(ops, {{"oa::ml::batch_norm_2d", training ? 1u : 0u}});
      EXPECT_EQ(y.shape(), x.shape());
      EXPECT_EQ(mrm.to_vector(), rm);
      EXPECT_EQ(mrv.to_vector(), rv);
    }
  EXPECT_EQ(count.to_i32(), std::vector<std::int32_t>{6});  // the two training calls
  expect_trace(traced([&] { ml::batch_norm_2d(x, Matrix(), Matrix(), mrm, mrv, true, 0.1); }), {{"oa::ml::batch_norm_2d", 0}});
}

TEST(NnBatchNorm, GradientsInTrainingAndEval) {
  for (bool training : {true, false}) {
    for (const BnCase c : {BnCase{2, 3, 2, 3}, BnCase{3, 2, 1, 1}}) {
      SCOPED_TRACE(testing::Message() << "training " << training << " N " << c.N);
      const auto rm = test_values(c.C, 51), rv = test_values(c.C, 52, 0.5, 1.5);
      const std::int64_t S = c.H * c.W;
      gradcheck({random_input({c.N, c.C, c.H, c.W}, 53, -1, 3), random_input({c.C}, 54), random_input({c.C}, 55)},
                [&](const std::vector<Matrix>& in) {
                  return ml::batch_norm_2d(in[0], in[1], in[2], Matrix::from_vector({c.C}, rm), Matrix::from_vector({c.C}, rv), training);
                },
                [&](const std::vector<std::vector<double>>& in) {
                  std::vector<double> drm = f64(rm), drv = f64(rv);
                  return ref::batch_norm_2d(in[0], c.N, c.C, S, in[1], in[2], &drm, &drv, training, 0.1, 1e-5);
                });
    }
  }
  // Without weight and bias, only the input gradient.
  gradcheck({random_input({2, 2, 3, 2}, 56)},
            [](const std::vector<Matrix>& in) {
              return ml::batch_norm_2d(in[0], Matrix(), Matrix(), Matrix::zeros({2}), Matrix::ones({2}), true);
            },
            [](const std::vector<std::vector<double>>& in) {
              std::vector<double> rm(2, 0.0), rv(2, 1.0);
              return ref::batch_norm_2d(in[0], 2, 2, 6, {}, {}, &rm, &rv, true, 0.1, 1e-5);
            });
}

TEST(NnBatchNorm, InvalidArgumentsRecordNothing) {
  const Matrix x = Matrix::zeros({2, 3, 2, 2}), s = Matrix::ones({3});
  const char* op = "oa::ml::batch_norm_2d";
  expect_invalid([&] { ml::batch_norm_2d(Matrix::zeros({2, 3, 4}), s, s, s, Matrix::ones({3}), true); }, op, {"NCHW", "[2, 3, 4]"});
  expect_invalid([&] { ml::batch_norm_2d(x, Matrix::ones({2}), s, Matrix::ones({3}), Matrix::ones({3}), true); }, op, {"weight", "[2]"});
  expect_invalid([&] { ml::batch_norm_2d(x, s, s, Matrix(), Matrix::ones({3}), true); }, op, {"running_mean"});
  expect_invalid([&] { ml::batch_norm_2d(x, s, s, Matrix::ones({3}), Matrix::ones({4}), false); }, op, {"running_var", "[4]"});
  expect_invalid([&] { ml::batch_norm_2d(x, s, s, s, s, true); }, op, {"share"});
  expect_invalid([&] { ml::batch_norm_2d(x, s, s, Matrix::ones({3}), Matrix::ones({3}), true, 1.5); }, op, {"momentum"});
  expect_invalid([&] { ml::batch_norm_2d(Matrix::zeros({1, 3, 1, 1}), s, s, Matrix::ones({3}), Matrix::ones({3}), true); }, op,
                 {"more than one value"});
}

}  // namespace
