// oa::dist::Communicator, run as `mpirun -np 2 oa_dist_tests` (ctest Dist) and
// as one process (ctest DistSingle, a world of size 1).
#include <gtest/gtest.h>

#include <thread>

#include "oa/oa.hpp"

namespace {

using oa::Matrix;
using oa::dist::Communicator;
using oa::dist::ReduceOp;

// Small integers, so that sums over ranks are exact in f32.
float value_of(int rank, std::int64_t i) { return static_cast<float>((i * 7 + rank * 13) % 101) - 50.0f; }

std::vector<float> values_of(int rank, std::int64_t n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = value_of(rank, i);
  return v;
}

TEST(DistCommunicator, WorldMatchesTheLauncher) {
  Communicator& world = Communicator::world();
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  EXPECT_EQ(world.size(), size ? std::atoi(size) : 1);
  EXPECT_GE(world.rank(), 0);
  EXPECT_LT(world.rank(), world.size());
  EXPECT_GE(world.local_rank(), 0);
}

// Sizes across the 2^22-element chunk boundary up to 2^24, through device memory.
TEST(DistCommunicator, AllReduceMatchesTheHostSum) {
  Communicator& world = Communicator::world();
  for (std::int64_t n : {std::int64_t{1}, std::int64_t{3}, std::int64_t{1000}, oa::dist::kChunkElements - 1,
                         oa::dist::kChunkElements + 5, std::int64_t{1} << 24}) {
    Matrix m = Matrix::from_vector({n}, values_of(world.rank(), n));
    world.all_reduce(m);
    const std::vector<float> got = m.to_vector();
    std::int64_t wrong = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      double want = 0;
      for (int r = 0; r < world.size(); ++r) want += value_of(r, i);
      wrong += got[static_cast<std::size_t>(i)] != static_cast<float>(want);
    }
    EXPECT_EQ(wrong, 0) << n << " elements";
  }
}

TEST(DistCommunicator, AverageBroadcastAndNonBlocking) {
  Communicator& world = Communicator::world();
  const int size = world.size();
  std::vector<double> d = {1.0 + world.rank(), 2.0};
  world.all_reduce(std::span<double>(d), ReduceOp::Average);
  EXPECT_DOUBLE_EQ(d[0], 1.0 + (size - 1) / 2.0);
  EXPECT_DOUBLE_EQ(d[1], 2.0);

  Matrix b = Matrix::full({5, 3}, static_cast<float>(10 + world.rank()));
  world.broadcast(b, size - 1);
  for (float v : b.to_vector()) EXPECT_EQ(v, static_cast<float>(10 + size - 1));

  auto request = world.start_all_reduce(values_of(world.rank(), 100), ReduceOp::Average);
  while (!request.test()) std::this_thread::yield();
  const std::vector<float>& mean = request.wait();
  for (std::int64_t i = 0; i < 100; ++i) {
    double want = 0;
    for (int r = 0; r < size; ++r) want += value_of(r, i);
    EXPECT_FLOAT_EQ(mean[static_cast<std::size_t>(i)], static_cast<float>(want / size));
  }
  EXPECT_THROW(request.wait(), oa::Error);
  world.barrier();
}

TEST(DistCommunicator, BadArgumentsNameTheCollective) {
  Communicator& world = Communicator::world();
  try {
    world.broadcast(Matrix::ones({2}), world.size());
    FAIL() << "no error";
  } catch (const oa::Error& e) {
    EXPECT_EQ(e.kind(), oa::ErrorKind::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("oa::dist::broadcast: root"), std::string::npos) << e.what();
  }
  EXPECT_THROW(world.all_reduce(Matrix::from_i32({2}, std::vector<std::int32_t>{1, 2})), oa::Error);
  EXPECT_THROW(world.set_timeout_seconds(0), oa::Error);
}

}  // namespace
