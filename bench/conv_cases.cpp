// Convolution sweeps, forward and forward + backward, layers taken from real
// models: CNN convolutions (ResNet-50, VGG-16, ResNeXt-50), depthwise 2-D
// (MobileNetV2, EfficientNet, ConvNeXt) and 1-D (the short convolutions of
// Mamba and Hyena), audio front ends (wav2vec 2.0, Whisper) and transposed
// convolutions of decoders and GANs (DCGAN, U-Net, HiFi-GAN).
#include <numeric>
#include <string_view>

#include "bench.hpp"

namespace {
using oa_bench::Case;

struct Conv {
  const char* family;  // its sweep: conv2d, depthwise, conv1d_audio or conv_transpose
  const char* model;
  int dims;  // 1: [N, C, L]; 2: [N, C, S, S]
  std::int64_t n, c_in, c_out, size, k, stride, padding, groups;
};

// clang-format off
constexpr Conv kLayers[] = {
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
    {"conv2d",         "resnext50_layer1_3x3_g32",      2, 32,  128,  128,  56, 3, 1, 1, 32},
    {"conv2d",         "resnext50_layer3_3x3_g32",      2, 32,  512,  512,  14, 3, 1, 1, 32},
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

// The tiny form of a layer for quick checks: one image, channels / 16, space
// / 8 (2-D) or / 64 (1-D), groups kept dividing both channel counts.
Conv tiny(Conv c) {
  const bool depthwise = c.groups == c.c_in && c.groups > 1;
  c.n = 1;
  c.c_in = c.c_in <= 3 ? c.c_in : std::max<std::int64_t>(c.c_in / 16, 4);
  c.c_out = c.c_out <= 3 ? c.c_out : std::max<std::int64_t>(c.c_out / 16, 4);
  if (depthwise) c.c_out = c.c_in;
  c.groups = depthwise ? c.c_in : std::gcd(std::gcd(c.groups, c.c_in), c.c_out);
  c.size = std::max<std::int64_t>(c.size / (c.dims == 2 ? 8 : 64), c.size == 1 ? 1 : 2 * c.k);
  return c;
}

std::int64_t out_extent(const Conv& c, bool transposed) {
  return transposed ? (c.size - 1) * c.stride - 2 * c.padding + c.k : (c.size + 2 * c.padding - c.k) / c.stride + 1;
}

void add_cases(std::vector<Case>& cases, const char* family, Conv full, bool transposed, bool quick) {
  const Conv c = quick ? tiny(full) : full;
  const std::int64_t out = out_extent(c, transposed);
  const auto space = [&](std::int64_t s) { return c.dims == 2 ? s * s : s; };
  const std::int64_t taps = c.dims == 2 ? c.k * c.k : c.k;
  // Multiply-adds: every output (convolution) or input (transposed) position
  // meets taps x (the other side's channels / groups) weights.
  const double macs = transposed ? double(c.n) * space(c.size) * c.c_in * (c.c_out / c.groups) * taps
                                 : double(c.n) * space(out) * c.c_out * (c.c_in / c.groups) * taps;
  const double elements = double(c.n) * (space(c.size) * c.c_in + space(out) * c.c_out) +
                          double(c.c_in) * (c.c_out / c.groups) * taps;
  const std::string kind = std::string(transposed ? "conv_transpose" : "conv") + (c.dims == 2 ? "2d" : "1d");
  for (const bool bwd : {false, true}) {
    nlohmann::json p = {{"n", c.n},       {"c_in", c.c_in},       {"c_out", c.c_out},   {"k", c.k},
                        {"stride", c.stride}, {"padding", c.padding}, {"groups", c.groups}, {"backward", bwd}};
    if (c.dims == 2) {
      p["h"] = c.size;
      p["w"] = c.size;
    } else {
      p["l"] = c.size;
    }
    cases.push_back(
        {fmt::format("{}_{}{}", kind, c.model, oa_bench::suffix(bwd)), family, kind, p, 2 * macs * (bwd ? 3 : 1),
         4 * elements * (bwd ? 3 : 1), [c, bwd, transposed](const oa::Engine& e) {
           const std::int64_t per_group_out = c.c_out / c.groups, per_group_in = c.c_in / c.groups;
           std::vector<std::int64_t> xs{c.n, c.c_in, c.size}, ws{transposed ? c.c_in : c.c_out, transposed ? per_group_out : per_group_in, c.k};
           if (c.dims == 2) {
             xs.push_back(c.size);
             ws.push_back(c.k);
           }
           auto x = oa_bench::input(oa::Shape(xs), 1, e, bwd), w = oa_bench::input(oa::Shape(ws), 2, e, bwd),
                b = oa_bench::input({c.c_out}, 3, e, bwd);
           std::function<oa::Matrix()> f;
           if (c.dims == 2 && !transposed)
             f = [=] { return oa::ml::conv_2d(x, w, b, {.stride = {c.stride, c.stride}, .padding = {c.padding, c.padding}, .groups = c.groups}); };
           else if (c.dims == 1 && !transposed)
             f = [=] { return oa::ml::conv_1d(x, w, b, {.stride = c.stride, .padding = c.padding, .groups = c.groups}); };
           else if (c.dims == 2)
             f = [=] { return oa::ml::conv_transpose_2d(x, w, b, {.stride = {c.stride, c.stride}, .padding = {c.padding, c.padding}, .groups = c.groups}); };
           else
             f = [=] { return oa::ml::conv_transpose_1d(x, w, b, {.stride = c.stride, .padding = c.padding, .groups = c.groups}); };
           return oa_bench::step(f, bwd, e);
         }});
  }
}

// The sweep of one family: its layers of kLayers.
oa_bench::Sweep sweep(std::string_view family) {
  return [family](bool quick) {
    std::vector<Case> cases;
    for (const auto& c : kLayers)
      if (c.family == family) add_cases(cases, c.family, c, family == "conv_transpose", quick);
    return cases;
  };
}

const oa_bench::Register kConv2dSweep{sweep("conv2d")};
const oa_bench::Register kDepthwiseSweep{sweep("depthwise")};
const oa_bench::Register kAudioSweep{sweep("conv1d_audio")};
const oa_bench::Register kTransposedSweep{sweep("conv_transpose")};

}  // namespace
