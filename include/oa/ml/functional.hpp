#pragma once
// The functional ops of oa::ml (as torch.nn.functional): one header per
// family, each op with PyTorch semantics (the torch function named at each
// op). Modules over them are in oa/ml/nn/.
//
//   oa/ml/conv.hpp        conv_1d, conv_2d (groups), conv_transpose_1d, conv_transpose_2d
//   oa/ml/attention.hpp   bmm, bmm_nt, bmm_tn, split_heads, merge_heads, split_qkv_heads,
//                         softmax_scaled_masked, scaled_dot_product_attention, flash_attention
//   oa/ml/linear.hpp      linear
//   oa/ml/norm.hpp        layer_norm, rms_norm, group_norm, batch_norm_2d
//   oa/ml/rope.hpp        rope
//   oa/ml/pool.hpp        max_pool_2d, avg_pool_2d, global_avg_pool_2d
//   oa/ml/activation.hpp  softmax, log_softmax
//   oa/ml/embedding.hpp   embedding
//   oa/ml/dropout.hpp     dropout
//   oa/ml/loss.hpp        cross_entropy, mse_loss, accuracy
//
// Conventions of linear, norm, rope, pool, activation, embedding, dropout and loss
// (conv and attention document their own): all floating-point values are f32
// (index inputs i32; linear, softmax, log_softmax and layer_norm also take
// f16 or bf16, see oa/ml/linear.hpp, oa/ml/activation.hpp and oa/ml/norm.hpp),
// row-major and contiguous, on one engine; activations are NCHW where an op
// is 2-D.
//
// Trace and autograd: every call records exactly one semantic op
// "oa::ml::<name>" (with the attributes listed at the op), however many
// dispatches it lowers to, except dropout outside training, which records
// nothing. Differentiable ops attach a reverse-mode rule; its work appears as
// one "oa::ml::<name> backward" op computing only the gradients that are
// needed. Forward results are bitwise reproducible on one device, and no
// backward pass uses floating-point atomics: reductions are cooperative trees
// over fixed segments, and scatter-shaped gradients (pooling, embedding) are
// computed in gather form.
//
// Extreme values: the row ops (log_softmax, cross_entropy, layer_norm, and
// batch_norm_2d's channels in training) take every statistic relative to a
// value of the row (its maximum, or for the normalisations its first
// element), so a large common offset costs no precision: results match an
// f64 computation on the same f32 inputs for offsets up to 1e30 (for the
// normalisations, while the row's spread stays below their limit in
// oa/ml/norm.hpp: at 1e30, neighbouring f32 values lie 7.6e22 apart). NaN: a NaN
// anywhere in such a row makes every output and gradient of that row NaN, as
// PyTorch; the elementwise ops (mse_loss, dropout, batch_norm_2d outside
// training) propagate NaN per element.
//
// Errors (oa::Error): InvalidArgument, naming the op, the argument and the
// shapes, for an undefined operand, a wrong dtype, rank or extent, operands on
// different engines, an option out of range, or extents past what the shaders
// index (element counts beyond 2^32 - 1). Validation precedes all work: a
// failed call allocates and records nothing. ResourceExhausted when an operand
// exceeds the device's maxStorageBufferRange (128 MiB on lavapipe) or memory
// runs out.
#include "oa/ml/conv.hpp"
#include "oa/ml/attention.hpp"
#include "oa/ml/linear.hpp"
#include "oa/ml/norm.hpp"
#include "oa/ml/rope.hpp"
#include "oa/ml/pool.hpp"
#include "oa/ml/activation.hpp"
#include "oa/ml/embedding.hpp"
#include "oa/ml/dropout.hpp"
#include "oa/ml/loss.hpp"
