// embedding against the f64 reference; the weight gradient against finite
// differences and an exact host accumulation.
#include "ml/nn_common.hpp"

namespace {

using namespace oa::nn_test;

// Deterministic indices in [low, high).
std::vector<std::int32_t> indices(std::int64_t n, std::int32_t low, std::int32_t high, std::uint64_t seed) {
  const auto u = test_values(n, seed, 0.0, 1.0);
  std::vector<std::int32_t> v(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = low + std::min(high - low - 1, static_cast<std::int32_t>(u[i] * float(high - low)));
  return v;
}

// Device indices outside [0, V) are found by the kernel and raised as
// OutOfRange at the next host read, naming the op, the index and the weight.
TEST(NnEmbedding, LookupMatchesReferenceAndDeviceIndicesOutOfRangeRaise) {
  const std::int64_t V = 11, D = 37;
  const auto w = test_values(V * D, 1);
  const Matrix mw = Matrix::from_vector({V, D}, w);
  std::vector<std::int32_t> idx = indices(2 * 5, 0, V, 2);
  Matrix y;
  const auto ops = traced([&] { y = ml::embedding(Matrix::from_i32({2, 5}, idx), mw); });
  expect_trace(ops, {{"oa::ml::embedding", 1}});
  EXPECT_TRUE(y.shape() == (Shape{2, 5, D}));
  EXPECT_TRUE(oa_test::near(y.to_vector(), ref::embedding(idx, f64(w), V, D), 0, 0));
  for (std::int32_t bad : {-1, 11}) {
    idx[7] = bad;
    const Matrix z = ml::embedding(Matrix::from_i32({2, 5}, idx), mw);
    const std::string index = "index " + std::to_string(bad);
    EXPECT_TRUE(oa_test::throws([&] { z.to_vector(); }, oa::ErrorKind::OutOfRange,
                                {"oa::ml::embedding", index.c_str(), "rows of weight [11, 37] (extent 11)"}));
  }
}

TEST(NnEmbedding, HostIndicesAreCheckedBeforeUpload) {
  const Matrix w = Matrix::from_vector({4, 3}, test_values(12, 3));
  const std::vector<std::int32_t> good = {3, 0, 0, 2};
  EXPECT_TRUE(oa_test::near(ml::embedding(good, {4}, w).to_vector(), ref::embedding(good, f64(w.to_vector()), 4, 3), 0, 0));
  const std::vector<std::int32_t> bad = {1, 4, 0};
  expect_invalid([&] { ml::embedding(bad, {3}, w); }, "oa::ml::embedding", {"index 4", "position 1"});
  expect_invalid([&] { ml::embedding(good, {5}, w); }, "oa::ml::embedding", {"4 host indices"});
  expect_invalid([&] { ml::embedding(good, {4}, Matrix::zeros({12})); }, "oa::ml::embedding", {"[V, D]"});
}

TEST(NnEmbedding, WeightGradientIsASegmentedReduction) {
  // Repeated indices; index counts below and above one sort block (512).
  for (std::int64_t n : {7, 600, 1500}) {
    SCOPED_TRACE(testing::Message() << "n " << n);
    const std::int64_t V = 13, D = n > 100 ? 5 : 33;
    std::vector<std::int32_t> idx = indices(n, 0, V, 40 + n);
    gradcheck({random_input({V, D}, 41)},
              [&](const std::vector<Matrix>& in) { return ml::embedding(Matrix::from_i32({n}, idx), in[0]); },
              [&](const std::vector<std::vector<double>>& in) { return ref::embedding(idx, in[0], V, D); });
  }
}

TEST(NnEmbedding, BackwardIsDeterministicAndOneSemanticOp) {
  const std::int64_t n = 1100, V = 7, D = 3;
  const auto idx = indices(n, 0, V, 5);
  const Matrix mi = Matrix::from_i32({n}, idx), gy = Matrix::from_vector({n, D}, test_values(n * D, 6));
  std::vector<std::vector<float>> grads;
  for (int run = 0; run < 2; ++run) {
    const Matrix w = Matrix::zeros({V, D});
    oa::set_requires_grad(w);
    const Matrix y = ml::embedding(mi, w);
    const auto ops = traced([&] { oa::backward(y, gy); });
    // n = 1100 pads to 2048 pairs: the block sort, 2 stages of (1, 2) global steps
    // plus a block merge each, and the segmented reduction.
    expect_trace(ops, {{"oa::ml::embedding backward", 1 + (1 + 1) + (2 + 1) + 1}});
    grads.push_back(oa::grad(w).to_vector());
  }
  EXPECT_EQ(grads[0], grads[1]);
  std::vector<double> want(V * D, 0.0);
  const auto g = gy.to_vector();
  for (std::int64_t i = 0; i < n; ++i)
    for (std::int64_t d = 0; d < D; ++d) want[idx[i] * D + d] += g[i * D + d];
  EXPECT_TRUE(oa_test::near(grads[0], want, 1e-5, 1e-5));
}

TEST(NnEmbedding, InvalidArgumentsRecordNothing) {
  const Matrix w = Matrix::zeros({4, 3}), i = Matrix::from_i32({2}, std::vector<std::int32_t>{0, 1});
  expect_invalid([&] { ml::embedding(Matrix::zeros({2}), w); }, "oa::ml::embedding", {"indices", "i32"});
  expect_invalid([&] { ml::embedding(i, Matrix::zeros({4, 0})); }, "oa::ml::embedding", {"weight", "[4, 0]"});
  expect_invalid([&] { ml::embedding(i, Matrix()); }, "oa::ml::embedding", {"weight"});
}

}  // namespace
