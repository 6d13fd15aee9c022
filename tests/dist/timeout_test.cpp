// A rank that skips a collective, run last in oa_dist_tests: the collective it
// leaves behind must not slow the tests after it.
#include <gtest/gtest.h>

#include "oa/oa.hpp"

namespace {

using oa::dist::Communicator;

// A rank that never joins a collective: the others get Error(Communication)
// after the timeout instead of hanging, and the communicator refuses more.
TEST(DistTimeout, APeerThatSkipsACollective) {
  Communicator& world = Communicator::world();
  if (world.size() < 2) GTEST_SKIP() << "needs two ranks";
  Communicator c = world.duplicate();
  c.set_timeout_seconds(1);
  if (world.rank() == 0) {
    try {
      std::vector<float> v = {1, 2, 3};
      c.all_reduce(std::span<float>(v));
      FAIL() << "no error";
    } catch (const oa::Error& e) {
      EXPECT_EQ(e.kind(), oa::ErrorKind::Communication);
      EXPECT_NE(std::string(e.what()).find("rank 0 of 2 waited"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("OA_DIST_TIMEOUT"), std::string::npos) << e.what();
    }
    EXPECT_THROW(c.barrier(), oa::Error);
  }
  world.barrier();
  // Rank 1 joins late, so that rank 0's abandoned all-reduce completes (while
  // rank 0 waits in the barrier) and no operation is left pending at exit.
  if (world.rank() == 1) {
    std::vector<float> v = {1, 2, 3};
    c.all_reduce(std::span<float>(v));
  }
  world.barrier();
}

}  // namespace
