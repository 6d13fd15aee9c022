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

struct Mlp {
  oa::ml::Generator generator{7};
  nn::Linear first{kIn, kHidden, generator}, second{kHidden, kClasses, generator};
  Mlp() {
    const char* names[] = {"first.weight", "first.bias", "second.weight", "second.bias"};
    auto p = parameters();
    for (std::size_t i = 0; i < p.size(); ++i) p[i].set_name(names[i]);
  }
  std::vector<oa::ml::Parameter> parameters() const {
    auto p = first.parameters(), q = second.parameters();
    p.insert(p.end(), q.begin(), q.end());
    return p;
  }
  Matrix operator()(const Matrix& x) { return second(oa::matrix::relu(first(x))); }
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
    auto [x, y] = batch(s, world.rank(), size);
    Matrix loss = oa::ml::cross_entropy(model(x), y);
    opt.zero_grad();
    oa::backward(loss);
    ddp.all_reduce_gradients();
    opt.step();
    losses.push_back(loss.item());
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
  std::vector<float> rank0 = mine;
  world.broadcast(std::span<float>(rank0), 0);
  EXPECT_EQ(std::memcmp(rank0.data(), mine.data(), mine.size() * sizeof(float)), 0) << "the replicas' weights differ";
}

TEST(DistDataParallel, BadArguments) {
  Communicator& world = Communicator::world();
  EXPECT_THROW(oa::dist::DataParallel({}, world), oa::Error);
  Mlp model;
  EXPECT_THROW(oa::dist::DataParallel(model.parameters(), world, {.bucket_bytes = 0}), oa::Error);
}

}  // namespace
