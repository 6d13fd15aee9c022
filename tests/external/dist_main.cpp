// Uses oa::dist through the umbrella header: the sum over the ranks of
// rank + 1, all-reduced by the world communicator, against size (size + 1) / 2.
// Exit status 0 when it matches; a world of 1 without mpirun.
#include <oa/oa.hpp>

#include <cstdio>
#include <span>
#include <vector>

int main() {
  try {
    auto& world = oa::dist::Communicator::world();
    std::vector<double> value = {world.rank() + 1.0};
    world.all_reduce(std::span<double>(value));
    const double want = world.size() * (world.size() + 1) / 2.0;
    if (value[0] != want) {
      std::fprintf(stderr, "rank %d: all-reduce gave %g, want %g\n", world.rank(), value[0], want);
      return 1;
    }
    if (world.rank() == 0) std::printf("oa external project: oa::dist all-reduce over %d rank(s) matches\n", world.size());
    return 0;
  } catch (const oa::Error& e) {
    std::fprintf(stderr, "oa error: %s\n", e.what());
    return 1;
  }
}
