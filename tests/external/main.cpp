// Uses oa through the umbrella header only: relu(a @ b - 4) for a [2, 3] and
// b [3, 2] on the default device, checked against the same sum on the host.
// Exit status 0 when every element matches and no validation message was seen.
// It returns with work still recorded on the default engine, which the exit
// handlers must tear down cleanly (also under OA_VALIDATION=1).
#include <oa/oa.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

int main() {
  try {
    oa::Engine engine;
    const std::vector<float> a_values = {1, 2, 3, 4, 5, 6};
    const std::vector<float> b_values = {0.5f, -1, 2, 0, 1, 3};
    const auto a = oa::Matrix::from_vector({2, 3}, a_values, engine);
    const auto b = oa::Matrix::from_vector({3, 2}, b_values, engine);
    const std::vector<float> got = oa::matrix::relu(oa::matrix::matmul(a, b) - 4.0f).to_vector();

    int mismatches = 0;
    for (int i = 0; i < 2; ++i) {
      for (int j = 0; j < 2; ++j) {
        double sum = 0;
        for (int k = 0; k < 3; ++k) sum += double(a_values[i * 3 + k]) * b_values[k * 2 + j];
        const double want = std::max(sum - 4.0, 0.0);
        const float have = got[i * 2 + j];
        if (std::abs(have - want) > 1e-5) {
          std::fprintf(stderr, "element [%d, %d]: got %g, want %g\n", i, j, have, want);
          ++mismatches;
        }
      }
    }
    if (oa::validation_message_count() != 0) {
      std::fprintf(stderr, "%llu validation messages\n", static_cast<unsigned long long>(oa::validation_message_count()));
      return 1;
    }
    if (mismatches != 0) return 1;
    std::printf("oa external project: relu(a @ b - 4) matches on %s\n", engine.device().name.c_str());
    const auto x = oa::Matrix::arange(0, 24);
    (void)x.to_vector();
    const auto pending = oa::matrix::silu(x);  // recorded, never submitted
    return 0;
  } catch (const oa::Error& e) {
    std::fprintf(stderr, "oa error: %s\n", e.what());
    return 1;
  }
}
