// Key and value rows of a tensor-core flash forward on 16-bit heads
// (flash_forward_coopmat.glsl, flash_forward_coopmat_subgroup.comp), streamed
// through shared memory KV_ROWS rows at a time: each invocation reads its
// share of the next tile into registers (load_kv) while the subgroups
// multiply the current one, then writes it to kv_tiles (store_kv) between
// two barriers. kv_tiles holds k's rows, then v's, LD halves a row (D plus 8
// halves of padding, so that the 16 rows of a fragment start in different
// banks), zeros past Sk. Include after the k4_in and v4_in buffers (uvec4s
// of 8 halves), the push constants (pc.sk, pc.heads) and the constants D,
// KV_ROWS and THREADS (invocations per workgroup).
#ifndef OA_FLASH_KV_TILES_GLSL
#define OA_FLASH_KV_TILES_GLSL
#include "ml/attention/flash_layout.glsl"

const uint LD = D + 8u;                    // halves per shared k or v row
const uint TILE_WORDS = KV_ROWS * LD / 8u;  // uvec4s per k or v tile
shared uvec4 kv_tiles[2u * TILE_WORDS];

// This invocation's uvec4 copies of the next k and v tiles.
const uint TILE_COPIES = KV_ROWS * (D / 8u);
const uint LC = (TILE_COPIES + THREADS - 1u) / THREADS;
uvec4 rk[LC];
uvec4 rv[LC];

// Reads rows key0 .. key0 + KV_ROWS of k and v of batch-head bh (zeros past Sk) into rk, rv.
void load_kv(uint bh, uint key0) {
  [[unroll]] for (uint l = 0u; l < LC; ++l) {
    const uint idx = gl_LocalInvocationID.x + l * THREADS, r = idx / (D / 8u), c = idx - r * (D / 8u);
    const bool ok = idx < TILE_COPIES && key0 + r < pc.sk;
    const uint at = ok ? (flash_row(bh, key0 + r, pc.sk, D, pc.heads) >> 3) + c : 0u;
    rk[l] = ok ? k4_in[at] : uvec4(0u);
    rv[l] = ok ? v4_in[at] : uvec4(0u);
  }
}

void store_kv() {
  [[unroll]] for (uint l = 0u; l < LC; ++l) {
    const uint idx = gl_LocalInvocationID.x + l * THREADS, r = idx / (D / 8u), c = idx - r * (D / 8u);
    if (idx < TILE_COPIES) {
      kv_tiles[r * (LD / 8u) + c] = rk[l];
      kv_tiles[TILE_WORDS + r * (LD / 8u) + c] = rv[l];
    }
  }
}

#endif
