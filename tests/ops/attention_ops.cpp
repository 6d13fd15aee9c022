// Op table cases of the attention family (oa/ml/attention.hpp): heads,
// the scaled masked softmax and scaled dot-product attention on both paths.
#include <algorithm>
#include <cmath>

#include "ops/op_table.hpp"
#include "reference/attention.hpp"
#include "reference/layout.hpp"

namespace oa::test {
namespace {

using oa::ml::SdpaBackend;

OA_OP_CASES(split_heads, "oa::ml::split_heads") {
  const std::int64_t B = 2, S = 3, H = 2, Dh = 4;
  return {{"b2_h2", {random_input({B * S, H * Dh}, 501)}, [](const Inputs& x) { return oa::ml::split_heads(x[0], B, S, H); },
           [](const RefInputs& x) { return reference::split_heads(x[0], B, S, H, Dh); }}};
}

OA_OP_CASES(merge_heads, "oa::ml::merge_heads") {
  const std::int64_t B = 2, S = 3, H = 2, Dh = 4;
  return {{"b2_h2", {random_input({B * H, S, Dh}, 502)}, [](const Inputs& x) { return oa::ml::merge_heads(x[0], B, S, H); },
           [](const RefInputs& x) { return reference::merge_heads(x[0], B, S, H, Dh); }}};
}

// Each of the three results (the backward gets zeros for the other two).
OA_OP_CASES(split_qkv_heads, "oa::ml::split_qkv_heads") {
  const std::int64_t B = 2, S = 3, H = 2, Dh = 4;
  std::vector<OpCase> cases;
  for (int part = 0; part < 3; ++part)
    cases.push_back({label("part", part), {random_input({B * S, 3 * H * Dh}, 503)},
                     [part](const Inputs& x) {
                       const oa::ml::QkvHeads r = oa::ml::split_qkv_heads(x[0], B, S, H);
                       return part == 0 ? r.q : part == 1 ? r.k : r.v;
                     },
                     [part](const RefInputs& x) { return reference::split_qkv_heads(x[0], B, S, H, Dh, part); }});
  return cases;
}

// Without a mask, with a [Sq, Sk] mask broadcast to every batch item (a
// -inf entry included), rows of 300 (more than one workgroup's lanes), no
// rows and 16-bit scores.
OA_OP_CASES(softmax_scaled_masked, "oa::ml::softmax_scaled_masked") {
  std::vector<OpCase> cases;
  cases.push_back({"no_mask", {random_input({2, 3, 5}, 511, -2, 2)},
                   [](const Inputs& x) { return oa::ml::softmax_scaled_masked(x[0], Matrix(), 0.7f); },
                   [](const RefInputs& x) { return reference::softmax(x[0], 6, 5, 0.7); }});
  GradInput mask = random_input({3, 5}, 512, -1, 1, false);
  mask.values[4] = -INFINITY;
  cases.push_back({"mask", {random_input({2, 3, 5}, 513, -2, 2), mask},
                   [](const Inputs& x) { return oa::ml::softmax_scaled_masked(x[0], x[1], 1.5f); },
                   [](const RefInputs& x) { return reference::softmax(x[0], 6, 5, 1.5, x[1], 3); }});
  cases.push_back({"long", {random_input({2, 300}, 514, -2, 2)},
                   [](const Inputs& x) { return oa::ml::softmax_scaled_masked(x[0], Matrix(), 1.0f); },
                   [](const RefInputs& x) { return reference::softmax(x[0], 2, 300, 1.0); }});
  // oa::ml::softmax: the last axis by default, another through a transpose before and after.
  const auto softmax_rows = [](const std::vector<double>& x, std::int64_t L) {
    return reference::softmax(x, static_cast<std::int64_t>(x.size()) / L, L, 1.0);
  };
  cases.push_back({"softmax_last", {random_input({3, 4}, 515, -2, 2)}, [](const Inputs& x) { return oa::ml::softmax(x[0]); },
                   [](const RefInputs& x) { return reference::softmax(x[0], 3, 4, 1.0); }});
  cases.push_back({"softmax_empty", {random_input({0, 4}, 517, -2, 2)}, [](const Inputs& x) { return oa::ml::softmax(x[0]); },
                   [](const RefInputs& x) { return reference::softmax(x[0], 0, 4, 1.0); }});
  cases.push_back({"softmax_dim1", {random_input({2, 3, 5}, 516, -2, 2)}, [](const Inputs& x) { return oa::ml::softmax(x[0], 1); },
                   [softmax_rows](const RefInputs& x) { return reference::along_axis(x[0], {2, 3, 5}, 1, softmax_rows); },
                   kGradTolerance,
                   {"oa::matrix::permute", "oa::ml::softmax_scaled_masked", "oa::matrix::permute"}});
  // f16 and bf16 scores, computed in f32 (the result and gradient rounded once).
  for (const char* base : {"no_mask", "softmax_last", "softmax_dim1"})
    for (DType dtype : {DType::F16, DType::BF16}) {
      const auto c = std::find_if(cases.begin(), cases.end(), [base](const OpCase& k) { return k.label == base; });
      cases.push_back(half_variant("oa::ml::softmax_scaled_masked", *c, dtype));
    }
  return cases;
}

// q [BH, Sq, Dh], k [BH, Sk, Dh], v [BH, Sk, Dv], with a per-row mask or
// causal hiding (Sq < Sk: bottom-right aligned), no keys (Sk = 0: zero
// output), no queries (Sq = 0) or an empty batch (BH = 0: empty output, zero
// k and v gradients), on the flash and the materialised path.
OA_OP_CASES(scaled_dot_product_attention, "oa::ml::scaled_dot_product_attention") {
  struct Case {
    const char* label;
    bool mask, causal;
    std::int64_t sk, sq = 3, bh = 2;
  };
  std::vector<OpCase> cases;
  std::uint64_t seed = 521;
  const std::int64_t Dh = 4, Dv = 3;
  for (SdpaBackend backend : {SdpaBackend::Flash, SdpaBackend::Math})
    for (const Case& c : {Case{"plain", false, false, 5}, Case{"mask", true, false, 5}, Case{"causal", false, true, 5},
                          Case{"no_keys", true, false, 0}, Case{"no_queries", true, false, 5, 0},
                          Case{"empty_batch", false, true, 5, 3, 0}}) {
      const std::int64_t Sk = c.sk, Sq = c.sq, BH = c.bh;
      std::vector<GradInput> inputs = {random_input({BH, Sq, Dh}, seed), random_input({BH, Sk, Dh}, seed + 1),
                                       random_input({BH, Sk, Dv}, seed + 2)};
      if (c.mask) inputs.push_back(random_input({BH * Sq, Sk}, seed + 3, -2, 0, false));
      seed += 4;
      const bool mask = c.mask, causal = c.causal;
      cases.push_back({std::string(backend == SdpaBackend::Flash ? "flash_" : "math_") + c.label, inputs,
                       [mask, causal, backend](const Inputs& x) {
                         return oa::ml::scaled_dot_product_attention(x[0], x[1], x[2], mask ? x[3] : Matrix(), 0.6f, causal, backend);
                       },
                       [mask, causal, Sk, Sq, BH](const RefInputs& x) {
                         reference::AttentionProblem p{BH, Sq, Sk, Dh, Dv, 0.6, causal};
                         if (mask) {
                           p.mask = x[3];
                           p.mask_rows = BH * Sq;
                         }
                         return reference::attention(p, x[0], x[1], x[2]).out;
                       }});
    }
  return cases;
}

// Packed causal self-attention: q, k, v [B*S, D] with H heads.
OA_OP_CASES(scaled_dot_product_attention_causal, "oa::ml::scaled_dot_product_attention_causal") {
  const std::int64_t B = 2, S = 3, H = 2, Dh = 4;
  return {{"b2_h2",
           {random_input({B * S, H * Dh}, 531), random_input({B * S, H * Dh}, 532), random_input({B * S, H * Dh}, 533)},
           [](const Inputs& x) { return oa::ml::scaled_dot_product_attention_causal(x[0], x[1], x[2], S, H); },
           [](const RefInputs& x) {
             const reference::AttentionProblem p{B * H, S, S, Dh, Dh, 1 / std::sqrt(double(Dh)), true};
             const reference::Vec out = reference::attention(p, reference::split_heads(x[0], B, S, H, Dh),
                                                             reference::split_heads(x[1], B, S, H, Dh),
                                                             reference::split_heads(x[2], B, S, H, Dh))
                                             .out;
             return reference::merge_heads(out, B, S, H, Dh);
           }}};
}

}  // namespace
}  // namespace oa::test
