#pragma once
// The batched GEMM lowering that op families (linalg, convolution, attention)
// share. Internal to the library.
#include <cstdint>
#include <vector>

#include "oa/matrix/matrix.hpp"
#include "oa/runtime/dispatch.hpp"

namespace oa::detail {

// One operand of a batched row-major GEMM: matrix b of the batch starts at
// element `offset + b * batch_stride` of `matrix` (batch_stride 0 broadcasts).
struct GemmOperand {
  const Matrix* matrix = nullptr;
  std::int64_t offset = 0;
  std::int64_t batch_stride = 0;
};

// For b in [0, batch): C_b = alpha * op(A_b) * op(B_b) + beta * C_b (+ bias[n] per column when bias).
// op(A_b) is [M, K]: A_b stored [M, K] row-major, or [K, M] when trans_a.
// op(B_b) is [K, N]: B_b stored [K, N], or [N, K] when trans_b.  C_b is [M, N] row-major.
// beta == 0 means C is write-only (never read). Throws Internal on an inconsistent problem.
// Dtypes: A and B both f32, or both f16 or both bf16; C and the bias f32 or
// A's dtype. Offsets and strides count elements of each operand's own dtype.
struct GemmProblem {
  std::int64_t batch = 1, m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  float alpha = 1.0f, beta = 0.0f;
  GemmOperand a, b, c;
  const Matrix* bias = nullptr;  // [N], optional
};

// Lowers `p` to dispatches for engine.record (none when batch, M or N is 0;
// K = 0 gives beta * C (+ bias)). Kernels: matrix/gemm_skinny for M <= 16 (per
// batch item), which streams B once with one workgroup per strip of columns and
// all M rows; otherwise matrix/gemm, a tiled kernel whose tile (128x128 with 8x8
// per invocation, 64x64 or 32x32 with 4x4) is chosen from the problem's size
// and the device's shared memory and workgroup limits; and matrix/gemm_epilogue,
// which sums split-K partial products in a fixed order when too few workgroups
// would keep the device busy. The C regions of different batch items must
// not overlap each other or A, B and bias. 16-bit A and B take the _half
// builds of these kernels (matrix/gemm_half, gemm_skinny_half,
// gemm_epilogue_half): the same tiles and f32 multiply-adds and accumulators,
// each element widened to f32 exactly as it is loaded; a 16-bit C is rounded
// once, to nearest even, after alpha, beta and the bias (split-K partial
// products stay f32). Throws ResourceExhausted when one
// operand matrix alone exceeds maxStorageBufferRange (larger batches are split
// across dispatches).
std::vector<runtime::ComputeDispatch> lower_gemm(const Engine& engine, const GemmProblem& p);

}  // namespace oa::detail
