// Op table cases of the convolutions (oa/ml/conv.hpp): stride, padding,
// dilation, groups, stride equal to the kernel, bias and an empty batch;
// 1-D ones against the 2-D reference with height 1.
#include <array>

#include "ops/op_table.hpp"
#include "reference/conv.hpp"

namespace oa::test {
namespace {

using Dims = std::array<std::int64_t, 4>;

struct ConvCase {
  const char* label;
  Dims x, w;  // NCHW and the weight as the op takes it (OIHW, or IOHW when transposed)
  reference::ConvParams p;
  bool bias;
};

std::vector<ConvCase> conv_cases(bool transposed) {
  const std::int64_t O = transposed ? 2 : 4;  // transposed: the weight's second extent is O / groups
  return {{"plain", {2, 3, 5, 6}, {transposed ? 3 : 4, transposed ? O : 3, 3, 3}, {}, true},
          {"stride_pad", {1, 2, 6, 5}, {transposed ? 2 : 3, transposed ? 3 : 2, 3, 2}, {{2, 1}, {1, 1}, {1, 1}, {transposed ? 1 : 0, 0}, 1}, false},
          {"dilation", {1, 2, 7, 7}, {2, 2, 2, 3}, {{1, 1}, {0, 1}, {2, 2}, {0, 0}, 1}, true},
          {"groups", {1, 4, 4, 5}, {4, 2, 2, 2}, {{1, 1}, {1, 0}, {1, 1}, {0, 0}, 2}, true},
          {"depthwise", {2, 4, 6, 7}, {4, 1, 3, 3}, {{1, 1}, {1, 2}, {1, 2}, {0, 0}, 4}, true},
          // stride equal to the kernel (the patch GEMMs where the table takes them)
          {"patch", {2, 3, 6, 4}, {transposed ? 3 : 4, transposed ? O : 3, 2, 2}, {{2, 2}, {0, 0}, {1, 1}, {0, 0}, 1}, true},
          {"empty_batch", {0, 3, 5, 6}, {transposed ? 3 : 4, transposed ? O : 3, 3, 3}, {}, true}};
}

std::vector<double> conv(const RefInputs& x, const ConvCase& c, bool transposed) {
  Dims out;
  const std::vector<double> b = c.bias ? x[2] : std::vector<double>{};
  return transposed ? reference::conv_transpose2d(x[0], c.x, x[1], c.w, b, c.p, out) : reference::conv2d(x[0], c.x, x[1], c.w, b, c.p, out);
}

// The bias has the output's channels: the weight's first extent, or its second times groups when transposed.
std::vector<GradInput> conv_inputs(const ConvCase& c, bool transposed, bool one_d, std::uint64_t seed) {
  const Shape x = one_d ? Shape{c.x[0], c.x[1], c.x[3]} : Shape{c.x[0], c.x[1], c.x[2], c.x[3]};
  const Shape w = one_d ? Shape{c.w[0], c.w[1], c.w[3]} : Shape{c.w[0], c.w[1], c.w[2], c.w[3]};
  std::vector<GradInput> inputs = {random_input(x, seed), random_input(w, seed + 1)};
  if (c.bias) inputs.push_back(random_input({transposed ? c.w[1] * c.p.groups : c.w[0]}, seed + 2));
  return inputs;
}

OA_OP_CASES(conv_2d, "oa::ml::conv_2d") {
  std::vector<OpCase> cases;
  std::uint64_t seed = 601;
  for (const ConvCase& c : conv_cases(false)) {
    const oa::ml::Conv2dOptions o{c.p.stride, c.p.padding, c.p.dilation, c.p.groups};
    cases.push_back({c.label, conv_inputs(c, false, false, seed),
                     [o, bias = c.bias](const Inputs& x) { return oa::ml::conv_2d(x[0], x[1], bias ? x[2] : Matrix(), o); },
                     [c](const RefInputs& x) { return conv(x, c, false); }});
    seed += 3;
  }
  return cases;
}

OA_OP_CASES(conv_transpose_2d, "oa::ml::conv_transpose_2d") {
  std::vector<OpCase> cases;
  std::uint64_t seed = 611;
  for (const ConvCase& c : conv_cases(true)) {
    const oa::ml::ConvTranspose2dOptions o{c.p.stride, c.p.padding, c.p.output_padding, c.p.dilation, c.p.groups};
    cases.push_back({c.label, conv_inputs(c, true, false, seed),
                     [o, bias = c.bias](const Inputs& x) { return oa::ml::conv_transpose_2d(x[0], x[1], bias ? x[2] : Matrix(), o); },
                     [c](const RefInputs& x) { return conv(x, c, true); }});
    seed += 3;
  }
  return cases;
}

// The 1-D forms: the 2-D cases with height 1 (a kernel height of 1, no
// padding, stride or dilation across it).
ConvCase one_d(ConvCase c) {
  c.x[2] = 1;
  c.w[2] = 1;
  c.p.stride[0] = c.p.dilation[0] = 1;
  c.p.padding[0] = c.p.output_padding[0] = 0;
  return c;
}

OA_OP_CASES(conv_1d, "oa::ml::conv_1d") {
  std::vector<OpCase> cases;
  std::uint64_t seed = 621;
  for (const ConvCase& c2 : conv_cases(false)) {
    const ConvCase c = one_d(c2);
    const oa::ml::Conv1dOptions o{c.p.stride[1], c.p.padding[1], c.p.dilation[1], c.p.groups};
    cases.push_back({c.label, conv_inputs(c, false, true, seed),
                     [o, bias = c.bias](const Inputs& x) { return oa::ml::conv_1d(x[0], x[1], bias ? x[2] : Matrix(), o); },
                     [c](const RefInputs& x) { return conv(x, c, false); }});
    seed += 3;
  }
  return cases;
}

OA_OP_CASES(conv_transpose_1d, "oa::ml::conv_transpose_1d") {
  std::vector<OpCase> cases;
  std::uint64_t seed = 631;
  for (const ConvCase& c2 : conv_cases(true)) {
    const ConvCase c = one_d(c2);
    const oa::ml::ConvTranspose1dOptions o{c.p.stride[1], c.p.padding[1], c.p.output_padding[1], c.p.dilation[1], c.p.groups};
    cases.push_back({c.label, conv_inputs(c, true, true, seed),
                     [o, bias = c.bias](const Inputs& x) { return oa::ml::conv_transpose_1d(x[0], x[1], bias ? x[2] : Matrix(), o); },
                     [c](const RefInputs& x) { return conv(x, c, true); }});
    seed += 3;
  }
  return cases;
}

}  // namespace
}  // namespace oa::test
