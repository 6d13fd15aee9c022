#pragma once
// Matrix products and transpose (oa::matrix). F32, row-major, contiguous.
//
// Batched forms take operands of rank >= 3 whose leading ("batch") extents are
// equal; either operand may instead be 2-D and is then shared by every batch
// item (as torch.matmul broadcasts it). matmul also broadcasts batch extents
// and takes 1-D operands, as torch.matmul does (see there). Products accumulate in f32 with a
// tiled GEMM kernel (shared-memory tiles, a register block per invocation);
// results are bitwise reproducible on one device. A zero inner extent K gives
// zeros; zero M, N or batch extents give an empty result. Under
// Engine::set_float32_matmul_precision(MatmulPrecision::High), f32 products
// (and their gradients) run as three F16 products of split operands on the
// tensor cores where the device has them, with about FP32's accuracy (see there).
//
// Dtypes: a and b are both f32, both f16 or both bf16, and the result has
// their dtype (as torch.matmul on fp16 gives fp16). 16-bit operands run the
// same tiled kernels with F32 arithmetic on the 16-bit storage: each element is widened to f32 as it is
// loaded and the product accumulates in f32, as the f32 kernels; the result is
// rounded once, to nearest even. (On a device with cooperative
// matrices 16-bit products may take a tensor-core kernel instead, also with
// f32 accumulation.) Gradients have the operands' dtype and go through the
// same GEMM; a 2-D operand's gradient summed over a batch is summed in f32
// and rounded once.
//
// Errors (oa::Error, kind InvalidArgument, naming the op and both shapes):
// rank below 2 (matmul: below 1), inner extents that differ, batch extents
// that differ (matmul: that do not broadcast), a dtype
// other than f32/f16/bf16, operands of different dtypes (naming both
// arguments and their dtypes; torch.matmul refuses them too), operands on
// different engines. ResourceExhausted when one operand
// matrix exceeds the device's maxStorageBufferRange.
#include "oa/matrix/matrix.hpp"

namespace oa::matrix {

// a [..., M, K] x b [..., K, N] -> [..., M, N] (torch.matmul). The batch
// extents (all but the last two) broadcast as NumPy's do: [2, 1, 3, 4] x
// [5, 4, 6] -> [2, 5, 3, 6]. A 1-D a [K] is a row [1, K] and a 1-D b [K] a
// column [K, 1], whose extent of 1 the result drops: [K] x [K] -> [] (the dot
// product), [K] x [..., K, N] -> [..., N], [..., M, K] x [K] -> [..., M].
// Semantic op "oa::matrix::matmul". An operand whose batch has one item is
// shared by every item at no cost, as is one that only lacks axes of 1
// ([2, 3, 4] x [1, 1, 4, 5]); one whose batch broadcasts otherwise is
// first materialised by oa::matrix::expand (recorded before the product), and
// its gradient is summed over the broadcast axes.
Matrix matmul(const Matrix& a, const Matrix& b);

// a [..., M, K] x b [..., N, K]^T -> [..., M, N], i.e. out[m, n] = sum_k a[m, k] b[n, k]
// (torch.nn.functional.linear without bias; the GEMM conv_1d lowers to).
// Semantic op "oa::matrix::matmul_nt".
Matrix matmul_nt(const Matrix& a, const Matrix& b);

// Swaps the last two axes: x [..., R, C] -> [..., C, R], a new contiguous
// Matrix (torch.transpose(x, -2, -1).contiguous()). Rank >= 2; every dtype
// (the result has x's dtype; a copy of bits).
// Semantic op "oa::matrix::transpose".
Matrix transpose(const Matrix& x);

}  // namespace oa::matrix
