#pragma once
// The tensor-core GEMM's tiles and specialization (src/matrix/gemm_coopmat.cpp),
// for the kernels built on shaders/matrix/gemm_coopmat.glsl: the GEMM itself
// and the 16-bit convolution forward (ml/conv/igemm_coopmat). Internal to the
// library.
#include <cstdint>
#include <string_view>
#include <vector>

#include "matrix/gemm.hpp"

namespace oa::detail {

// A workgroup's C tile (bm x bn), its K step, its grid of wm x wn subgroups
// (each owns a (bm / wm) x (bn / wn) block of 16 x 16 accumulators) and its
// shared stages (1 or 2); `name` is its variant of gemm.coopmat_tile.
struct CoopTile {
  std::string_view name;
  std::uint32_t bm, bn, bk, wm, wn, stages;
};

// Whether the device has the cooperative matrices the kernels need for A and
// B of 16-bit dtype `in`: in * in + f32 -> f32, 16 x 16 x 16, subgroup scope.
bool has_coop_gemm(const DeviceInfo& d, DType in);

// The tile of the tuning point gemm.coopmat_tile for p that the device can
// run (its shared memory and workgroup size), or nullptr. With split_k false
// (a kernel that never splits K) a long K alone does not pick a large tile.
const CoopTile* choose_coop_tile(const Tuning& tuning, const DeviceInfo& d, const GemmProblem& p, bool split_k = true);

// The layout and dtypes a dispatch of matrix/gemm_coopmat.glsl specializes:
// the operands' layouts and quad reads (see the shader), whether C's blocks
// go straight to memory, and C's and the bias's dtype codes (0: f32).
struct CoopLayout {
  bool trans_a = false, trans_b = false, vec_a = false, vec_b = false, direct_c = false;
  std::uint32_t c_dt = 0, bias_dt = 0;
};
// Specialization constants 0-14 of matrix/gemm_coopmat.glsl for tile t.
std::vector<std::uint32_t> coop_specialization(const DeviceInfo& d, const CoopTile& t, const CoopLayout& l);

}  // namespace oa::detail
