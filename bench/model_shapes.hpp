#pragma once
// Layer shapes of real models, shared by the bench sweeps (bench/*_cases.cpp)
// and `oa tune` (apps/oa/tune.cpp), which times the tuning points' variants
// over them.
#include <algorithm>
#include <cstdint>

namespace oa_bench {

// The quick form of an extent (tiny shapes for lavapipe and CPU checks): v /
// by, but at least min(v, low) and at most 128.
inline std::int64_t quick_extent(std::int64_t v, std::int64_t by, std::int64_t low) {
  return std::min<std::int64_t>(std::max(v / by, std::min(v, low)), 128);
}

// Transformer GEMMs: x [M, K] times a weight [N, K] as nn.Linear stores it.
struct Gemm {
  const char* model;  // model and layer: x [M, K] @ W[N, K]^T
  std::int64_t m, k, n;
  bool backward;
};

// clang-format off
inline constexpr Gemm kGemms[] = {
    {"llama7b_qkv_decode",       1, 4096, 12288, false},
    {"llama7b_mlp_up_decode",    1, 4096, 11008, false},
    {"llama7b_mlp_down_decode",  1, 11008, 4096, false},
    {"llama7b_qkv_batch8",       8, 4096, 12288, false},
    {"llama7b_o_batch32",       32, 4096, 4096,  false},
    {"gpt2_mlp_up_b128",       128, 768, 3072,   false},
    {"gpt2_qkv_s512",          512, 768, 2304,   false},
    {"llama7b_qkv_s2048",     2048, 4096, 12288, false},
    {"llama3_8b_kv_s4096",    4096, 4096, 1024,  false},
    {"llama3_8b_mlp_up_s4096",4096, 4096, 14336, false},
    {"llama7b_mlp_down_s4096",4096, 11008, 4096, true},
    {"square_4096",           4096, 4096, 4096,  false},
    {"gpt2_qkv_b4x1024",      4096, 768, 2304,   true},
    {"gpt2_attn_out_b8x1024", 8192, 768, 768,    true},
    {"gpt2_mlp_up_b8x1024",   8192, 768, 3072,   true},
    {"gpt2_mlp_down_b16x1024",16384, 3072, 768,  true},
    {"gpt2xl_mlp_up_b4x1024", 4096, 1600, 6400,  true},
    {"llama7b_mlp_up_s4096",  4096, 4096, 11008, false},
    {"chartext_attn_out_b64x128", 8192, 256, 256, true},   // oa train text's defaults
    {"chartext_mlp_up_b64x128",   8192, 256, 1024, true},
    {"chartext_mlp_down_b64x128", 8192, 1024, 256, true},
};
// clang-format on

// The quick form of a model's attention (Heads, and the attention sweep's
// Products): one sequence, two heads, lengths shrunk, the query length to no
// less than min(sq, low_sq).
template <class Attention>
inline Attention quick_form(Attention a, std::int64_t low_sq) {
  a.b = 1;
  a.h = 2;
  a.sq = quick_extent(a.sq, 16, low_sq);
  a.sk = quick_extent(a.sk, 16, 8);
  return a;
}

// Attention heads: q [B*H, Sq, D], k and v [B*H, Sk, D].
struct Heads {
  const char* model;
  std::int64_t b, h, sq, sk, d;
  bool causal;
  bool backward;  // also forward + backward (the model trains this attention)
};

// clang-format off
inline constexpr Heads kAttention[] = {
    {"swin_t_stage1_window7_d32",    2048,  3,    49,    49,  32, false, true},
    {"swin_t_stage3_window7_d32",     128, 12,    49,    49,  32, false, false},
    {"gpt2_s1024_d64",                  8, 12,  1024,  1024,  64, true,  true},
    {"bert_base_s512_d64",             32, 12,   512,   512,  64, false, true},
    {"gpt2_s4096_d64",                  1, 16,  4096,  4096,  64, true,  false},
    {"long_s16384_d64",                 1, 16, 16384, 16384,  64, true,  false},
    {"sd15_self_s1024_d80",             8,  8,  1024,  1024,  80, false, true},
    {"sd15_cross_s1024x77_d80",         8,  8,  1024,    77,  80, false, true},
    {"phi2_s2048_d80",                  4, 32,  2048,  2048,  80, true,  true},
    {"phi3_mini_s2048_d96",             2, 32,  2048,  2048,  96, true,  true},
    {"llama7b_s2048_d128",              2, 32,  2048,  2048, 128, true,  true},
    {"llama7b_prefill_chunk512x4096_d128", 1, 32, 512, 4096, 128, true,  false},
    {"llama7b_decode_1x4096_d128",      8, 32,     1,  4096, 128, true,  false},
    {"llama7b_verify4_4x4096_d128",     8, 32,     4,  4096, 128, true,  false},
    {"mistral7b_decode_1x32768_d128",   1, 32,     1, 32768, 128, true,  false},
    {"phi2_decode_1x2048_d80",         16, 32,     1,  2048,  80, true,  false},
    {"whisper_l_cross_decode_1x1500_d64", 16, 20,  1,  1500,  64, false, false},
    {"gemma7b_s2048_d256",              2, 16,  2048,  2048, 256, true,  true},
    {"gemma7b_decode_1x8192_d256",      4, 16,     1,  8192, 256, true,  false},
};
// clang-format on

}  // namespace oa_bench
