// cross_entropy, mse_loss and accuracy against the f64 references, with gradient checks.
#include <cmath>
#include <limits>

#include "ml/nn_common.hpp"

namespace {

using namespace oa::nn_test;

ref::LossReduction to_ref(ml::Reduction r) {
  return r == ml::Reduction::None ? ref::LossReduction::None : r == ml::Reduction::Mean ? ref::LossReduction::Mean : ref::LossReduction::Sum;
}

std::vector<std::int32_t> targets(std::int64_t n, std::int32_t classes, std::uint64_t seed) {
  const auto u = test_values(n, seed, 0.0, 1.0);
  std::vector<std::int32_t> t(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = std::min(classes - 1, static_cast<std::int32_t>(u[i] * float(classes)));
  return t;
}

TEST(NnCrossEntropy, ForwardMatchesReferenceForEveryReduction) {
  for (std::int64_t C : {1, 3, 10, 300}) {
    for (auto reduction : {ml::Reduction::Mean, ml::Reduction::Sum, ml::Reduction::None}) {
      for (double smoothing : {0.0, 0.1}) {
        SCOPED_TRACE(testing::Message() << "C " << C << " reduction " << int(reduction) << " smoothing " << smoothing);
        const std::int64_t N = 37;
        const auto x = test_values(N * C, 5 + C, -4.0, 4.0);
        auto t = targets(N, static_cast<std::int32_t>(C), 6);
        t[2] = t[30] = 7;  // ignored rows (ignore_index 7, a class or not)
        const ml::CrossEntropyOptions o{reduction, 7, smoothing};
        Matrix loss;
        const auto ops = traced([&] { loss = ml::cross_entropy(Matrix::from_vector({N, C}, x), Matrix::from_i32({N}, t), o); });
        // Rows, then (reduced) the column sums of (loss, counted) pairs and the scalar epilogue.
        expect_trace(ops, {{"oa::ml::cross_entropy", reduction == ml::Reduction::None ? 1u : 3u}});
        EXPECT_TRUE(loss.shape() == (reduction == ml::Reduction::None ? Shape{N} : Shape{}));
        const auto got = loss.to_vector();
        if (reduction == ml::Reduction::None) {
          EXPECT_EQ(got[30], 0.0f);
        }
        EXPECT_TRUE(oa_test::near(got, ref::cross_entropy(f64(x), t, C, to_ref(reduction), 7, smoothing), 2e-5, 2e-5));
      }
    }
  }
}

TEST(NnCrossEntropy, VeryNegativeLogits) {
  // Logits below -88.7 (exp underflows) in rows of 2, 9 and 300 columns: a
  // lane's first values all that negative, or a whole row (a mask of -1e4).
  for (const std::int64_t C : {2, 9, 300}) {
    for (const float low : {-100.0f, -1e4f}) {
      SCOPED_TRACE(testing::Message() << "C " << C << " low " << low);
      const std::int64_t N = 3;
      std::vector<float> x(static_cast<std::size_t>(N * C), low);
      for (std::int64_t j = 0; j < C; j += 2) x[static_cast<std::size_t>(C + j)] = 0.0f;        // row 1: zeros among them
      for (std::int64_t j = 0; j < C; ++j) x[static_cast<std::size_t>(2 * C + j)] = low - 5.0f * static_cast<float>(j % 3);  // row 2
      const std::vector<std::int32_t> t{1, static_cast<std::int32_t>(C - 1), 0};
      for (const double smoothing : {0.0, 0.1}) {
        const Matrix loss = ml::cross_entropy(Matrix::from_vector({N, C}, x), Matrix::from_i32({N}, t), {ml::Reduction::None, -100, smoothing});
        EXPECT_TRUE(oa_test::near(loss.to_vector(), ref::cross_entropy(f64(x), t, C, ref::LossReduction::None, -100, smoothing), 1e-5, 1e-4))
            << "smoothing " << smoothing;
      }
    }
  }
}

TEST(NnCrossEntropy, ReducedLossesCountOnlyRowsNotIgnored) {
  for (std::int64_t N : {1, 5, 300}) {
    for (auto reduction : {ml::Reduction::Mean, ml::Reduction::Sum}) {
      SCOPED_TRACE(testing::Message() << "N " << N << " reduction " << int(reduction));
      const std::int64_t C = 6;
      const auto x = test_values(N * C, 9, -3.0, 3.0);
      auto t = targets(N, C, 10);
      for (std::int64_t i = 0; i < N; i += 3) t[i] = -100;
      const ml::CrossEntropyOptions o{reduction, -100, 0.05};
      const Matrix loss = ml::cross_entropy(Matrix::from_vector({N, C}, x), Matrix::from_i32({N}, t), o);
      const auto want = ref::cross_entropy(f64(x), t, C, to_ref(reduction), -100, 0.05);
      const float got = loss.item();
      if (N == 1 && reduction == ml::Reduction::Mean) {
        EXPECT_TRUE(std::isnan(got)) << "every row ignored: 0 / 0, as PyTorch";
      } else {
        EXPECT_TRUE(oa_test::near({got}, want, 1e-5, 2e-5));
      }
    }
  }
}

TEST(NnCrossEntropy, GradientsForEveryReduction) {
  for (auto reduction : {ml::Reduction::Mean, ml::Reduction::Sum, ml::Reduction::None}) {
    for (std::int64_t C : {2, 9, 260}) {
      SCOPED_TRACE(testing::Message() << "C " << C << " reduction " << int(reduction));
      const std::int64_t N = 5;
      auto t = targets(N, static_cast<std::int32_t>(C), 20 + C);
      t[1] = -1;  // ignored (ignore_index -1)
      const ml::CrossEntropyOptions o{reduction, -1, C == 9 ? 0.2 : 0.0};
      gradcheck({random_input({N, C}, 21, -3, 3)},
                [&](const std::vector<Matrix>& in) { return ml::cross_entropy(in[0], Matrix::from_i32({N}, t), o); },
                [&](const std::vector<std::vector<double>>& in) {
                  return ref::cross_entropy(in[0], t, C, to_ref(reduction), -1, o.label_smoothing);
                });
    }
  }
}

// The loss and logit gradient of cross_entropy(x [N, C], t) with `o`, for the
// output gradient dy, against the f64 references.
void expect_cross_entropy_matches(const std::vector<float>& x, const std::vector<std::int32_t>& t, std::int64_t C,
                                  const ml::CrossEntropyOptions& o, const std::vector<float>& dy) {
  const std::int64_t N = static_cast<std::int64_t>(t.size());
  const Matrix mx = Matrix::from_vector({N, C}, x);
  oa::set_requires_grad(mx);
  const Matrix loss = ml::cross_entropy(mx, Matrix::from_i32({N}, t), o);
  const auto r = to_ref(o.reduction);
  EXPECT_TRUE(oa_test::near(loss.to_vector(), ref::cross_entropy(f64(x), t, C, r, o.ignore_index, o.label_smoothing), 2e-5, 2e-5))
      << "loss";
  oa::backward(loss, Matrix::from_vector(loss.shape(), dy));
  const auto want = ref::cross_entropy_backward(f64(x), t, C, r, o.ignore_index, o.label_smoothing, f64(dy));
  EXPECT_TRUE(oa_test::near(oa::grad(mx).to_vector(), want, 1e-6, 1e-4)) << "gradient";
}

TEST(NnCrossEntropy, LargeCommonOffsetsMatchTheReference) {
  // The loss is log(sum(exp(x - max))) - sum_j q_j (x_j - max): no term may
  // round at the offset's magnitude.
  for (std::int64_t C : {2, 9, 300}) {
    for (double offset : kOffsets) {
      for (auto reduction : {ml::Reduction::Mean, ml::Reduction::Sum, ml::Reduction::None}) {
        for (double smoothing : {0.0, 0.1}) {
          SCOPED_TRACE(testing::Message() << "C " << C << " offset " << offset << " reduction " << int(reduction) << " smoothing "
                                          << smoothing);
          const std::int64_t N = 6;
          auto x = offset_values(N * C, offset, 4, 40 + C);
          for (std::int64_t j = 0; j < C; ++j) x[j] = static_cast<float>(offset);  // a row of ties: loss log(C)
          auto t = targets(N, static_cast<std::int32_t>(C), 41);
          t[3] = -1;
          const ml::CrossEntropyOptions o{reduction, -1, smoothing};
          expect_cross_entropy_matches(x, t, C, o, reduction == ml::Reduction::None ? test_values(N, 42) : std::vector<float>{0.7f});
          if (offset <= 1e4)  // the f64 finite differences resolve the row at this offset
            gradcheck({{Shape{N, C}, x}}, [&](const std::vector<Matrix>& in) { return ml::cross_entropy(in[0], Matrix::from_i32({N}, t), o); },
                      [&](const std::vector<std::vector<double>>& in) {
                        return ref::cross_entropy(in[0], t, C, to_ref(reduction), -1, smoothing);
                      });
        }
      }
    }
  }
  // Rows whose spread f32 resolves next to the offset only as a difference.
  for (double smoothing : {0.0, 0.2})
    expect_cross_entropy_matches({1e6f + 2, 1e6f - 1, 1e6f - 1, 1e6f + 2}, {1, 0}, 2, {ml::Reduction::None, -100, smoothing}, {1, -0.5f});
}

// Each row is read once: 256 lanes load 1..16 slots of 4 columns at a time
// and fold them online (common/row_slots.glsl). Rows past one load of slots
// and of vocabularies, aligned (C % 4 == 0, vec4 loads) or not: row 0 holds
// a NaN in its last column, row 1 -inf every third logit (an infinite loss
// under label smoothing), row 3 a large common offset.
TEST(NnCrossEntropy, LongRowsAreFoldedOnline) {
  for (const std::int64_t C : {5, 1025, 16384, 16385, 32000, 50257, 128256}) {
    for (double smoothing : {0.0, 0.1}) {
      SCOPED_TRACE(testing::Message() << "C " << C << " smoothing " << smoothing);
      const std::int64_t N = 4;
      auto x = test_values(N * C, 50 + C, -6.0, 6.0);
      x[static_cast<std::size_t>(C - 1)] = kNaN;
      for (std::int64_t j = 0; j < C; j += 3) x[static_cast<std::size_t>(C + j)] = -std::numeric_limits<float>::infinity();
      for (std::int64_t j = 0; j < C; ++j) x[static_cast<std::size_t>(3 * C + j)] += 1e4f;
      const std::vector<std::int32_t> t = {0, 1, static_cast<std::int32_t>(C / 2), static_cast<std::int32_t>(C - 1)};
      expect_cross_entropy_matches(x, t, C, {ml::Reduction::None, -100, smoothing}, test_values(N, 51));
    }
  }
}

// Rows of 7 reduce within a subgroup; rows of 300 across subgroups (256 lanes).
TEST(NnCrossEntropy, NanLogitMakesThatRowNanUnlessIgnored) {
  const std::int64_t N = 4;
  for (const std::int64_t C : {7, 300}) {
    SCOPED_TRACE(testing::Message() << "C " << C);
    auto x = test_values(N * C, 43);
    x[0] = kNaN;                  // row 0: at the start
    x[2 * C + C / 2 + 1] = kNaN;  // row 2: inside, after a larger logit
    x[2 * C + 1] = 1e30f;
    x[3 * C + 1] = kNaN;          // row 3: ignored, so loss and gradient 0
    const std::vector<std::int32_t> t = {1, 2, 3, -100};
    const Matrix mx = Matrix::from_vector({N, C}, x);
    oa::set_requires_grad(mx);
    const Matrix loss = ml::cross_entropy(mx, Matrix::from_i32({N}, t), {ml::Reduction::None, -100, 0.1});
    const auto l = loss.to_vector();
    expect_nan_rows(l, 1, {0, 2}, "loss");
    EXPECT_EQ(l[3], 0.0f);
    oa::backward(loss, Matrix::ones({N}));
    const auto g = oa::grad(mx).to_vector();
    expect_nan_rows(g, C, {0, 2}, "dx");
    for (std::int64_t j = 0; j < C; ++j) EXPECT_EQ(g[3 * C + j], 0.0f);
  }
}

// A target outside [0, C) other than ignore_index is found by the kernels (the
// forward's, and the backward's for a gradient taken after that error) and
// raised as OutOfRange at the next host read or synchronize, naming the op,
// the target and the classes; once reported, the engine goes on as before.
TEST(NnCrossEntropy, TargetsOutOfRangeRaiseAtTheNextHostRead) {
  const std::int64_t N = 4;
  for (const std::int64_t C : {3, 300}) {
    for (const auto reduction : {ml::Reduction::Mean, ml::Reduction::None}) {
      for (const std::int32_t bad : {-1, static_cast<std::int32_t>(C)}) {
        SCOPED_TRACE(testing::Message() << "C " << C << " reduction " << int(reduction) << " target " << bad);
        const Matrix x = Matrix::from_vector({N, C}, test_values(N * C, 50));
        oa::set_requires_grad(x);
        const std::string index = "index " + std::to_string(bad), classes = "classes of logits [4, " + std::to_string(C) + "]";
        const ml::CrossEntropyOptions o{reduction, -100, 0.1};
        const Matrix loss = ml::cross_entropy(x, Matrix::from_i32({N}, std::vector<std::int32_t>{0, bad, -100, 1}), o);  // nothing read
        EXPECT_TRUE(oa_test::throws([&] { loss.to_vector(); }, oa::ErrorKind::OutOfRange,
                                    {"oa::ml::cross_entropy", index.c_str(), classes.c_str(), "ignore_index -100"}));
        oa::backward(loss, reduction == ml::Reduction::None ? Matrix::ones({N}) : Matrix::ones({}));
        EXPECT_TRUE(oa_test::throws([&] { x.engine().synchronize(); }, oa::ErrorKind::OutOfRange,
                                    {"oa::ml::cross_entropy", index.c_str(), classes.c_str()}));
        // The ignored index is no error, and the engine is fine.
        const Matrix ok = ml::cross_entropy(x, Matrix::from_i32({N}, std::vector<std::int32_t>{0, 2, -100, 1}), o);
        EXPECT_NO_THROW(ok.to_vector());
      }
    }
  }
  // The higher-rank form: logits [N, C, P] against targets [N, P].
  const Matrix loss = ml::cross_entropy(Matrix::zeros({1, 3, 2}), Matrix::from_i32({1, 2}, std::vector<std::int32_t>{0, 5}));
  EXPECT_TRUE(oa_test::throws([&] { loss.item(); }, oa::ErrorKind::OutOfRange, {"oa::ml::cross_entropy", "index 5"}));
}

TEST(NnCrossEntropy, BackwardIsOneDispatch) {
  const Matrix x = Matrix::from_vector({4, 3}, test_values(12, 1));
  oa::set_requires_grad(x);
  const Matrix loss = ml::cross_entropy(x, Matrix::from_i32({4}, std::vector<std::int32_t>{0, 2, 1, 1}));
  expect_trace(traced([&] { oa::backward(loss); }), {{"oa::ml::cross_entropy backward", 1}});
}

TEST(NnCrossEntropy, InvalidArgumentsRecordNothing) {
  const Matrix x = Matrix::zeros({3, 4}), t = Matrix::from_i32({3}, std::vector<std::int32_t>{0, 1, 2});
  const char* op = "oa::ml::cross_entropy";
  expect_invalid([&] { ml::cross_entropy(Matrix::zeros({3, 4, 2}), t); }, op, {"[N, C]", "[3, 4, 2]"});
  expect_invalid([&] { ml::cross_entropy(x, Matrix::from_i32({4}, std::vector<std::int32_t>{0, 1, 2, 3})); }, op, {"targets", "[3]", "[4]"});
  expect_invalid([&] { ml::cross_entropy(x, Matrix::zeros({3})); }, op, {"targets", "logits' shape [3, 4]", "[3]"});
  expect_invalid([&] { ml::cross_entropy(x, Matrix::from_vector({3, 4}, std::vector<float>(12), oa::DType::F16)); }, op, {"targets", "f32"});
  expect_invalid([&] { ml::cross_entropy(Matrix::zeros({3, 4, 2}), Matrix::from_i32({3, 4}, std::vector<std::int32_t>(12))); }, op,
                 {"[N, d1, ...]", "[3, 4, 2]", "[3, 4]"});
  // Higher-rank forms name the shapes as given, not as flattened.
  expect_invalid([&] { ml::cross_entropy(Matrix::zeros({3, 4, 2}), Matrix::from_bool({3, 2}, std::vector<bool>(6))); }, op,
                 {"targets", "i32", "[3, 2]"});
  expect_invalid([&] { ml::cross_entropy(Matrix::zeros({3, 4, 2}), Matrix::from_i32({3, 2}, std::vector<std::int32_t>(6)), {ml::Reduction::Mean, -100, 1.5}); },
                 op, {"label_smoothing", "[3, 4, 2]"});
  expect_invalid([&] { ml::cross_entropy(x, t, {ml::Reduction::Mean, -100, 1.5}); }, op, {"label_smoothing"});
  expect_invalid([&] { ml::cross_entropy(x, t, {ml::Reduction::Mean, std::int64_t{1} << 40, 0.0}); }, op, {"ignore_index"});
  // Integer logits, with probability targets and with class-index targets of a higher rank.
  const Matrix ix = Matrix::from_i32({3, 4, 2}, std::vector<std::int32_t>(24));
  expect_invalid([&] { ml::cross_entropy(ix, Matrix::zeros({3, 4, 2})); }, op, {"logits", "i32", "[3, 4, 2]"});
  expect_invalid([&] { ml::cross_entropy(ix, Matrix::from_i32({3, 2}, std::vector<std::int32_t>(6))); }, op, {"logits", "i32"});
  const Matrix scalar_h = Matrix::from_vector({}, std::vector<float>{1}, oa::DType::F16);
  expect_invalid([&] { ml::cross_entropy(scalar_h, Matrix::zeros(Shape{})); }, op, {"logits", "[]"});
  // 16-bit logits are widened only after every check: bad options, no classes, at rank 2 and above.
  const Matrix xh = Matrix::from_vector({3, 4}, std::vector<float>(12), oa::DType::F16);
  const Matrix x3h = Matrix::from_vector({3, 4, 2}, std::vector<float>(24), oa::DType::F16);
  const Matrix t32 = Matrix::from_i32({3, 2}, std::vector<std::int32_t>(6));
  expect_invalid([&] { ml::cross_entropy(xh, t, {ml::Reduction::Mean, -100, -1.0}); }, op, {"label_smoothing"});
  expect_invalid([&] { ml::cross_entropy(xh, t, {ml::Reduction::Mean, std::int64_t{1} << 40, 0.0}); }, op, {"ignore_index"});
  expect_invalid([&] { ml::cross_entropy(Matrix::from_vector({3, 0}, std::vector<float>(), oa::DType::F16), t); }, op, {"[3, 0]"});
  expect_invalid([&] { ml::cross_entropy(x3h, t32, {ml::Reduction::Mean, std::int64_t{1} << 40, 0.0}); }, op, {"ignore_index"});
  expect_invalid([&] { ml::cross_entropy(Matrix::from_vector({3, 0, 2}, std::vector<float>(), oa::DType::F16), t32); }, op,
                 {"no classes", "[3, 0, 2]"});
}

// logits [N, C, P] (P positions) as rows [N * P, C], as the reference takes them.
std::vector<double> class_last(const std::vector<double>& x, std::int64_t N, std::int64_t C, std::int64_t P) {
  std::vector<double> rows(x.size());
  for (std::int64_t n = 0; n < N; ++n)
    for (std::int64_t c = 0; c < C; ++c)
      for (std::int64_t p = 0; p < P; ++p) rows[static_cast<std::size_t>((n * P + p) * C + c)] = x[static_cast<std::size_t>((n * C + c) * P + p)];
  return rows;
}

TEST(NnCrossEntropy, ClassAxisSecondOfHigherRankLogits) {
  // [N, C, H, W] against [N, H, W], and one sample: [C] against [].
  const std::int64_t N = 2, C = 5, H = 3, W = 2, P = H * W;
  auto t = targets(N * P, static_cast<std::int32_t>(C), 40);
  t[3] = -100;
  for (auto reduction : {ml::Reduction::Mean, ml::Reduction::None}) {
    SCOPED_TRACE(int(reduction));
    const ml::CrossEntropyOptions o{reduction, -100, 0.1};
    const Matrix loss = gradcheck({random_input({N, C, H, W}, 41, -3, 3)},
                                  [&](const std::vector<Matrix>& in) { return ml::cross_entropy(in[0], Matrix::from_i32({N, H, W}, t), o); },
                                  [&](const std::vector<std::vector<double>>& in) {
                                    return ref::cross_entropy(class_last(in[0], N, C, P), t, C, to_ref(reduction), -100, 0.1);
                                  });
    EXPECT_TRUE(loss.shape() == (reduction == ml::Reduction::None ? Shape{N, H, W} : Shape{}));
  }
  // 16-bit logits compute in f32: the f16-rounded values' loss.
  const Matrix x16 = oa::matrix::cast(Matrix::from_vector({N, C, H, W}, test_values(N * C * P, 45, -3.0, 3.0)), oa::DType::F16);
  const Matrix loss16 = ml::cross_entropy(x16, Matrix::from_i32({N, H, W}, t));
  EXPECT_EQ(loss16.dtype(), oa::DType::F32);
  EXPECT_TRUE(oa_test::near({loss16.item()},
                            ref::cross_entropy(class_last(f64(oa::matrix::cast(x16, oa::DType::F32).to_vector()), N, C, P), t, C,
                                               ref::LossReduction::Mean, -100, 0.0),
                            1e-5, 2e-5));
  // The plain [N, C] form too; its gradient reaches an f32 leaf through the cast.
  const Matrix rows = oa::matrix::flatten(oa::matrix::permute(oa::matrix::cast(x16, oa::DType::F32), {0, 2, 3, 1}), 0, 2);
  const Matrix leaf = oa::set_requires_grad(Matrix::from_vector(rows.shape(), rows.to_vector()));
  const Matrix rows_loss = ml::cross_entropy(oa::matrix::cast(leaf, oa::DType::F16), Matrix::from_i32({N * P}, t));
  EXPECT_EQ(rows_loss.dtype(), oa::DType::F32);
  EXPECT_NEAR(rows_loss.item(), loss16.item(), 1e-6);
  oa::backward(rows_loss);
  const Matrix leaf32 = oa::set_requires_grad(Matrix::from_vector(rows.shape(), rows.to_vector()));
  oa::backward(ml::cross_entropy(leaf32, Matrix::from_i32({N * P}, t)));
  EXPECT_TRUE(oa_test::near(oa::grad(leaf).to_vector(), f64(oa::grad(leaf32).to_vector()), 1e-3, 1e-4));
  const std::vector<std::int32_t> one{3};
  const Matrix loss = gradcheck({random_input({C}, 42, -3, 3)},
                                [&](const std::vector<Matrix>& in) {
                                  return ml::cross_entropy(in[0], Matrix::from_i32({}, one), {ml::Reduction::None});
                                },
                                [&](const std::vector<std::vector<double>>& in) {
                                  return ref::cross_entropy(in[0], one, C, ref::LossReduction::None, -100, 0.0);
                                });
  EXPECT_TRUE(loss.shape() == Shape{});
}

TEST(NnCrossEntropy, ClassProbabilityTargetsWithGradientsToBoth) {
  // Rows of [N, C, P] logits and probabilities: -sum_c q_c log_softmax(x)_c, q = (1 - s) p + s / C.
  const std::int64_t N = 3, C = 4, P = 2;
  for (auto reduction : {ml::Reduction::Mean, ml::Reduction::Sum, ml::Reduction::None}) {
    SCOPED_TRACE(int(reduction));
    const double s = 0.2;
    const ml::CrossEntropyOptions o{reduction, -100, s};
    gradcheck({random_input({N, C, P}, 43, -3, 3), random_input({N, C, P}, 44, 0, 1)},
              [&](const std::vector<Matrix>& in) { return ml::cross_entropy(in[0], in[1], o); },
              [&](const std::vector<std::vector<double>>& in) {
                const auto lp = ref::log_softmax(class_last(in[0], N, C, P), C);
                const auto p = class_last(in[1], N, C, P);
                std::vector<double> loss(static_cast<std::size_t>(N * P), 0.0);
                double total = 0;
                for (std::size_t r = 0; r < loss.size(); ++r) {
                  for (std::int64_t c = 0; c < C; ++c) {
                    const std::size_t i = r * static_cast<std::size_t>(C) + static_cast<std::size_t>(c);
                    loss[r] -= ((1 - s) * p[i] + s / static_cast<double>(C)) * lp[i];
                  }
                  total += loss[r];
                }
                if (reduction == ml::Reduction::None) return loss;
                return std::vector<double>{reduction == ml::Reduction::Sum ? total : total / static_cast<double>(loss.size())};
              });
  }
}

TEST(NnMseLoss, ForwardAndGradients) {
  for (auto reduction : {ml::Reduction::Mean, ml::Reduction::Sum, ml::Reduction::None}) {
    for (const Shape& shape : {Shape{1}, Shape{3, 7}, Shape{2, 3, 700}}) {
      SCOPED_TRACE(testing::Message() << shape.to_string() << " reduction " << int(reduction));
      const auto a = test_values(shape.numel(), 1), b = test_values(shape.numel(), 2);
      Matrix loss;
      const auto ops = traced([&] { loss = ml::mse_loss(Matrix::from_vector(shape, a), Matrix::from_vector(shape, b), reduction); });
      ASSERT_EQ(ops.size(), 1u);
      EXPECT_EQ(ops[0].label(), "oa::ml::mse_loss");
      EXPECT_TRUE(oa_test::near(loss.to_vector(), ref::mse_loss(f64(a), f64(b), to_ref(reduction)), 1e-6, 1e-5));
    }
  }
  // Gradients for each reduction: the op table (tests/ops/nn_ops.cpp); here for the target alone.
  gradcheck({random_input({6}, 5, -1, 1, false), random_input({6}, 6)},
            [&](const std::vector<Matrix>& in) { return ml::mse_loss(in[0], in[1]); },
            [&](const std::vector<std::vector<double>>& in) { return ref::mse_loss(in[0], in[1], ref::LossReduction::Mean); });
  expect_invalid([] { ml::mse_loss(Matrix::zeros({2, 3}), Matrix::zeros({3, 2})); }, "oa::ml::mse_loss", {"[2, 3]", "[3, 2]"});
  // No elements, as PyTorch: Mean NaN, Sum 0, None empty.
  EXPECT_TRUE(std::isnan(ml::mse_loss(Matrix::zeros({0}), Matrix::zeros({0})).item()));
  EXPECT_EQ(ml::mse_loss(Matrix::zeros({0}), Matrix::zeros({0}), ml::Reduction::Sum).item(), 0.0f);
  EXPECT_EQ(ml::mse_loss(Matrix::zeros({0, 3}), Matrix::zeros({0, 3}), ml::Reduction::None).shape(), (Shape{0, 3}));
}

TEST(NnAccuracy, FractionOfRowsWhoseArgmaxIsTheTarget) {
  for (std::int64_t N : {1, 9, 600}) {
    SCOPED_TRACE(testing::Message() << "N " << N);
    const std::int64_t C = 5;
    auto x = test_values(N * C, 30 + N);
    auto t = targets(N, C, 31);
    for (std::int64_t i = 0; i < N; i += 2) x[i * C + t[i]] = 2.0f;  // about half the rows hit
    if (N > 1) {
      x[C + 0] = x[C + 4] = 3.0f;  // a tie: the first index wins
      t[1] = 0;
    }
    Matrix acc;
    const auto ops = traced([&] { acc = ml::accuracy(Matrix::from_vector({N, C}, x), Matrix::from_i32({N}, t)); });
    expect_trace(ops, {{"oa::ml::accuracy", 3}});
    EXPECT_TRUE(acc.shape() == Shape{});
    EXPECT_NEAR(acc.item(), ref::accuracy(f64(x), t, C), 1e-6);
  }
  expect_invalid([] { ml::accuracy(Matrix::zeros({2, 3}), Matrix::from_i32({3}, std::vector<std::int32_t>{0, 0, 0})); }, "oa::ml::accuracy",
                 {"targets"});
}

}  // namespace
