// LayerNorm, RMSNorm, GroupNorm, InstanceNorm2d, BatchNorm1d, BatchNorm2d, pooling, Embedding and Dropout modules: forward
// against the f64 references, gradients, modes and initialisation.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <memory>

#include "oa/ml/nn/dropout.hpp"
#include "oa/ml/nn/embedding.hpp"
#include "oa/ml/nn/norm.hpp"
#include "oa/ml/nn/pool.hpp"
#include "oa/oa.hpp"
#include "reference/nn.hpp"
#include "support/expect.hpp"
#include "support/module_check.hpp"

namespace {

using namespace oa::test::module_names;
namespace ref = oa::reference;

using oa_test::f64;

TEST(NnNormModule, LayerNorm) {
  LayerNorm norm(6);
  EXPECT_TRUE(oa_test::near(norm.weight().value().to_vector(), std::vector<double>(6, 1.0), 0, 0));
  EXPECT_TRUE(oa_test::near(norm.bias().value().to_vector(), std::vector<double>(6, 0.0), 0, 0));
  oa::test::module_gradcheck(norm, oa::test::random_input({3, 4, 6}, 1),
                             [](const Args& v) { return ref::layer_norm(v[0], 6, v[1], v[2], 1e-5); });
  LayerNorm plain(5, 1e-3, false);
  EXPECT_EQ(plain.parameter_count(), 0);
  oa::test::module_gradcheck(plain, oa::test::random_input({7, 5}, 2),
                             [](const Args& v) { return ref::layer_norm(v[0], 5, {}, {}, 1e-3); });
}

TEST(NnNormModule, RMSNorm) {
  RMSNorm norm(6, 1e-5);
  EXPECT_TRUE(oa_test::near(norm.weight().value().to_vector(), std::vector<double>(6, 1.0), 0, 0));
  oa::test::module_gradcheck(norm, oa::test::random_input({3, 4, 6}, 4), [](const Args& v) { return ref::rms_norm(v[0], 6, v[1], 1e-5); });
  RMSNorm plain(5, {}, false);
  EXPECT_EQ(plain.parameter_count(), 0);
  oa::test::module_gradcheck(plain, oa::test::random_input({7, 5}, 5),
                             [](const Args& v) { return ref::rms_norm(v[0], 5, {}, std::numeric_limits<float>::epsilon()); });
  EXPECT_TRUE(oa_test::throws([] { RMSNorm(0); }, oa::ErrorKind::InvalidArgument, {"RMSNorm", "normalized_dim"}));
}

TEST(NnNormModule, BatchNorm2dTrainingUsesBatchStatisticsAndUpdatesRunningOnes) {
  BatchNorm2d bn(3, 1e-5, 0.25);
  EXPECT_EQ(bn.parameter_count(), 6);
  const auto input = oa::test::random_input({4, 3, 2, 3}, 3, -2.0, 3.0);
  std::vector<double> running_mean(3, 0.0), running_var(3, 1.0);
  oa::test::module_gradcheck(bn, input, [&](const Args& v) {
    return ref::batch_norm_2d(v[0], 4, 3, 6, v[1], v[2], nullptr, nullptr, true, 0.25, 1e-5);
  });
  // The one forward above updated the running statistics in place.
  ref::batch_norm_2d(f64(input.values), 4, 3, 6, {}, {}, &running_mean, &running_var, true, 0.25, 1e-5);
  EXPECT_TRUE(oa_test::near(bn.running_mean().to_vector(), running_mean, 1e-6, 1e-5));
  EXPECT_TRUE(oa_test::near(bn.running_var().to_vector(), running_var, 1e-6, 1e-5));
}

// num_batches_tracked counts training forwards; momentum nullopt (torch's None)
// makes the running statistics the plain average of the batches' statistics.
TEST(NnNormModule, BatchNormCumulativeAverageCountsBatches) {
  BatchNorm1d bn(3, 1e-5, std::nullopt);
  EXPECT_EQ(bn.num_batches_tracked().shape(), Shape{});
  EXPECT_EQ(bn.num_batches_tracked().dtype(), oa::DType::I32);
  std::vector<double> mean_sum(3, 0.0), var_sum(3, 0.0);
  for (int b = 0; b < 3; ++b) {
    const auto input = oa::test::random_input({4, 3}, 10 + b, -2.0, 3.0);
    bn.forward(Matrix::from_vector({4, 3}, input.values));
    std::vector<double> mean(3, 0.0), var(3, 1.0);  // momentum 1: the batch's own statistics
    ref::batch_norm_2d(f64(input.values), 4, 3, 1, {}, {}, &mean, &var, true, 1.0, 1e-5);
    for (int c = 0; c < 3; ++c) {
      mean_sum[c] += mean[c] / 3;
      var_sum[c] += var[c] / 3;
    }
  }
  EXPECT_EQ(bn.num_batches_tracked().to_i32(), std::vector<std::int32_t>{3});
  EXPECT_TRUE(oa_test::near(bn.running_mean().to_vector(), mean_sum, 1e-6, 1e-5));
  EXPECT_TRUE(oa_test::near(bn.running_var().to_vector(), var_sum, 1e-6, 1e-5));
  bn.eval();
  bn.forward(Matrix::ones({2, 3}));
  EXPECT_EQ(bn.num_batches_tracked().to_i32(), std::vector<std::int32_t>{3});  // eval does not count
  // A count written into the buffer (a loaded checkpoint) is where counting goes on.
  bn.num_batches_tracked().write_i32(std::vector<std::int32_t>{9});
  bn.train();
  const auto input = oa::test::random_input({4, 3}, 20, -2.0, 3.0);
  std::vector<double> mean(mean_sum), var(var_sum);
  ref::batch_norm_2d(f64(input.values), 4, 3, 1, {}, {}, &mean, &var, true, 0.1, 1e-5);
  bn.forward(Matrix::from_vector({4, 3}, input.values));
  EXPECT_EQ(bn.num_batches_tracked().to_i32(), std::vector<std::int32_t>{10});
  EXPECT_TRUE(oa_test::near(bn.running_mean().to_vector(), mean, 1e-6, 1e-5));
}

TEST(NnNormModule, BatchNorm2dEvalUsesRunningStatistics) {
  BatchNorm2d bn(2);
  const std::vector<float> mean{0.5f, -1.0f}, var{2.0f, 0.25f};
  bn.running_mean().write(mean);
  bn.running_var().write(var);
  bn.eval();
  std::vector<double> rm(mean.begin(), mean.end()), rv(var.begin(), var.end());
  oa::test::module_gradcheck(bn, oa::test::random_input({3, 2, 3, 2}, 4), [&](const Args& v) {
    return ref::batch_norm_2d(v[0], 3, 2, 6, v[1], v[2], &rm, &rv, false, 0.1, 1e-5);
  });
  EXPECT_EQ(bn.running_mean().to_vector(), mean);  // unchanged in eval mode
  EXPECT_EQ(bn.running_var().to_vector(), var);
}

TEST(NnNormModule, GroupNormAndInstanceNorm2d) {
  GroupNorm gn(2, 4);
  EXPECT_EQ(gn.parameter_count(), 8);
  oa::test::module_gradcheck(gn, oa::test::random_input({2, 4, 3, 2}, 6, -2.0, 2.0),
                             [](const Args& v) { return ref::group_norm(v[0], 2, 4, 6, 2, v[1], v[2], 1e-5); });
  InstanceNorm2d in(3);
  EXPECT_EQ(in.parameter_count(), 0);  // affine off by default, as PyTorch
  const auto x = oa::test::random_input({2, 3, 2, 2}, 7, -2.0, 2.0);
  oa::test::module_gradcheck(in, x, [](const Args& v) { return ref::group_norm(v[0], 2, 3, 4, 3, {}, {}, 1e-5); });
  in.eval();  // no running statistics: eval normalises alike
  const Matrix xm = Matrix::from_vector(x.shape, x.values);
  EXPECT_TRUE(oa_test::near(in(xm).to_vector(), ref::group_norm(f64(x.values), 2, 3, 4, 3, {}, {}, 1e-5), 1e-5, 1e-4));
  InstanceNorm2d affine(3, 1e-5, true);
  EXPECT_EQ(affine.parameter_count(), 6);
  EXPECT_TRUE(oa_test::throws([] { GroupNorm(3, 4); }, oa::ErrorKind::InvalidArgument, {"GroupNorm", "num_groups 3", "num_channels 4"}));
  EXPECT_TRUE(oa_test::throws([&] { gn(Matrix::zeros({2, 6, 3})); }, oa::ErrorKind::InvalidArgument, {"GroupNorm", "[2, 6, 3]", "4"}));
  EXPECT_TRUE(oa_test::throws([&] { in(Matrix::zeros({2, 3, 4})); }, oa::ErrorKind::InvalidArgument, {"InstanceNorm2d", "[2, 3, 4]"}));
}

// BatchNorm1d on [N, C] and [N, C, L]: batch_norm_2d's statistics over N (* L).
TEST(NnNormModule, BatchNorm1d) {
  for (const Shape& shape : {Shape{5, 3}, Shape{3, 3, 4}}) {
    SCOPED_TRACE(shape.to_string());
    BatchNorm1d bn(3, 1e-5, 0.2);
    const std::int64_t N = shape[0], L = shape.rank() == 3 ? shape[2] : 1;
    const auto input = oa::test::random_input(shape, 8, -2.0, 3.0);
    const Matrix y = oa::test::module_gradcheck(bn, input, [&](const Args& v) {
      return ref::batch_norm_2d(v[0], N, 3, L, v[1], v[2], nullptr, nullptr, true, 0.2, 1e-5);
    });
    EXPECT_EQ(y.shape(), shape);
    std::vector<double> running_mean(3, 0.0), running_var(3, 1.0);
    ref::batch_norm_2d(f64(input.values), N, 3, L, {}, {}, &running_mean, &running_var, true, 0.2, 1e-5);
    EXPECT_TRUE(oa_test::near(bn.running_mean().to_vector(), running_mean, 1e-6, 1e-5));
    EXPECT_TRUE(oa_test::near(bn.running_var().to_vector(), running_var, 1e-6, 1e-5));
  }
  BatchNorm1d bn(3);
  EXPECT_TRUE(oa_test::throws([&] { bn(Matrix::zeros({2, 3, 2, 2})); }, oa::ErrorKind::InvalidArgument, {"BatchNorm1d", "[2, 3, 2, 2]"}));
  EXPECT_TRUE(oa_test::throws([] { BatchNorm1d(0); }, oa::ErrorKind::InvalidArgument, {"BatchNorm1d", "num_features 0"}));
  EXPECT_TRUE(oa_test::throws([&] { bn(Matrix::zeros({2, 4})); }, oa::ErrorKind::InvalidArgument, {"BatchNorm1d", "[2, 4]", "num_features = 3"}));
  EXPECT_TRUE(oa_test::throws([&] { bn(Matrix::zeros({1, 3})); }, oa::ErrorKind::InvalidArgument, {"BatchNorm1d", "[1, 3]", "more than one"}));
}

TEST(NnPoolModule, MaxAvgAndGlobal) {
  // Distinct values (no ties for the maximum).
  auto input = oa::test::random_input({2, 3, 5, 6}, 5);
  for (std::size_t i = 0; i < input.values.size(); ++i) input.values[i] += 0.01f * static_cast<float>(i % 7);
  MaxPool2d max_pool(2);
  oa::test::module_gradcheck(max_pool, input, [](const Args& v) {
    return ref::pool_2d(v[0], {2, 3, 5, 6, {2, 2}, {2, 2}, {0, 0}}, true);
  });
  AvgPool2d avg_pool(3, 2, 1);
  const Matrix y = oa::test::module_gradcheck(avg_pool, input, [](const Args& v) {
    return ref::pool_2d(v[0], {2, 3, 5, 6, {3, 3}, {2, 2}, {1, 1}}, false);
  });
  EXPECT_EQ(y.shape(), Shape({2, 3, 3, 3}));
  oa::ml::Pool2dOptions options;
  options.kernel_size = {2, 3};
  options.stride = std::array<std::int64_t, 2>{1, 3};
  MaxPool2d rect(options);
  oa::test::module_gradcheck(rect, input, [](const Args& v) {
    return ref::pool_2d(v[0], {2, 3, 5, 6, {2, 3}, {1, 3}, {0, 0}}, true);
  });
  GlobalAvgPool2d global;
  const Matrix g = oa::test::module_gradcheck(global, input, [](const Args& v) { return ref::global_avg_pool_2d(v[0], 6, 30); });
  EXPECT_EQ(g.shape(), Shape({2, 3}));
}

TEST(NnEmbeddingModule, LookupGradientAndInitialisation) {
  oa::ml::Generator g(6);
  Embedding table(7, 4, g);
  const std::vector<std::int32_t> idx{3, 0, 6, 3, 3, 1};  // repeated rows sum their gradients
  const Matrix indices = Matrix::from_i32({2, 3}, idx);
  const Matrix y = oa::test::module_gradcheck(table, indices, {}, false, [&](const Args& v) {
    return ref::embedding(idx, v[1], 7, 4);
  });
  EXPECT_EQ(y.shape(), Shape({2, 3, 4}));
  // Host indices: the same rows; an index outside the table is an error naming it.
  EXPECT_EQ(table.forward(idx, Shape{2, 3}).to_vector(), y.to_vector());
  const std::vector<std::int32_t> bad{1, 7};
  EXPECT_TRUE(oa_test::throws([&] { table.forward(bad, Shape{2}); }, oa::ErrorKind::InvalidArgument, {"7"}));
  // N(0, 1) initialisation.
  Embedding big(128, 32, g);
  double mean = 0, sq = 0;
  const auto w = big.weight().value().to_vector();
  for (float v : w) {
    mean += v;
    sq += static_cast<double>(v) * v;
  }
  mean /= static_cast<double>(w.size());
  EXPECT_NEAR(mean, 0.0, 0.05);
  EXPECT_NEAR(std::sqrt(sq / static_cast<double>(w.size()) - mean * mean), 1.0, 0.05);
}

TEST(NnDropoutModule, TrainingMasksFreshPerCallEvalIsIdentity) {
  oa::ml::Generator g(7);
  Dropout drop(0.25, g);
  const auto xv = oa::test::test_values(4 * 257, 8);
  const Matrix x = Matrix::from_vector({4, 257}, xv);
  // The k-th training call uses the k-th seed of a Generator seeded from `g` at construction.
  oa::ml::Generator expected_seeds(oa::ml::Generator(7).next_seed());
  const Matrix y1 = drop(x), y2 = drop(x);
  EXPECT_TRUE(oa_test::near(y1.to_vector(), ref::dropout(f64(xv), 0.25, expected_seeds.next_seed()), 1e-6, 1e-6));
  EXPECT_TRUE(oa_test::near(y2.to_vector(), ref::dropout(f64(xv), 0.25, expected_seeds.next_seed()), 1e-6, 1e-6));
  std::int64_t zeros = 0;
  for (float v : y1.to_vector()) zeros += v == 0.0f;
  EXPECT_NEAR(static_cast<double>(zeros) / static_cast<double>(xv.size()), 0.25, 0.05);
  drop.eval();
  oa::TraceCapture trace(x.engine());
  EXPECT_TRUE(drop(x).same_as(x));
  EXPECT_TRUE(trace.ops().empty());
  // Gradients flow through the kept elements only, scaled like them.
  drop.train();
  const Matrix xs = oa::set_requires_grad(Matrix::from_vector({4, 257}, xv));
  const Matrix y = drop(xs);
  oa::backward(oa::matrix::sum_all(y));
  const auto gy = oa::grad(xs).to_vector(), yv = y.to_vector();
  for (std::size_t i = 0; i < gy.size(); ++i) EXPECT_EQ(gy[i], yv[i] == 0.0f ? 0.0f : 1.0f / 0.75f) << i;
}

}  // namespace
