// Convolution sweeps, forward and forward + backward, layers taken from real
// models: CNN convolutions (ResNet-50, VGG-16, ResNeXt-50), depthwise 2-D
// (MobileNetV2, EfficientNet, ConvNeXt) and 1-D (the short convolutions of
// Mamba and Hyena), audio front ends (wav2vec 2.0, Whisper) and transposed
// convolutions of decoders and GANs (DCGAN, U-Net, HiFi-GAN).
#include <optional>
#include <string_view>

#include "bench.hpp"
#include "model_shapes.hpp"

namespace {
using oa_bench::Case;
using oa_bench::Conv;
using oa_bench::kLayers;

// A layer's forward and forward + backward cases in `family`; with `autocast`
// (the 16-bit family) the step runs under oa::AutocastGuard of that dtype.
void add_cases(std::vector<Case>& cases, const char* family, Conv full, bool quick, std::optional<oa::DType> autocast = {}) {
  const Conv c = quick ? oa_bench::quick_conv(full) : full;
  const bool transposed = oa_bench::transposed(c);
  const std::int64_t out = oa_bench::out_extent(c);
  const auto space = [&](std::int64_t s) { return c.dims == 2 ? s * s : s; };
  const std::int64_t taps = c.dims == 2 ? c.k * c.k : c.k;
  // Multiply-adds: every output (convolution) or input (transposed) position
  // meets taps x (the other side's channels / groups) weights.
  const double macs = transposed ? double(c.n) * space(c.size) * c.c_in * (c.c_out / c.groups) * taps
                                 : double(c.n) * space(out) * c.c_out * (c.c_in / c.groups) * taps;
  const double elements = double(c.n) * (space(c.size) * c.c_in + space(out) * c.c_out) +
                          double(c.c_in) * (c.c_out / c.groups) * taps;
  const std::string kind = std::string(transposed ? "conv_transpose" : "conv") + (c.dims == 2 ? "2d" : "1d");
  const double width = autocast ? 2 : 4;
  const std::string dtype_suffix = autocast ? fmt::format("_{}", oa::to_string(*autocast)) : std::string();
  for (const bool bwd : {false, true}) {
    nlohmann::json p = {{"n", c.n},       {"c_in", c.c_in},       {"c_out", c.c_out},   {"k", c.k},
                        {"stride", c.stride}, {"padding", c.padding}, {"groups", c.groups}, {"backward", bwd}};
    if (autocast) p["autocast"] = oa::to_string(*autocast);
    if (c.dims == 2) {
      p["h"] = c.size;
      p["w"] = c.size;
    } else {
      p["l"] = c.size;
    }
    cases.push_back(
        {fmt::format("{}_{}{}{}", kind, c.model, dtype_suffix, oa_bench::suffix(bwd)), family, kind, p, 2 * macs * (bwd ? 3 : 1),
         width * elements * (bwd ? 3 : 1), [c, bwd, autocast](const oa::Engine& e) {
           auto x = oa_bench::input(oa_bench::conv_input_shape(c), 1, e, bwd), w = oa_bench::input(oa_bench::conv_weight_shape(c), 2, e, bwd),
                b = oa_bench::input({c.c_out}, 3, e, bwd);
           return oa_bench::step(oa_bench::autocast([=] { return oa_bench::conv_forward(c, x, w, b); }, autocast), bwd, e);
         }});
  }
}

// The sweep of one family: its layers of kLayers.
oa_bench::Sweep sweep(std::string_view family) {
  return [family](bool quick) {
    std::vector<Case> cases;
    for (const auto& c : kLayers)
      if (c.family == family) add_cases(cases, c.family, c, quick);
    return cases;
  };
}

const oa_bench::Register kConv2dSweep{sweep("conv2d")};
const oa_bench::Register kDepthwiseSweep{sweep("depthwise")};
const oa_bench::Register kAudioSweep{sweep("conv1d_audio")};
const oa_bench::Register kTransposedSweep{sweep("conv_transpose")};

// The 2-D convolutions and transposed convolutions again, under F16 autocast
// (the tensor-core lowering where the device has cooperative matrices).
const oa_bench::Register kConv16Sweep{[](bool quick) {
  std::vector<Case> cases;
  for (const auto& c : kLayers)
    if (c.dims == 2 && std::string_view(c.family) != "depthwise") add_cases(cases, "conv16", c, quick, oa::DType::F16);
  return cases;
}};

}  // namespace
