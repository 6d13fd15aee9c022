// Convolution sweeps, forward and forward + backward, layers taken from real
// models: CNN convolutions (ResNet-50, VGG-16, ResNeXt-50), depthwise 2-D
// (MobileNetV2, EfficientNet, ConvNeXt) and 1-D (the short convolutions of
// Mamba and Hyena), audio front ends (wav2vec 2.0, Whisper) and transposed
// convolutions of decoders and GANs (DCGAN, U-Net, HiFi-GAN).
#include <string_view>

#include "bench.hpp"
#include "model_shapes.hpp"

namespace {
using oa_bench::Case;
using oa_bench::Conv;
using oa_bench::kLayers;

std::int64_t out_extent(const Conv& c, bool transposed) {
  return transposed ? (c.size - 1) * c.stride - 2 * c.padding + c.k : (c.size + 2 * c.padding - c.k) / c.stride + 1;
}

void add_cases(std::vector<Case>& cases, const char* family, Conv full, bool transposed, bool quick) {
  const Conv c = quick ? oa_bench::quick_conv(full) : full;
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
