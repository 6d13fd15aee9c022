#pragma once
// The convolution family: conv_1d, conv_2d, conv_transpose_1d, conv_transpose_2d,
// forward and backward, with PyTorch semantics (torch.nn.functional.conv1d,
// conv2d, conv_transpose1d, conv_transpose2d).
//
// Layouts: activations NCL / NCHW; convolution weights OIK / OIHW with
// I = in_channels / groups; transposed-convolution weights IOK / IOHW with
// O = out_channels / groups. Bias is [out_channels]; an undefined Matrix
// (Matrix()) means no bias. Input, weight and bias live on one engine and
// have one dtype, f32, f16 or bf16, which the output and the gradients have.
//
// F16 and BF16 accumulate in f32 and round each output once. A grouped
// convolution with at most 16 input and 16 output channels per group
// (depthwise included) runs the f32 kernels between casts (the result rounded
// once; under autocast, on the f32 operands). Every other shape runs as
// GEMMs: im2col of a chunk of
// images into 16-bit columns, a GEMM per group into f32, then the output plus
// bias rounded once; the input gradient as GEMMs into f32 columns summed by
// col2im and rounded once; the weight gradient as GEMMs summed over the
// chunks in f32; the bias gradient summed in f32. The GEMMs run on the
// tensor cores where the device has cooperative matrices, and with f32
// arithmetic on 16-bit loads elsewhere (lavapipe). Chunks of images keep the
// workspaces near 64 MiB.
//
// Output extents (per spatial axis; s stride, p padding, d dilation, k kernel,
// op output_padding):
//   convolution:            out = floor((in + 2p - d(k - 1) - 1) / s) + 1
//   transposed convolution: out = (in - 1)s - 2p + d(k - 1) + op + 1
// A batch of N = 0 gives the empty output [0, C_out, ...] (no dispatch) and,
// backward, zero weight and bias gradients, as PyTorch.
//
// Errors (oa::Error, InvalidArgument unless noted; the message names the op
// and the shapes; nothing is recorded or allocated): wrong rank, a zero extent
// other than the batch,
// channel counts that disagree with the weight or are not divisible by groups,
// stride, dilation or groups below 1, negative padding, output_padding not
// below stride or dilation (as PyTorch), an effective kernel larger than the
// padded input, a transposed output of less than 1, an undefined argument,
// an input that is not f32, f16 or bf16, a weight or bias of another dtype
// than the input (the message names both dtypes), arguments on different
// engines, 64-bit overflow of shape arithmetic, or extents past what the
// shaders can index (coordinates beyond 2^31 - 1, element counts beyond
// 2^32 - 1); ResourceExhausted where one image's 16-bit workspace exceeds
// the device's maxStorageBufferRange.
//
// Trace: each call records one semantic op "oa::ml::<name>" however
// many dispatches it lowers to, with the attributes stride, padding, dilation
// (and output_padding for the transposed ops) as integer lists with one entry
// per spatial axis, and groups as an integer. Its gradients are recorded by
// autograd as one "oa::ml::<name> backward" op computing the input,
// weight and bias gradients that are needed.
//
// Kernels (f32): convolution is an implicit GEMM (output positions x output
// channels, the input patch gathered into shared memory on the fly), or a
// direct kernel staging input tiles with their halo when a group has few
// output channels. Depthwise problems (groups = input channels = output
// channels, kernels up to 64 taps) take a depthwise kernel: a few
// consecutive outputs per invocation from input windows held in registers.
// Ungrouped 3x3 problems of stride and dilation 1 (forward, and the other
// op's input gradient) may take Winograd F(2x2, 3x3) (Lavin & Gray 2016):
// 4x4 input tiles and the kernels transformed, 16 batched GEMMs, the
// products transformed back; where the device's tuning table says it is
// faster (oa/runtime/tuning.hpp, point conv.kernel). Its f32 rounding
// error is a few times the direct sum's (the transforms add up to 4 inputs,
// 9 weight taps and 9 products per output).
// Transposed convolution is the adjoint in gather form, one dense GEMM per
// output stride phase. A convolution or transposed convolution whose stride
// equals its kernel, with no padding, dilation 1 and groups 1 (ViT's patch
// embedding, U-Net's 2x2 up-convolutions), may run, where the device's
// tuning table says so (point conv.patch), in any dtype, as one GEMM
// between rearrangements: the input cut into its patches (space-to-depth)
// times the weight, then the product transposed to NCHW; or, transposed,
// each input position times the weight, its product rearranged into the
// output's patches (depth-to-space); its input and weight gradients
// likewise. The input gradient of either op is the other op's
// kernel applied to the output gradient; the weight gradient is a tiled
// GEMM-shaped reduction over batch and space (a per-channel reduction for
// depthwise and depthwise-sized kernels) and the bias gradient a reduction,
// both split into partial sums added in a fixed order. Results are
// deterministic: no floating-point atomics.
#include <array>
#include <cstdint>

