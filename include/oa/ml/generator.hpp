#pragma once
// oa::ml::Generator: the seeded host-side random stream behind initialisation
// seeds, data shuffling and text windows.
//
// It is counter-based (SplitMix64, Steele, Lea & Flood, "Fast splittable
// pseudorandom number generators", OOPSLA 2014): the k-th value is a fixed
// function of (seed, k), so a seed gives the same stream on every platform and
// standard library (std::uniform_int_distribution gives no such promise).
// Device-side randomness (Matrix::uniform / Matrix::normal) is Philox keyed by
// seeds drawn from this stream.
#include <cstdint>

#include "oa/core/error.hpp"

namespace oa::ml {

class Generator {
 public:
  explicit Generator(std::uint64_t seed) : seed_(seed) {}

  // The SplitMix64 output mixer: a bijection on 64-bit words with full avalanche.
  static constexpr std::uint64_t mix(std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }

  // The next 64-bit value: mix(seed + (k + 1) * golden gamma) for the k-th call.
  std::uint64_t next_u64() {
    ++counter_;
    return mix(seed_ + counter_ * 0x9E3779B97F4A7C15ull);
  }
  // Uniform on [0, n) without modulo bias (rejection of the short top range).
  // Throws InvalidArgument for n = 0.
  std::uint64_t next_below(std::uint64_t n) {
    if (n == 0) fail(ErrorKind::InvalidArgument, "oa::ml::Generator::next_below: empty range [0, 0)");
    const std::uint64_t limit = UINT64_MAX - UINT64_MAX % n;  // values below limit map evenly
    for (;;) {
      const std::uint64_t v = next_u64();
      if (v < limit) return v % n;
    }
  }
  // A seed for a device generator (Matrix::uniform / Matrix::normal).
  std::uint64_t next_seed() { return next_u64(); }
  // An independent generator for sub-stream `stream` (for example one per
  // epoch); it depends on the seed and `stream` only, not on this one's counter.
  Generator fork(std::uint64_t stream) const { return Generator(mix(seed_ ^ mix(stream + 0x632BE59BD9B4E019ull))); }

  std::uint64_t seed() const { return seed_; }
  std::uint64_t counter() const { return counter_; }

 private:
  std::uint64_t seed_;
  std::uint64_t counter_ = 0;
};

}  // namespace oa::ml
