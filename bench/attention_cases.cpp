// Attention sweeps: the batched products of materialised attention (scores
// q k^T and probabilities @ v), scaled dot-product attention over head dims
// 32-256, causal and full, prefill, cross attention and decoding (Sq = 1),
// forward and forward + backward, and softmax over attention scores and LM
// vocabularies. q, k, v are [B*H, S, D] here; the PyTorch twins use [B, H, S, D].
#include <cmath>
#include <limits>
#include <optional>

#include "bench.hpp"
#include "model_shapes.hpp"

namespace {
using oa::Matrix;
using oa_bench::Case;
using oa_bench::Heads;
using oa_bench::kAttention;
using oa_bench::quick_form;
using oa_bench::quick_extent;

// Score entries a query sees: causal is aligned bottom-right (query i sees keys
// j <= i + Sk - Sq), as oa and torch.nn.attention.bias.causal_lower_right do.
double visible(const Heads& a) {
  if (!a.causal) return double(a.sq) * a.sk;
  double n = 0;
  for (std::int64_t i = 0; i < a.sq; ++i) n += double(std::clamp<std::int64_t>(i + a.sk - a.sq + 1, 0, a.sk));
  return n;
}

// The sdpa cases of `family`; with `autocast` (the 16-bit family) the step
// runs under oa::AutocastGuard of that dtype.
std::vector<Case> sdpa_cases(const char* family, bool quick, std::optional<oa::DType> autocast) {
  std::vector<Case> cases;
  const double width = autocast ? 2 : 4;
  const std::string dtype_suffix = autocast ? fmt::format("_{}", oa::to_string(*autocast)) : std::string();
  for (Heads a : kAttention) {
    if (quick) {
      a = quick_form(a, 8);
      if (a.sq > a.sk) a.sq = a.sk;
    }
    for (const bool bwd : {false, true}) {
      if (bwd && !a.backward) continue;
      const double flops = 4.0 * a.b * a.h * visible(a) * a.d * (bwd ? 3.5 : 1);
      const double bytes = width * a.b * a.h * a.d * (2 * a.sq + 2 * a.sk) * (bwd ? 2.5 : 1);
      nlohmann::json p = {{"b", a.b}, {"h", a.h}, {"sq", a.sq}, {"sk", a.sk}, {"d", a.d}, {"causal", a.causal}, {"backward", bwd}};
      if (autocast) p["autocast"] = oa::to_string(*autocast);
      cases.push_back({fmt::format("sdpa_{}_{}{}{}", a.causal ? "causal" : "full", a.model, dtype_suffix, oa_bench::suffix(bwd)),
                       family, "sdpa", p, flops, bytes, [a, bwd, autocast](const oa::Engine& e) {
                         const std::int64_t bh = a.b * a.h;
                         auto q = oa_bench::input({bh, a.sq, a.d}, 1, e, bwd), k = oa_bench::input({bh, a.sk, a.d}, 2, e, bwd),
                              v = oa_bench::input({bh, a.sk, a.d}, 3, e, bwd);
                         return oa_bench::step(oa_bench::autocast(
                                                   [=] {
                                                     return oa::ml::scaled_dot_product_attention(q, k, v, Matrix(), std::nullopt,
                                                                                                 a.causal);
                                                   },
                                                   autocast),
                                               bwd, e);
                       }});
    }
  }
  return cases;
}

const oa_bench::Register kAttentionSweep{[](bool quick) { return sdpa_cases("attention", quick, std::nullopt); }};
// The same under F16 autocast (the tensor-core GEMMs where the device has cooperative matrices).
const oa_bench::Register kAttention16Sweep{[](bool quick) { return sdpa_cases("attention16", quick, oa::DType::F16); }};

// The attention of one model as materialised attention's batched products see it.
struct Products {
  const char* model;
  std::int64_t b, h, sq, sk, d;
  bool backward;  // also forward + backward
};

// Attention scores (bmm_nt: q [BH, Sq, D] @ k [BH, Sk, D]^T) and values
// (bmm: p [BH, Sq, Sk] @ v [BH, Sk, D]) of materialised attention.
const oa_bench::Register kBmmSweep{[](bool quick) {
  std::vector<Case> cases;
  // clang-format off
  const Products shapes[] = {
      {"gpt2_s1024_d64",          8, 12, 1024, 1024,  64, true},
      {"bert_base_s512_d64",     32, 12,  512,  512,  64, true},
      {"vit_b16_s197_d64",       64, 12,  197,  197,  64, false},
      {"llama7b_s2048_d128",      1, 32, 2048, 2048, 128, false},
      {"sd15_cross_s4096x77_d40", 2,  8, 4096,   77,  40, false},
      {"llama7b_decode_1x4096_d128", 8, 32, 1, 4096, 128, false},
  };
  // clang-format on
  for (Products a : shapes) {
    if (quick) a = quick_form(a, 1);
    const std::int64_t bh = a.b * a.h;
    for (const bool scores : {true, false})
      for (const bool bwd : {false, true}) {
        if (bwd && !a.backward) continue;
        // bmm_nt: m = Sq, n = Sk, k = D; bmm: m = Sq, k = Sk, n = D.
        const std::int64_t m = a.sq, n = scores ? a.sk : a.d, k = scores ? a.d : a.sk;
        cases.push_back({fmt::format("{}_{}{}", scores ? "bmm_nt_scores" : "bmm_values", a.model, oa_bench::suffix(bwd)), "bmm",
                         scores ? "bmm_nt" : "bmm", {{"batch", bh}, {"m", m}, {"n", n}, {"k", k}, {"backward", bwd}},
                         2.0 * bh * m * n * k * (bwd ? 3 : 1), 4.0 * bh * (m * k + n * k + m * n) * (bwd ? 3 : 1),
                         [=](const oa::Engine& e) {
                           auto x = oa_bench::input({bh, m, k}, 1, e, bwd);
                           auto y = oa_bench::input(scores ? oa::Shape{bh, n, k} : oa::Shape{bh, k, n}, 2, e, bwd);
                           if (scores) return oa_bench::step([=] { return oa::ml::bmm_nt(x, y); }, bwd, e);
                           return oa_bench::step([=] { return oa::ml::bmm(x, y); }, bwd, e);
                         }});
      }
  }
  return cases;
}};

struct Rows {
  const char* model;
  std::int64_t batch, rows, cols;
  float scale;
  bool masked;    // causal mask [rows, cols] (0 or -inf) broadcast over batch
  bool backward;
};

// softmax(scale * x + mask) over the last axis of [batch, rows, cols].
const oa_bench::Register kSoftmaxSweep{[](bool quick) {
  std::vector<Case> cases;
  // clang-format off
  const Rows shapes[] = {
      {"gpt2_scores_causal_s1024",    96, 1024,   1024, 0.125f,   true,  true},
      {"bert_base_scores_s512",      384,  512,    512, 0.125f,   false, true},
      {"llama7b_scores_causal_s2048", 32, 2048,   2048, 0.08839f, true,  false},
      {"vit_b16_scores_s197",        768,  197,    197, 0.125f,   false, false},
      {"sd15_cross_scores_77",        64, 1024,     77, 0.15811f, false, false},
      {"gpt2_vocab_50257",             1, 4096,  50257, 1.0f,     false, true},
      {"llama2_vocab_32000",           1, 4096,  32000, 1.0f,     false, false},
      {"llama3_vocab_128256",          1, 2048, 128256, 1.0f,     false, false},
  };
  // clang-format on
  for (Rows r : shapes) {
    if (quick) {
      r.batch = std::min<std::int64_t>(r.batch, 2);
      r.rows = quick_extent(r.rows, 16, 8);
      r.cols = quick_extent(r.cols, 16, 8);
      if (r.masked) r.cols = r.rows;
    }
    for (const bool bwd : {false, true}) {
      if (bwd && !r.backward) continue;
      const double elements = double(r.batch) * r.rows * r.cols;
      cases.push_back({fmt::format("softmax_{}{}", r.model, oa_bench::suffix(bwd)), "softmax", "softmax",
                       {{"batch", r.batch}, {"rows", r.rows}, {"cols", r.cols}, {"scale", r.scale}, {"masked", r.masked},
                        {"backward", bwd}},
                       0, 4 * elements * (bwd ? 5 : 2), [r, bwd](const oa::Engine& e) {
                         auto x = oa_bench::input({r.batch, r.rows, r.cols}, 1, e, bwd);
                         Matrix mask;
                         if (r.masked) {
                           std::vector<float> m(std::size_t(r.rows * r.cols), 0.0f);
                           for (std::int64_t i = 0; i < r.rows; ++i)
                             for (std::int64_t j = i + 1; j < r.cols; ++j)
                               m[std::size_t(i * r.cols + j)] = -std::numeric_limits<float>::infinity();
                           mask = Matrix::from_vector({r.rows, r.cols}, m, e);
                         }
                         return oa_bench::step([=] { return oa::ml::softmax_scaled_masked(x, mask, r.scale); }, bwd, e);
                       }});
    }
  }
  return cases;
}};

}  // namespace