#include "oa/matrix/matrix.hpp"
#include "oa/ml/parameter.hpp"

namespace oa::ml {

// The options of a convolution (torch's keyword arguments), per axis an
// Extent: one std::int64_t (1-D) or {height, width} (2-D).
template <class Extent>
inline constexpr Extent kConvOnes = Extent{1};
template <>
inline constexpr std::array<std::int64_t, 2> kConvOnes<std::array<std::int64_t, 2>> = {1, 1};

template <class Extent>
struct ConvOptions {
  Extent stride = kConvOnes<Extent>;
  Extent padding{};  // zeros on both ends
  Extent dilation = kConvOnes<Extent>;
  std::int64_t groups = 1;
};

// Transposed: output_padding is extra length at the end, below stride or dilation.
template <class Extent>
struct ConvTransposeOptions {
  Extent stride = kConvOnes<Extent>;
  Extent padding{};
  Extent output_padding{};
  Extent dilation = kConvOnes<Extent>;
  std::int64_t groups = 1;
};

using Conv1dOptions = ConvOptions<std::int64_t>;
using Conv2dOptions = ConvOptions<std::array<std::int64_t, 2>>;
using ConvTranspose1dOptions = ConvTransposeOptions<std::int64_t>;
using ConvTranspose2dOptions = ConvTransposeOptions<std::array<std::int64_t, 2>>;

// 1-D convolution (torch.nn.functional.conv1d).
// input [N, C, L], weight [O, C / groups, K], bias [O] or undefined -> [N, O, L_out].
Matrix conv_1d(const Matrix& input, const Matrix& weight, const Matrix& bias = Matrix(), const Conv1dOptions& options = {});
// Positional form: groups 1.
Matrix conv_1d(const Matrix& input, const Matrix& weight, const Matrix& bias, std::int64_t stride, std::int64_t padding = 0,
               std::int64_t dilation = 1);

// 2-D convolution (torch.nn.functional.conv2d), rectangular kernels allowed.
// input [N, C, H, W], weight [O, C / groups, KH, KW], bias [O] or undefined -> [N, O, H_out, W_out].
Matrix conv_2d(const Matrix& input, const Matrix& weight, const Matrix& bias = Matrix(), const Conv2dOptions& options = {});
// Positional form: the same stride and padding on both axes, dilation 1.
Matrix conv_2d(const Matrix& input, const Matrix& weight, const Matrix& bias, std::int64_t stride, std::int64_t padding = 0,
               std::int64_t groups = 1);

// 1-D transposed convolution (torch.nn.functional.conv_transpose1d), the
// adjoint of conv_1d with respect to its input.
// input [N, C, L], weight [C, O / groups, K], bias [O] or undefined -> [N, O, L_out].
Matrix conv_transpose_1d(const Matrix& input, const Matrix& weight, const Matrix& bias = Matrix(),
                         const ConvTranspose1dOptions& options = {});
// Positional form: no bias, groups 1, output_padding 0.
Matrix conv_transpose_1d(const Matrix& input, const Matrix& weight, std::int64_t stride, std::int64_t padding = 0,
                         std::int64_t dilation = 1);

// 2-D transposed convolution (torch.nn.functional.conv_transpose2d).
// input [N, C, H, W], weight [C, O / groups, KH, KW], bias [O] or undefined -> [N, O, H_out, W_out].
Matrix conv_transpose_2d(const Matrix& input, const Matrix& weight, const Matrix& bias = Matrix(),
                         const ConvTranspose2dOptions& options = {});
// Positional form: the same stride and padding on both axes, dilation 1, groups 1.
Matrix conv_transpose_2d(const Matrix& input, const Matrix& weight, const Matrix& bias, std::int64_t stride,
                         std::int64_t padding = 0);

// Forms taking Parameters (for the modules): the same ops on weight.value()
// and bias.value(); an undefined Parameter() bias means no bias. Gradients
// accumulate into the Parameters.
Matrix conv_1d(const Matrix& input, const Parameter& weight, const Parameter& bias = Parameter(),
               const Conv1dOptions& options = {});
Matrix conv_2d(const Matrix& input, const Parameter& weight, const Parameter& bias = Parameter(),
               const Conv2dOptions& options = {});
Matrix conv_transpose_1d(const Matrix& input, const Parameter& weight, const Parameter& bias = Parameter(),
                         const ConvTranspose1dOptions& options = {});
Matrix conv_transpose_2d(const Matrix& input, const Parameter& weight, const Parameter& bias = Parameter(),
                         const ConvTranspose2dOptions& options = {});

}  // namespace oa::ml
