#pragma once
// Layer shapes of real models, shared by the bench sweeps (bench/*_cases.cpp)
// and `oa tune` (apps/oa/tune.cpp), which times the tuning points' variants
// over them.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <string_view>

#include "oa/oa.hpp"

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
    {"llama7b_mlp_down_batch24",24, 11008, 4096, false},
    {"gpt2_qkv_decode_batch32", 32, 768, 2304,   false},
    {"llama7b_qkv_batch64",     64, 4096, 12288, false},
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

// Convolutions: CNN layers (ResNet-50, VGG-16, ResNeXt-50, Darknet-53, U-Net), depthwise 2-D
// (MobileNetV2, EfficientNet, ConvNeXt) and 1-D (the short convolutions of
// Mamba and Hyena), audio front ends (wav2vec 2.0, Whisper) and transposed
// convolutions of decoders and GANs (DCGAN, U-Net, HiFi-GAN).
struct Conv {
  const char* family;  // its sweep: conv2d, depthwise, conv1d_audio or conv_transpose
  const char* model;
  int dims;  // 1: [N, C, L]; 2: [N, C, S, S]
  std::int64_t n, c_in, c_out, size, k, stride, padding, groups;
};

// clang-format off
inline constexpr Conv kLayers[] = {
    {"conv2d",         "resnet50_stem_7x7_s2",          2, 32,    3,   64, 224, 7, 2, 3,  1},
    {"conv2d",         "resnet50_layer1_1x1_reduce",    2, 32,  256,   64,  56, 1, 1, 0,  1},
    {"conv2d",         "resnet50_layer1_3x3",           2, 32,   64,   64,  56, 3, 1, 1,  1},
    {"conv2d",         "resnet50_layer1_1x1_expand",    2, 32,   64,  256,  56, 1, 1, 0,  1},
    {"conv2d",         "resnet50_layer2_3x3_s2",        2, 32,  128,  128,  56, 3, 2, 1,  1},
    {"conv2d",         "resnet50_layer2_3x3",           2, 32,  128,  128,  28, 3, 1, 1,  1},
    {"conv2d",         "resnet50_layer3_3x3",           2, 32,  256,  256,  14, 3, 1, 1,  1},
    {"conv2d",         "resnet50_layer4_3x3",           2, 32,  512,  512,   7, 3, 1, 1,  1},
    {"conv2d",         "resnet50_layer4_1x1_reduce",    2, 32, 2048,  512,   7, 1, 1, 0,  1},
    {"conv2d",         "resnet50_downsample_1x1_s2",    2, 32,  512, 1024,  28, 1, 2, 0,  1},
    {"conv2d",         "vgg16_conv3_3x3",               2, 16,  256,  256,  56, 3, 1, 1,  1},
    {"conv2d",         "vgg16_conv1_2_3x3",             2,  8,   64,   64, 224, 3, 1, 1,  1},
    {"conv2d",         "vgg16_conv4_3_3x3",             2, 16,  512,  512,  28, 3, 1, 1,  1},
    {"conv2d",         "vgg16_conv5_3_3x3",             2, 16,  512,  512,  14, 3, 1, 1,  1},
    {"conv2d",         "darknet53_3x3_128to256_52",     2, 16,  128,  256,  52, 3, 1, 1,  1},
    {"conv2d",         "unet_dec_3x3_256to128_64",      2,  8,  256,  128,  64, 3, 1, 1,  1},
    {"conv2d",         "resnet50_layer3_3x3_b1",        2,  1,  256,  256,  14, 3, 1, 1,  1},
    {"conv2d",         "resnext50_layer1_3x3_g32",      2, 32,  128,  128,  56, 3, 1, 1, 32},
    {"conv2d",         "resnext50_layer3_3x3_g32",      2, 32,  512,  512,  14, 3, 1, 1, 32},
    // Stride equal to the kernel: ViT-B/16's patch embedding, ConvNeXt-T's stem and its first downsampling.
    {"conv2d",         "vit_b16_patch_embed_k16_s16",   2, 32,    3,  768, 224, 16, 16, 0, 1},
    {"conv2d",         "convnext_t_stem_k4_s4",         2, 32,    3,   96, 224, 4, 4, 0,  1},
    {"conv2d",         "convnext_t_down_k2_s2_96to192", 2, 32,   96,  192,  56, 2, 2, 0,  1},
    {"depthwise",      "mobilenetv2_dw3x3_c144_56",     2, 32,  144,  144,  56, 3, 1, 1, 144},
    {"depthwise",      "mobilenetv2_dw3x3_s2_c144_56",  2, 32,  144,  144,  56, 3, 2, 1, 144},
    {"depthwise",      "mobilenetv2_dw3x3_c384_14",     2, 32,  384,  384,  14, 3, 1, 1, 384},
    {"depthwise",      "efficientnet_b0_dw5x5_c240_28", 2, 32,  240,  240,  28, 5, 1, 2, 240},
    {"depthwise",      "efficientnet_b0_dw5x5_c672_14", 2, 32,  672,  672,  14, 5, 1, 2, 672},
    {"depthwise",      "convnext_t_dw7x7_c96_56",       2, 32,   96,   96,  56, 7, 1, 3,  96},
    {"depthwise",      "convnext_t_dw7x7_c384_14",      2, 32,  384,  384,  14, 7, 1, 3, 384},
    {"depthwise",      "convnext_t_dw7x7_c768_7",       2, 32,  768,  768,   7, 7, 1, 3, 768},
    {"depthwise",      "hyena_short_k3_c2304_l2048",    1,  8, 2304, 2304, 2048, 3, 1, 2, 2304},
    {"depthwise",      "mamba130m_k4_c1536_l2048",      1,  8, 1536, 1536, 2048, 4, 1, 3, 1536},
    {"depthwise",      "mamba370m_k4_c2048_l2048",      1,  8, 2048, 2048, 2048, 4, 1, 3, 2048},
    {"depthwise",      "mamba1.4b_k4_c4096_l2048",      1,  8, 4096, 4096, 2048, 4, 1, 3, 4096},
    {"depthwise",      "mamba370m_k3_c2048_l2048",      1,  8, 2048, 2048, 2048, 3, 1, 2, 2048},
    {"depthwise",      "mamba370m_k5_c2048_l2048",      1,  8, 2048, 2048, 2048, 5, 1, 4, 2048},
    {"depthwise",      "mamba370m_k7_c2048_l2048",      1,  8, 2048, 2048, 2048, 7, 1, 6, 2048},
    // wav2vec 2.0 feature encoder on 4 x 10 s of 16 kHz audio, its positional
    // convolution, and the Whisper encoder stems on 30 s of 80-bin log-mel frames.
    {"conv1d_audio",   "wav2vec2_conv0_k10_s5",         1,  4,    1,  512, 160000, 10, 5, 0, 1},
    {"conv1d_audio",   "wav2vec2_conv1_k3_s2",          1,  4,  512,  512, 31999, 3, 2, 0, 1},
    {"conv1d_audio",   "wav2vec2_conv2_k3_s2",          1,  4,  512,  512, 15999, 3, 2, 0, 1},
    {"conv1d_audio",   "wav2vec2_conv3_k3_s2",          1,  4,  512,  512,  7999, 3, 2, 0, 1},
    {"conv1d_audio",   "wav2vec2_conv4_k3_s2",          1,  4,  512,  512,  3999, 3, 2, 0, 1},
    {"conv1d_audio",   "wav2vec2_conv5_k2_s2",          1,  4,  512,  512,  1999, 2, 2, 0, 1},
    {"conv1d_audio",   "wav2vec2_conv6_k2_s2",          1,  4,  512,  512,   999, 2, 2, 0, 1},
    {"conv1d_audio",   "wav2vec2_pos_conv_k128_g16",    1,  4,  768,  768,   499, 128, 1, 64, 16},
    {"conv1d_audio",   "whisper_base_conv1_k3",         1, 16,   80,  512,  3000, 3, 1, 1, 1},
    {"conv1d_audio",   "whisper_base_conv2_k3_s2",      1, 16,  512,  512,  3000, 3, 2, 1, 1},
    {"conv1d_audio",   "whisper_large_conv1_k3",        1, 16,   80, 1280,  3000, 3, 1, 1, 1},
    {"conv1d_audio",   "whisper_large_conv2_k3_s2",     1, 16, 1280, 1280,  3000, 3, 2, 1, 1},
    // Transposed: c_in -> c_out, size is the input extent.
    {"conv_transpose", "dcgan_g1_z100_4x4",             2, 128, 100,  512,   1, 4, 1, 0, 1},
    {"conv_transpose", "dcgan_g2_512to256_8x8",         2, 128, 512,  256,   4, 4, 2, 1, 1},
    {"conv_transpose", "dcgan_g3_256to128_16x16",       2, 128, 256,  128,   8, 4, 2, 1, 1},
    {"conv_transpose", "dcgan_g4_128to64_32x32",        2, 128, 128,   64,  16, 4, 2, 1, 1},
    {"conv_transpose", "dcgan_g5_64to3_64x64",          2, 128,  64,    3,  32, 4, 2, 1, 1},
    {"conv_transpose", "unet_up1_1024to512_k2",         2,   8, 1024, 512,  32, 2, 2, 0, 1},
    {"conv_transpose", "unet_up2_512to256_k2",          2,   8, 512,  256,  64, 2, 2, 0, 1},
    {"conv_transpose", "unet_up3_256to128_k2",          2,   8, 256,  128, 128, 2, 2, 0, 1},
    {"conv_transpose", "unet_up4_128to64_k2",           2,   8, 128,   64, 256, 2, 2, 0, 1},
    {"conv_transpose", "hifigan_up1_512to256_k16_s8",   1,  16, 512,  256,  32, 16, 8, 4, 1},
    {"conv_transpose", "hifigan_up2_256to128_k16_s8",   1,  16, 256,  128, 256, 16, 8, 4, 1},
    {"conv_transpose", "hifigan_up3_128to64_k4_s2",     1,  16, 128,   64, 2048, 4, 2, 1, 1},
    {"conv_transpose", "hifigan_up4_64to32_k4_s2",      1,  16,  64,   32, 4096, 4, 2, 1, 1},
};
// clang-format on

