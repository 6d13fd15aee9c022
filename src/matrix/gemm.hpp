#pragma once
// The batched GEMM lowering that op families (linalg, convolution, attention)
// share. Internal to the library.
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "oa/matrix/matrix.hpp"
#include "oa/runtime/dispatch.hpp"
#include "oa/runtime/tuning.hpp"
#include "matrix/lowering.hpp"

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
// per invocation, 64x128 with 4x8, 64x64 or 32x32 with 4x4) is chosen from the problem's size
// and the device's shared memory and workgroup limits; and matrix/gemm_epilogue,
// which sums split-K partial products in a fixed order when too few workgroups
// would keep the device busy. The C regions of different batch items must
// not overlap each other or A, B and bias. 16-bit A and B run on the device's
// tensor cores where it has cooperative matrices for them (lower_gemm_coopmat;
// an f32 C with a 16-bit bias through an f32 scratch and gemm_epilogue_half);
// otherwise they take the _half
// builds of these kernels (matrix/gemm_half, gemm_skinny_half,
// gemm_epilogue_half): the same tiles and f32 multiply-adds and accumulators,
// each element widened to f32 exactly as it is loaded; a 16-bit C is rounded
// once, to nearest even, after alpha, beta and the bias (split-K partial
// products stay f32). f32 A and B under Engine::set_float32_matmul_precision(High)
// take lower_gemm_split_f16 where it applies. Throws ResourceExhausted when one
// operand matrix alone exceeds maxStorageBufferRange (larger batches are split
// across dispatches).
std::vector<runtime::ComputeDispatch> lower_gemm(const Engine& engine, const GemmProblem& p);

// Appends lower_gemm(engine, p)'s dispatches to `ds`.
void append_gemm(const Engine& engine, const GemmProblem& p, std::vector<runtime::ComputeDispatch>& ds);

// The tensor-core lowering (src/matrix/gemm_coopmat.cpp, kernels
// matrix/gemm_coopmat and matrix/gemm_coopmat_bf16) of a problem lower_gemm
// checked, with 16-bit A and B and K > 0: its dispatches, or nullopt where C
// is neither f32 nor of A's dtype, the bias neither f32 nor of C's dtype, or
// the device lacks the cooperative-matrix configuration the kernel needs (f16
// * f16 + f32 -> f32, or bf16 * bf16 + f32 -> f32; 16 x 16 x 16, subgroup
// scope), its shared memory or workgroup size. A 16-bit C is rounded once, to
// nearest even, after alpha, beta and the bias.
std::optional<std::vector<runtime::ComputeDispatch>> lower_gemm_coopmat(const Engine& engine, const GemmProblem& p);

// The f32 GEMM of Engine::set_float32_matmul_precision(High) (src/matrix/gemm_split.cpp)
// for a problem lower_gemm checked, with f32 A and B and K > 0: per row of
// op(A) and column of op(B) a power-of-two scale and f16 parts hi and lo
// (matrix/gemm_split, one dispatch per operand and batch window; M, N and K
// padded to multiples of 8 with zeros), the three f16 products A_lo B_hi,
// A_hi B_lo, A_hi B_hi into an f32 workspace W (lower_gemm: the tensor cores
// where the device has them, else the 16-bit kernels), and
// matrix/gemm_split_epilogue (scales undone, alpha, beta, bias; FP32 dot
// products for rows and columns holding inf or NaN). Its dispatches, or
// nullopt where the tuning point gemm.f32_high chooses fp32, or split-f16 on
// a device without f16 cooperative matrices (16 x 16 x 16, subgroup scope).
std::optional<std::vector<runtime::ComputeDispatch>> lower_gemm_split_f16(const Engine& engine, const GemmProblem& p);

// Workgroups that keep a large GPU busy (about two per SM on a 132-SM H200):
// below that many tiles the tiled kernels take a smaller tile or split K.
inline constexpr std::int64_t kGemmBusyGroups = 256;

// The workgroups of p with a bm x bn tile of C each.
inline std::int64_t gemm_tile_count(const GemmProblem& p, std::int64_t bm, std::int64_t bn) {
  return p.batch * ceil_div(p.m, bm) * ceil_div(p.n, bn);
}

// K ranges for `groups` workgroups per split: one range of K rounded up to `step`,
// or, below `busy` groups, up to `max_splits` ranges of at least `min_k` (multiples of `step`).
struct GemmSplitK {
  std::int64_t splits, kchunk;
};
// `busy` for gemm_split_k, or 0 (no split) where the tuning point gemm.split_k
// chooses "none" for p.
std::int64_t gemm_busy_groups(const Tuning& tuning, const GemmProblem& p, std::int64_t busy);
GemmSplitK gemm_split_k(std::int64_t k, std::int64_t groups, std::int64_t busy, std::int64_t min_k, std::int64_t max_splits,
                        std::int64_t step);

// The kernel of a tiled lowering: its specialization, workgroups per batch item
// along N (gx) and M (gy), the K split, and for a kernel with a push block of
// its own (the problem one part of it, as ml/conv/igemm_coopmat's) the
// function that sets it from the problem part (empty: shaders/matrix/gemm.push.h).
struct GemmTiles {
  std::string_view kernel;
  std::vector<std::uint32_t> spec;
  std::int64_t gx = 0, gy = 0;
  GemmSplitK split{};
  std::function<void(runtime::ComputeDispatch&, const push::matrix_gemm_problem&)> push;
};
// Appends the dispatch of t.kernel over q batch items (windows a, b and c of
// them; offsets in elements), and with split K its f32 workspace and the
// epilogue that sums it.
void append_gemm_tiles(const Engine& engine, const GemmProblem& p, const GemmTiles& t, std::int64_t q, const ElementWindow& a,
                       const ElementWindow& b, const ElementWindow& c, const ElementWindow* bias,
                       std::vector<runtime::ComputeDispatch>& out);

// A window of elements [first, first + count) of `m`, its offset counted in
// elements of m's dtype (a 16-bit element i is half of word i / 2); the
// offset keeps first's residue modulo 8, so aligned groups stay aligned.
ElementWindow gemm_window(const Matrix& m, std::int64_t first, std::int64_t count, runtime::Access access);

// The update of C (shaders/matrix/gemm_update.push.h) of p's q batch items at window c (and the bias).
push::matrix_gemm_update gemm_update(const GemmProblem& p, std::int64_t q, const ElementWindow& c, const ElementWindow* bias);

// matrix/gemm_epilogue (matrix/gemm_epilogue_half when C or the bias is 16-bit) over q batch items: C = alpha * (sum of `splits` partial
// products in w, q * M * N f32 each) + beta * C (+ bias); splits 0 gives beta * C (+ bias).
runtime::ComputeDispatch gemm_epilogue(const GemmProblem& p, std::int64_t q, std::uint32_t splits, const ElementWindow& w,
                                       const ElementWindow& c, const ElementWindow* bias);

}  // namespace oa::detail
