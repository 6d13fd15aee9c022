#ifndef OA_CONV_DIRECT_GLSL
#define OA_CONV_DIRECT_GLSL
// Direct grouped convolution for few channels per group (depthwise included),
// see geometry.glsl for the narrow/wide relation.
//
// Each workgroup computes a 16 x 32 tile of one output plane for OB output
// channels of one group and one batch item. For every input channel of the
// group it stages the input tile plus its halo and the OB x KH x KW weights in
// shared memory; each invocation then accumulates 4 positions (a column) x OB
// channels.
// WIDE == 0: convolution (dst narrow, src wide). WIDE == 1: transposed
// convolution in gather form (dst wide, src narrow): a tap contributes only
// when its residue modulo the stride matches, so no atomics are needed.
// Push aux0, aux1: shared tile rows and row pitch; aux2: tiles along x.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "ml/conv/geometry.glsl"

// OB (output channels per workgroup) is fixed by the including variant file
// (direct_ob<OB>.comp defines OA_OB) so the register arrays unroll.
const uint OB = OA_OB;
layout(constant_id = 0) const uint WIDE = 0;
layout(local_size_x = 32, local_size_y = 4) in;
const uint ROWS = 4u;  // output rows per invocation
const uint TILE_H = 4u * ROWS, TILE_W = 32u;
const uint TILE_CAP = 2048u;   // floats of staged input (host checks the fit)
const uint WEIGHT_CAP = 512u;  // floats of staged weights

layout(std430, binding = 0) readonly buffer Src { float src[]; };
layout(std430, binding = 1) readonly buffer Weight { float wt[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) writeonly buffer Dst { float dst[]; };
OA_CONV_PUSH

shared float tile[TILE_CAP];
shared float ws[WEIGHT_CAP];

void main() {
  const uvec3 wg = OA_GROUP_ID;
  const uint tid = gl_LocalInvocationIndex;
  const uint khw = pc.kh * pc.kw;
  const uint cng = pc.cn / pc.groups, cwg = pc.cw / pc.groups;
  const uint cols = WIDE == 0u ? cng : cwg;  // output channels per group
  const uint kc = WIDE == 0u ? cwg : cng;    // input channels per group
  const uint out_c = WIDE == 0u ? pc.cn : pc.cw, out_h = WIDE == 0u ? pc.hn : pc.hw, out_w = WIDE == 0u ? pc.wn : pc.ww;
  const uint src_c = WIDE == 0u ? pc.cw : pc.cn, src_h = WIDE == 0u ? pc.hw : pc.hn, src_w = WIDE == 0u ? pc.ww : pc.wn;
  const uint tile_h = pc.aux0, tile_w = pc.aux1;

  const uint blocks = (cols + OB - 1u) / OB;
  const uint ob_block = wg.y % blocks;
  const uint g = (wg.y / blocks) % pc.groups;
  const uint n = wg.y / (blocks * pc.groups);
  const uint ty_tile = wg.x / pc.aux2;
  const uint oy0 = ty_tile * TILE_H, ox0 = (wg.x - ty_tile * pc.aux2) * TILE_W;
  const uint col0 = ob_block * OB;

  int y_lo, x_lo;
  if (WIDE == 0u) {
    y_lo = int(oy0 * pc.sh) - int(pc.ph);
    x_lo = int(ox0 * pc.sw) - int(pc.pw);
  } else {
    y_lo = oa_floor_div(int(oy0 + pc.ph) - int((pc.kh - 1u) * pc.dh), int(pc.sh));
    x_lo = oa_floor_div(int(ox0 + pc.pw) - int((pc.kw - 1u) * pc.dw), int(pc.sw));
  }

  const uint ox = ox0 + gl_LocalInvocationID.x;
  float acc[ROWS * OB];
  [[unroll]] for (uint i = 0u; i < ROWS * OB; ++i) acc[i] = 0.0;

  const uint src_hw = src_h * src_w;
  for (uint c = 0u; c < kc; ++c) {
    const uint plane = (n * src_c + g * kc + c) * src_hw;
    for (uint i = tid; i < tile_h * tile_w; i += 128u) {
      const uint ly = i / tile_w;
      const int iy = y_lo + int(ly);
      const int ix = x_lo + int(i - ly * tile_w);
      tile[i] = (iy >= 0 && iy < int(src_h) && ix >= 0 && ix < int(src_w)) ? src[plane + uint(iy) * src_w + uint(ix)] : 0.0;
    }
    for (uint i = tid; i < OB * khw; i += 128u) {
      const uint ob = i / khw;
      const uint col = col0 + ob;
      const uint tap = i - ob * khw;
      float w = 0.0;
      if (col < cols) {
        const uint row = WIDE == 0u ? (g * cng + col) * cwg + c : (g * cng + c) * cwg + col;
        w = wt[row * khw + tap];
      }
      ws[i] = w;
    }
    barrier();
    const uint oxl = gl_LocalInvocationID.x;
    for (uint kh = 0u; kh < pc.kh; ++kh) {
      for (uint kw = 0u; kw < pc.kw; ++kw) {
        const uint tap = kh * pc.kw + kw;
        float wv[OB];
        [[unroll]] for (uint ob = 0u; ob < OB; ++ob) wv[ob] = ws[ob * khw + tap];
        [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
          const uint oyl = gl_LocalInvocationID.y + 4u * r;
          uint ly, lx;
          bool hit = true;
          if (WIDE == 0u) {
            ly = oyl * pc.sh + kh * pc.dh;
            lx = oxl * pc.sw + kw * pc.dw;
          } else {
            // Non-negative by the choice of y_lo, x_lo; a tap reaches a source
            // element only when the residue matches the stride.
            const uint ty = uint(int(oy0 + oyl + pc.ph) - int(kh * pc.dh) - y_lo * int(pc.sh));
            const uint tx = uint(int(ox0 + oxl + pc.pw) - int(kw * pc.dw) - x_lo * int(pc.sw));
            ly = ty / pc.sh;
            lx = tx / pc.sw;
            hit = ly * pc.sh == ty && lx * pc.sw == tx;
          }
          if (hit) {
            const float v = tile[ly * tile_w + lx];
            [[unroll]] for (uint ob = 0u; ob < OB; ++ob) acc[r * OB + ob] += v * wv[ob];
          }
        }
      }
    }
    barrier();
  }

  [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
    const uint oy = oy0 + gl_LocalInvocationID.y + 4u * r;
    [[unroll]] for (uint ob = 0u; ob < OB; ++ob) {
      const uint col = col0 + ob;
      const uint ch = g * cols + col;
      if (oy < out_h && ox < out_w && col < cols)
        dst[((n * out_c + ch) * out_h + oy) * out_w + ox] = acc[r * OB + ob] + (pc.has_bias != 0u ? bias[ch] : 0.0);
    }
  }
}

#endif
