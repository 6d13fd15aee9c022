#pragma once
// The affine op linear (oa::ml; the module Linear is in oa/ml/nn/linear.hpp).
// Conventions (dtypes, trace, extreme values, errors): oa/ml/functional.hpp.

#include "oa/matrix/matrix.hpp"

namespace oa::ml {

// y = x W^T + b (torch.nn.functional.linear): x [..., in] (rank >= 1), weight
// [out, in], bias [out] or undefined (no bias) -> y [..., out]. One GEMM whose
// epilogue adds the bias. Gradients for x, weight and bias, recorded as one
// backward op (two GEMMs for x and weight; the bias gradient is the column sum
// of the output gradient, oa::matrix::sum_to). Zero rows give an empty result;
// in = 0 gives the bias broadcast (or zeros).
// Dtypes: x and weight both f32, both f16 or both bf16; the bias has their
// dtype or is f32 (torch.nn.functional.linear requires their dtype; an f32
// bias with 16-bit x is what autocast passes, see oa/matrix/autocast.hpp); y
// and the gradients of x and weight have x's dtype, the bias gradient the
// bias's. 16-bit operands: f32 accumulation (the f32 tiled kernels on 16-bit
// storage, or a tensor-core kernel where the device has cooperative
// matrices), the bias added in f32 and y rounded once, to nearest even; the
// bias gradient is summed in f32 (a 16-bit one rounded once).
// Errors: InvalidArgument naming "oa::ml::linear" and the shapes for an
// undefined operand, a dtype other than f32/f16/bf16, operands of different
// dtypes (naming both, with their dtypes), rank-0 x, weight not rank 2, x's
// last extent not weight's in, bias not [out], operands on different engines.
// Semantic op "oa::ml::linear".
Matrix linear(const Matrix& x, const Matrix& weight, const Matrix& bias = Matrix());

}  // namespace oa::ml
