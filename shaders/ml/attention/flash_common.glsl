// Shared by the flash attention kernels (forward, backward dq, backward dk/dv).
//
// Layout: a tensor of `heads` heads per batch entry, S rows and D columns per
// head, stored as packed rows [B*S, heads*D]; head bh = b*heads + h. heads = 1
// is the plain [BH, S, D] layout.
//
// Work split: LANES adjacent invocations own one row (a query row, or a key row
// in the dk/dv pass); lane l holds the padded columns
// [l*DP/LANES, (l+1)*DP/LANES) of that row's vectors as vec4 registers, and a
// dot product is finished with subgroup shuffles between the LANES lanes.
// Tiles of BLOCK_N rows of the other operand go through shared memory as vec4
// rows of the padded width DP (zero padded past S and D).
#ifndef OA_FLASH_COMMON_GLSL
#define OA_FLASH_COMMON_GLSL
#extension GL_KHR_shader_subgroup_shuffle : require

const float OA_LOG2E = 1.4426950408889634;
const float OA_LN2 = 0.6931471805599453;

layout(local_size_x_id = 0) in;                 // BLOCK_M * LANES invocations
layout(constant_id = 1) const uint LANES = 2;   // invocations per row: 2 or 4
layout(constant_id = 2) const uint BLOCK_N = 32;  // rows per shared-memory tile
layout(constant_id = 3) const uint DK = 64;     // padded head dim (multiple of 4 * LANES)
layout(constant_id = 4) const uint DV = 64;     // padded value dim (multiple of 4 * LANES)
const uint THREADS = gl_WorkGroupSize.x;
const uint BLOCK_M = THREADS / LANES;
const uint KW = DK / 4u;       // vec4s per padded key row
const uint VW = DV / 4u;       // vec4s per padded value row
const uint KL = KW / LANES;    // vec4s of a key row per lane
const uint VL = VW / LANES;    // vec4s of a value row per lane

// Element offset of row i of head bh in a tensor with S rows of D columns per head.
uint flash_row(uint bh, uint i, uint S, uint D, uint heads) {
  uint b = bh / heads;
  return ((b * S + i) * heads + (bh - b * heads)) * D;
}

// Sum over the LANES invocations that own one row.
float lane_sum(float x) {
  x += subgroupShuffleXor(x, 1u);
  if (LANES >= 4u) x += subgroupShuffleXor(x, 2u);
  return x;
}

// Defines `void NAME(uint bh, uint row0, uint S, uint D, uint heads)`, which
// copies rows row0 .. row0 + BLOCK_N of a tensor (float view SRC, vec4 view
// SRC4 of the same binding) into the shared vec4 tile TILE of WIDTH vec4s per
// row, zero padded. Uses vec4 loads when D is a multiple of 4.
#define FLASH_TILE_LOADER(NAME, TILE, SRC, SRC4, WIDTH)                                  \
  void NAME(uint bh, uint row0, uint S, uint D, uint heads) {                           \
    for (uint idx = gl_LocalInvocationID.x; idx < BLOCK_N * WIDTH; idx += THREADS) {    \
      uint r = idx / WIDTH;                                                              \
      uint c = (idx - r * WIDTH) * 4u;                                                   \
      vec4 val = vec4(0.0);                                                              \
      if (row0 + r < S && c < D) {                                                       \
        uint at = flash_row(bh, row0 + r, S, D, heads) + c;                              \
        if ((D & 3u) == 0u) {                                                            \
          val = SRC4[at >> 2];                                                           \
        } else {                                                                         \
          val.x = SRC[at];                                                               \
          if (c + 1u < D) val.y = SRC[at + 1u];                                          \
          if (c + 2u < D) val.z = SRC[at + 2u];                                          \
          if (c + 3u < D) val.w = SRC[at + 3u];                                          \
        }                                                                                \
      }                                                                                  \
      TILE[idx] = val;                                                                   \
    }                                                                                    \
  }

// Statement: loads this lane's COUNT vec4s of one row into the register array
// REG (element offset AT of the row, first padded column C0), times MUL; zeros
// where !(OK) or past column D.
#define FLASH_LOAD_ROW(REG, COUNT, SRC, SRC4, OK, AT, C0, D, MUL)                       \
  for (uint i_ = 0u; i_ < COUNT; ++i_) {                                                 \
    uint c_ = (C0) + 4u * i_;                                                            \
    vec4 v_ = vec4(0.0);                                                                 \
    if ((OK) && c_ < (D)) {                                                              \
      if (((D) & 3u) == 0u) {                                                            \
        v_ = SRC4[((AT) + c_) >> 2];                                                     \
      } else {                                                                           \
        v_.x = SRC[(AT) + c_];                                                           \
        if (c_ + 1u < (D)) v_.y = SRC[(AT) + c_ + 1u];                                   \
        if (c_ + 2u < (D)) v_.z = SRC[(AT) + c_ + 2u];                                   \
        if (c_ + 3u < (D)) v_.w = SRC[(AT) + c_ + 3u];                                   \
      }                                                                                  \
    }                                                                                    \
    REG[i_] = v_ * (MUL);                                                                \
  }

// Statement: stores this lane's register array REG (times MUL) to one row,
// skipping columns past D.
#define FLASH_STORE_ROW(REG, COUNT, DST, DST4, AT, C0, D, MUL)                          \
  for (uint i_ = 0u; i_ < COUNT; ++i_) {                                                 \
    uint c_ = (C0) + 4u * i_;                                                            \
    vec4 v_ = REG[i_] * (MUL);                                                           \
    if (c_ < (D)) {                                                                      \
      if (((D) & 3u) == 0u) {                                                            \
        DST4[((AT) + c_) >> 2] = v_;                                                     \
      } else {                                                                           \
        DST[(AT) + c_] = v_.x;                                                           \
        if (c_ + 1u < (D)) DST[(AT) + c_ + 1u] = v_.y;                                   \
        if (c_ + 2u < (D)) DST[(AT) + c_ + 2u] = v_.z;                                   \
        if (c_ + 3u < (D)) DST[(AT) + c_ + 3u] = v_.w;                                   \
      }                                                                                  \
    }                                                                                    \
  }

#endif
