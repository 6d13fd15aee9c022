// oa::dist::DataParallel against single-process training of the same model on
// the same global batches (every rank runs the single-process reference too).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "oa/oa.hpp"

namespace {

using oa::Matrix;
using oa::dist::Communicator;
namespace nn = oa::ml::nn;

constexpr std::int64_t kIn = 6, kHidden = 16, kClasses = 3, kRankBatch = 4, kSteps = 6;

// Linear -> (BatchNorm1d, with `norm`) -> ReLU -> Linear.
struct Mlp {
  static constexpr double kMomentum = 0.1;
  oa::ml::Generator generator{7};
  nn::Linear first{kIn, kHidden, generator}, second{kHidden, kClasses, generator};
  std::shared_ptr<nn::BatchNorm1d> norm;
  explicit Mlp(bool with_norm = false) {
    if (with_norm) norm = std::make_shared<nn::BatchNorm1d>(kHidden, 1e-5, kMomentum);
    std::vector<std::string> names = {"first.weight", "first.bias", "second.weight", "second.bias"};
    if (norm) names.insert(names.begin() + 2, {"norm.weight", "norm.bias"});
    auto p = parameters();
    for (std::size_t i = 0; i < p.size(); ++i) p[i].set_name(names[i]);
  }
  std::vector<oa::ml::Parameter> parameters() const {
    auto p = first.parameters(), q = second.parameters();
    if (norm) {
      auto n = norm->parameters();
      p.insert(p.end(), n.begin(), n.end());
    }
    p.insert(p.end(), q.begin(), q.end());
    return p;
  }
  Matrix operator()(const Matrix& x) {
    Matrix h = first(x);
    return second(oa::matrix::relu(norm ? (*norm)(h) : h));
  }
};

// Global batch `step`: samples interleaved over the ranks as DistributedSampler
// shards them (rank r holds samples r, r + size, ...); `rank` < 0 gives all of them.
std::pair<Matrix, Matrix> batch(std::int64_t step, int rank, int size) {
  const std::int64_t global = kRankBatch * size;
  std::vector<float> x;
  std::vector<std::int32_t> y;
  for (std::int64_t i = 0; i < global; ++i) {
    if (rank >= 0 && i % size != rank) continue;
    for (std::int64_t k = 0; k < kIn; ++k) x.push_back(std::sin(0.7f * static_cast<float>(step * global + i) + 1.3f * static_cast<float>(k)));
    y.push_back(static_cast<std::int32_t>((step + i) % kClasses));
  }
  const auto n = static_cast<std::int64_t>(y.size());
  return {Matrix::from_vector({n, kIn}, x), Matrix::from_i32({n}, y)};
}

std::vector<float> flat_weights(const Mlp& m) {
  std::vector<float> w;
  for (const auto& p : m.parameters()) {
    auto v = p.value().to_vector();
    w.insert(w.end(), v.begin(), v.end());
  }
  return w;
}

// One training step of `model` on this rank's shard of global batch `step`; returns the loss.
Matrix ddp_step(Mlp& model, oa::dist::DataParallel& ddp, oa::ml::optim::Sgd& opt, std::int64_t step, Communicator& world) {
  auto [x, y] = batch(step, world.rank(), world.size());
  Matrix loss = oa::ml::cross_entropy(model(x), y);
  opt.zero_grad();
  oa::backward(loss);
  ddp.all_reduce_gradients();
  opt.step();
  return loss;
}

// Whether `mine` equals rank 0's values bit for bit.
bool same_as_rank0(const std::vector<float>& mine, Communicator& world) {
  std::vector<float> rank0 = mine;
  world.broadcast(std::span<float>(rank0), 0);
  return std::memcmp(rank0.data(), mine.data(), mine.size() * sizeof(float)) == 0;
}

TEST(DistDataParallel, MatchesSingleProcessAndKeepsReplicasIdentical) {
  Communicator& world = Communicator::world();
  const int size = world.size();

  Mlp reference;
  oa::ml::optim::Sgd reference_opt(reference.parameters(), {.lr = 0.1f, .momentum = 0.9f});
  std::vector<float> reference_losses;
  for (std::int64_t s = 0; s < kSteps; ++s) {
    auto [x, y] = batch(s, -1, size);
    Matrix loss = oa::ml::cross_entropy(reference(x), y);
    reference_opt.zero_grad();
    oa::backward(loss);
    reference_opt.step();
    reference_losses.push_back(loss.item());
  }

  Mlp model;
  if (world.rank() != 0) model.second.parameters()[0].write(std::vector<float>(kHidden * kClasses, 0.5f));  // undone by the broadcast
  // Small buckets: several all-reduces per step (those whose reads land while
  // backward records start then; how many depends on how far the device lags).
  oa::dist::DataParallel ddp(model.parameters(), world, {.bucket_bytes = 64});
  oa::ml::optim::Sgd opt(model.parameters(), {.lr = 0.1f, .momentum = 0.9f});
  std::vector<double> losses;
  for (std::int64_t s = 0; s < kSteps; ++s) {
    losses.push_back(ddp_step(model, ddp, opt, s, world).item());
    if (size > 1) {
      EXPECT_EQ(ddp.stats().buckets, ddp.bucket_count());
      EXPECT_EQ(ddp.stats().bytes, static_cast<std::uint64_t>((kIn * kHidden + kHidden + kHidden * kClasses + kClasses) * 4));
      EXPECT_LE(ddp.stats().started_in_backward, ddp.stats().buckets);
    }
  }
  world.all_reduce(std::span<double>(losses), oa::dist::ReduceOp::Average);
  for (std::int64_t s = 0; s < kSteps; ++s)
    EXPECT_NEAR(losses[static_cast<std::size_t>(s)], reference_losses[static_cast<std::size_t>(s)], 2e-5) << "step " << s;
  if (size > 1) {
    EXPECT_GT(ddp.bucket_count(), 1u);
  }

  const std::vector<float> mine = flat_weights(model), want = flat_weights(reference);
  for (std::size_t i = 0; i < mine.size(); ++i) ASSERT_NEAR(mine[i], want[i], 1e-4) << "weight " << i;
  EXPECT_TRUE(same_as_rank0(mine, world)) << "the replicas' weights differ";
}

std::vector<float> concat(const Matrix& a, const Matrix& b) {
  std::vector<float> v = a.to_vector(), w = b.to_vector();
  v.insert(v.end(), w.begin(), w.end());
  return v;
}

// Trains with per-rank BatchNorm statistics, then averages them: equal on
// every rank, bit for bit, and equal to the running statistics of the ranks'
// mean batch statistics, tracked on the host in f64 from the global batch.
TEST(DistDataParallel, AveragesBuffersAcrossRanks) {
  Communicator& world = Communicator::world();
  const int size = world.size();
  Mlp model(true);
  nn::BatchNorm1d& norm = *model.norm;
  if (world.rank() != 0) norm.running_var().write(std::vector<float>(kHidden, 3.0f));  // undone by the broadcast
  oa::dist::DataParallel ddp(model.parameters(), world, {}, norm.named_buffers());
  EXPECT_EQ(norm.running_var().to_vector(), std::vector<float>(kHidden, 1.0f));
  oa::ml::optim::Sgd opt(model.parameters(), {.lr = 0.1f});

  // Per channel: the running mean of the global batch means, and the running
  // variance of the mean over the ranks of each rank's unbiased batch variance.
  std::vector<double> want_mean(kHidden, 0.0), want_var(kHidden, 1.0);
  for (std::int64_t s = 0; s < kSteps; ++s) {
    {
      oa::NoGradGuard no_grad;
      const auto [x, unused] = batch(s, -1, size);
      const std::vector<float> h = model.first(x).to_vector();  // [global batch, kHidden], before this step's update
      const std::int64_t rows = kRankBatch * size;
      for (std::int64_t c = 0; c < kHidden; ++c) {
        double mean = 0, var = 0;
        for (int r = 0; r < size; ++r) {
          double sum = 0, square = 0;
          for (std::int64_t i = r; i < rows; i += size) sum += h[static_cast<std::size_t>(i * kHidden + c)];
          const double rank_mean = sum / kRankBatch;
          for (std::int64_t i = r; i < rows; i += size) {
            const double d = h[static_cast<std::size_t>(i * kHidden + c)] - rank_mean;
            square += d * d;
          }
          mean += rank_mean / size;
          var += square / (kRankBatch - 1) / size;
        }
        auto& m = want_mean[static_cast<std::size_t>(c)];
        auto& v = want_var[static_cast<std::size_t>(c)];
        m = (1 - Mlp::kMomentum) * m + Mlp::kMomentum * mean;
        v = (1 - Mlp::kMomentum) * v + Mlp::kMomentum * var;
      }
    }
    ddp_step(model, ddp, opt, s, world);
  }

  std::vector<float> mine = concat(norm.running_mean(), norm.running_var());
  const bool same_before = same_as_rank0(mine, world);
  if (size > 1 && world.rank() != 0) {
    EXPECT_FALSE(same_before) << "the shards gave the same statistics";
  }
  ddp.average_buffers();
  mine = concat(norm.running_mean(), norm.running_var());
  EXPECT_TRUE(same_as_rank0(mine, world)) << "the replicas' buffers differ";
  for (std::size_t c = 0; c < static_cast<std::size_t>(kHidden); ++c) {
    EXPECT_NEAR(mine[c], want_mean[c], 1e-5) << "running_mean " << c;
    EXPECT_NEAR(mine[kHidden + c], want_var[c], 1e-4 * want_var[c]) << "running_var " << c;
  }
}

TEST(DistDataParallel, BadArguments) {
  Communicator& world = Communicator::world();
  EXPECT_THROW(oa::dist::DataParallel({}, world), oa::Error);
  Mlp model;
  EXPECT_THROW(oa::dist::DataParallel(model.parameters(), world, {.bucket_bytes = 0}), oa::Error);
  const std::vector<std::int32_t> zero = {0};
  EXPECT_NO_THROW(oa::dist::DataParallel(model.parameters(), world, {}, {{"counter", Matrix::from_i32({1}, zero)}}));  // left alone
  EXPECT_THROW(oa::dist::DataParallel(model.parameters(), world, {}, {{"half", oa::matrix::cast(Matrix::zeros({1}), oa::DType::F16)}}),
               oa::Error);
  EXPECT_THROW(oa::dist::DataParallel(model.parameters(), world, {}, {{"missing", Matrix()}}), oa::Error);
}

}  // namespace