// Whether a layer is a transposed convolution (the conv_transpose sweep).
inline bool transposed(const Conv& c) { return std::string_view(c.family) == "conv_transpose"; }

// A layer's output extent along each spatial dimension.
inline std::int64_t out_extent(const Conv& c) {
  return transposed(c) ? (c.size - 1) * c.stride - 2 * c.padding + c.k : (c.size + 2 * c.padding - c.k) / c.stride + 1;
}

// A layer's input [N, c_in, size(, size)] and weight shapes: OIHW (or OIL)
// for a convolution, [c_in, c_out / groups, ...] for a transposed one.
inline oa::Shape conv_input_shape(const Conv& c) {
  return c.dims == 2 ? oa::Shape{c.n, c.c_in, c.size, c.size} : oa::Shape{c.n, c.c_in, c.size};
}
inline oa::Shape conv_weight_shape(const Conv& c) {
  const std::int64_t o = transposed(c) ? c.c_in : c.c_out, i = transposed(c) ? c.c_out / c.groups : c.c_in / c.groups;
  return c.dims == 2 ? oa::Shape{o, i, c.k, c.k} : oa::Shape{o, i, c.k};
}

// The layer's forward pass of x through w and b (bias [c_out]).
inline oa::Matrix conv_forward(const Conv& c, const oa::Matrix& x, const oa::Matrix& w, const oa::Matrix& b) {
  if (c.dims == 2 && !transposed(c))
    return oa::ml::conv_2d(x, w, b, {.stride = {c.stride, c.stride}, .padding = {c.padding, c.padding}, .groups = c.groups});
  if (c.dims == 1 && !transposed(c)) return oa::ml::conv_1d(x, w, b, {.stride = c.stride, .padding = c.padding, .groups = c.groups});
  if (c.dims == 2)
    return oa::ml::conv_transpose_2d(x, w, b, {.stride = {c.stride, c.stride}, .padding = {c.padding, c.padding}, .groups = c.groups});
  return oa::ml::conv_transpose_1d(x, w, b, {.stride = c.stride, .padding = c.padding, .groups = c.groups});
}

// The tiny form of a layer for the quick sweeps: one image, channels / 16,
// space / 8 (2-D) or / 64 (1-D), groups kept dividing both channel counts.
inline Conv quick_conv(Conv c) {
  const bool depthwise = c.groups == c.c_in && c.groups > 1;
  c.n = 1;
  c.c_in = c.c_in <= 3 ? c.c_in : std::max<std::int64_t>(c.c_in / 16, 4);
  c.c_out = c.c_out <= 3 ? c.c_out : std::max<std::int64_t>(c.c_out / 16, 4);
  if (depthwise) c.c_out = c.c_in;
  c.groups = depthwise ? c.c_in : std::gcd(std::gcd(c.groups, c.c_in), c.c_out);
  c.size = std::max<std::int64_t>(c.size / (c.dims == 2 ? 8 : 64), c.size == 1 ? 1 : 2 * c.k);
  return c;
}

}  // namespace oa_bench
