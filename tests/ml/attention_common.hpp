#pragma once
// Helpers shared by the attention tests (tests/ml/attention_*test.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "ml/attention/internal.hpp"
#include "oa/ml/attention.hpp"
#include "oa/oa.hpp"
#include "reference/attention.hpp"

namespace oa::attention_test {

// The names every attention test uses; `using namespace oa::attention_test` brings them in.
using oa::Matrix;
using oa::Shape;
using oa::reference::Vec;
namespace ml = oa::ml;
namespace ref = oa::reference;
namespace attention_detail = oa::ml::attention_detail;

// The lowerings of attention a test runs through: the flash path with its
// forward and backward each fused or through GEMMs, and the materialised path.
struct AttentionPath {
  ml::SdpaBackend backend;
  attention_detail::FlashLowering forward, backward;
  const char* name;
  // Makes this path's flash lowerings the current ones while it lives.
  attention_detail::FlashLoweringGuard guard() const { return attention_detail::FlashLoweringGuard(forward, backward); }
};
using attention_detail::FlashLowering;
inline constexpr AttentionPath kAttentionPaths[] = {
    {ml::SdpaBackend::Flash, FlashLowering::Fused, FlashLowering::Fused, "flash"},
    {ml::SdpaBackend::Flash, FlashLowering::Fused, FlashLowering::Gemm, "flash, GEMM backward"},
    {ml::SdpaBackend::Flash, FlashLowering::Gemm, FlashLowering::Gemm, "flash through GEMMs"},
    {ml::SdpaBackend::Math, FlashLowering::Auto, FlashLowering::Auto, "materialized"},
};

// Runs body(backend) once per path of kAttentionPaths, with that path's
// lowerings current and "<what> <path name>" (the name alone when `what` is
// empty) traced in failure messages; stops after a fatal failure.
template <typename Body>
void for_each_path(const std::string& what, Body&& body) {
  for (const AttentionPath& path : kAttentionPaths) {
    const auto lowering = path.guard();
    SCOPED_TRACE(what.empty() ? std::string(path.name) : what + " " + path.name);
    body(path.backend);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

inline constexpr float kInf = std::numeric_limits<float>::infinity();
// f32 accumulation over at most a few thousand terms of magnitude ~1.
inline constexpr double kAtol = 3e-5, kRtol = 3e-4;
inline const char* const kSdpa = "oa::ml::scaled_dot_product_attention";

inline oa::Engine engine() { return oa::Engine::default_engine(); }

inline std::vector<float> random_floats(std::size_t n, std::uint32_t seed, float low = -1.0f, float high = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(low, high);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(gen);
  return v;
}

inline Vec to_f64(const std::vector<float>& v) { return Vec(v.begin(), v.end()); }

// The f64 problem of attention over q [bh, sq, dh], k [bh, sk, dh], v [bh, sk, dv]
// with the default scale 1/sqrt(dh), without a mask.
inline ref::AttentionProblem attention_problem(std::int64_t bh, std::int64_t sq, std::int64_t sk, std::int64_t dh, std::int64_t dv,
                                               bool causal, ml::CausalVariant variant) {
  ref::AttentionProblem p;
  p.bh = bh;
  p.sq = sq;
  p.sk = sk;
  p.dh = dh;
  p.dv = dv;
  p.scale = 1.0 / std::sqrt(static_cast<double>(dh));
  p.causal = causal;
  p.upper_left = variant == ml::CausalVariant::UpperLeft;
  return p;
}

}  // namespace oa::attention_test
