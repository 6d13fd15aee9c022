#pragma once
// Normalisation (oa::ml): layer_norm, rms_norm, group_norm, batch_norm_2d.
// Conventions (dtypes, trace, extreme values, errors): oa/ml/functional.hpp.
#include <cstdint>
#include <optional>

#include "oa/matrix/matrix.hpp"

namespace oa::ml {

// Layer normalisation over the last axis (Ba, Kiros and Hinton 2016;
// torch.nn.functional.layer_norm with normalized_shape = [D]):
//   y = (x - mean) / sqrt(var + eps) * weight + bias,
// mean and the biased variance var taken over each row of x [..., D], in two
// passes about the row's first element, each squared deviation divided by D
// before the sum (finite in f32 while the row's spread, max - min, is below
// about 1.8e19, for any D; past it var overflows and the row's outputs and
// gradients are 0 or NaN).
// weight [D] and bias [D] may each be undefined (Matrix()): weight 1, bias 0.
// x of any rank >= 1 with D >= 1 (zero rows give an empty result); eps >= 0.
// Dtypes: x f32, f16 or bf16, y of x's dtype; weight and bias f32 or x's
// dtype, both of one dtype (torch's layer_norm takes f32 parameters with a
// 16-bit x). A 16-bit x is computed as torch does, in f32: x (and 16-bit
// weight and bias) widened into f32 temporaries (a read and a write of x),
// the statistics f32, y rounded once to x's dtype; the backward likewise
// widens its operands, and each gradient has its input's dtype (dx x's, an
// f32 weight's f32), rounded once. Under autocast the policy table runs it in
// f32 (oa/matrix/autocast.hpp).
// Gradients for x, weight and bias. Semantic op "oa::ml::layer_norm",
// attribute eps; its inputs are x and the weight and bias that are given.
// Errors: InvalidArgument naming the op, the argument and the shapes for x of
// rank 0, an empty last axis, another dtype, weight or bias not [D] or of
// another dtype than above, eps < 0.
Matrix layer_norm(const Matrix& x, const Matrix& weight, const Matrix& bias, double eps = 1e-5);

// Root-mean-square normalisation over the last axis (Zhang and Sennrich 2019;
// torch.nn.functional.rms_norm with normalized_shape = [D]):
//   y = x / sqrt(mean(x^2) + eps) * weight,
// the mean taken over each row of x [..., D] in f32, each square divided by D
// before the sum (a row holding a value past about 1.8e19 overflows x^2 and
// gives 0, with gradient 0). weight [D] or undefined
// (weight 1). eps >= 0; without one, the f32 machine epsilon (2^-23, as
// PyTorch's default eps=None). x of any rank >= 1 with D >= 1. Gradients for x
// and weight. Semantic op "oa::ml::rms_norm", attribute eps; its inputs are x
// and the weight when given. Errors as layer_norm.
Matrix rms_norm(const Matrix& x, const Matrix& weight = Matrix(), std::optional<double> eps = {});

// Group normalisation (Wu and He 2018; torch.nn.functional.group_norm): the
// C channels of x [N, C, *] are split into num_groups groups of C / G
// consecutive channels, and each (sample, group) is normalised over its
// C / G * S values (S: the product of the trailing extents), then scaled and
// shifted per channel c:
//   y = (x - mean) / sqrt(var + eps) * weight_c + bias_c,
// mean and the biased variance as layer_norm's (two passes about the group's
// first value) on the view [N * G, C / G * S]. With G = C this is instance
// normalisation (torch.nn.functional.instance_norm without running statistics),
// with G = 1 layer normalisation over [C, *].
// x of rank >= 2 with nonzero extents after N; N = 0 (an empty batch) gives
// an empty y and zero weight and bias gradients (no dispatch), as PyTorch.
// num_groups >= 1 dividing C; weight
// and bias [C] or undefined (1 and 0); eps >= 0. Gradients for x, weight and
// bias. Throws InvalidArgument naming "oa::ml::group_norm", the argument and
// the shapes otherwise. Semantic op "oa::ml::group_norm", attributes
// num_groups and eps; its inputs are x and the weight and bias that are given.
Matrix group_norm(const Matrix& x, std::int64_t num_groups, const Matrix& weight = Matrix(), const Matrix& bias = Matrix(),
                  double eps = 1e-5);

// Batch normalisation of NCHW activations (Ioffe and Szegedy 2015;
// torch.nn.functional.batch_norm): per channel c,
//   y = (x - mean_c) / sqrt(var_c + eps) * weight_c + bias_c.
// training: mean_c and the biased variance var_c over the N * H * W values of
//   channel c (two passes about the channel's
//   first value, finite in f32: a spread below about 1e19), and the running statistics are
//   updated in place on the GPU (their versions are bumped):
//   running_mean = (1 - momentum) running_mean + momentum mean_c,
//   running_var = (1 - momentum) running_var + momentum unbiased var_c.
//   num_batches_tracked, an optional i32 [] counter (torch's BatchNorm
//   buffer), is incremented on the GPU first (its version bumped), and
//   momentum nullopt (torch's None, which requires the counter) takes
//   momentum = 1 / its new value: the running statistics are then the
//   cumulative average of the batches'. No host read or write, so a
//   StepGraph can capture it.
// otherwise: mean_c = running_mean, var_c = running_var, which stay unchanged
//   (and so does num_batches_tracked).
// An empty batch (N = 0) in either mode gives an empty y, leaves the running
// statistics as they are and gives zero weight and bias gradients, as
// PyTorch (in training only num_batches_tracked, when given, is incremented,
// as torch's BatchNorm2d does); training refuses exactly one value per
// channel (N * H * W = 1), as torch.
// x [N, C, H, W] with nonzero C, H, W; weight and bias [C] or undefined (1 and 0);
// running_mean and running_var [C], required. momentum in [0, 1], eps >= 0.
// Gradients for x, weight and bias in both modes (in training they flow
// through the batch statistics). Throws InvalidArgument naming the op, the
// argument and the shapes otherwise. Semantic op "oa::ml::batch_norm_2d",
// attributes training, momentum (0 for nullopt), eps, cumulative_average
// (momentum nullopt); inputs x, the weight and bias that are given,
// running_mean, running_var and num_batches_tracked when given.
Matrix batch_norm_2d(const Matrix& x, const Matrix& weight, const Matrix& bias, const Matrix& running_mean,
                     const Matrix& running_var, bool training, std::optional<double> momentum = 0.1, double eps = 1e-5,
                     const Matrix& num_batches_tracked = Matrix());

}  // namespace oa::ml
