#ifndef OA_CONV_DIRECT_GLSL
#define OA_CONV_DIRECT_GLSL
// Direct grouped convolution for few channels per group (depthwise included),
// see geometry.glsl for the narrow/wide relation.
//
// Each workgroup computes 512 outputs: a TH x TW tile of TP output planes,
// each plane OB output channels of one group and one batch item (TH * TW * TP
// = 512, all powers of two: 1 x 512 rows for 1-D, 16 x 32 or 8 x 64 for
// images, several planes for small images). For every input channel of the
// group it stages the planes' input tiles plus halo and their OB x KH x KW
// weights in shared memory; invocation t then accumulates the outputs
// t + 128 * r (r < 4, row-major over plane, row, column) x OB channels.
// WIDE == 0: convolution (dst narrow, src wide). WIDE == 1: transposed
// convolution in gather form (dst wide, src narrow): a tap contributes only
// when its residue modulo the stride matches, so no atomics are needed.
// Push aux0, aux1: staged rows and row pitch of one plane; aux2: tiles along x.
#extension GL_GOOGLE_include_directive : require
#extension GL_EXT_control_flow_attributes : require
#include "ml/conv/forward_io.glsl"

// OB (output channels per plane) is fixed by the including variant file
// (direct_ob<OB>.comp defines OA_OB) so the register arrays unroll.
const uint OB = OA_OB;
layout(constant_id = 0) const uint WIDE = 0;
layout(constant_id = 1) const uint TW = 32;  // tile columns
layout(constant_id = 2) const uint TP = 1;   // planes per workgroup
layout(local_size_x = 128) in;
const uint ROWS = 4u;  // outputs per invocation
const uint TH = 4u * 128u / (TW * TP);
const uint PLANE = TH * TW;    // outputs per plane
layout(constant_id = 3) const uint TILE_CAP = 2048;  // floats of staged input (host checks the fit)
const uint WEIGHT_CAP = 512u;  // floats of staged weights

shared float tile[TILE_CAP];
shared float ws[WEIGHT_CAP];
shared uint plane_base[TP];  // source offset of each plane's channel; ~0u past the last plane

void main() {
  const uvec3 wg = OA_GROUP_ID;
  const uint tid = gl_LocalInvocationIndex;
  const uint khw = pc.kh * pc.kw;
  const uint cng = pc.cn / pc.groups, cwg = pc.cw / pc.groups;
  const uint cols = WIDE == 0u ? cng : cwg;  // output channels per group
  const uint kc = WIDE == 0u ? cwg : cng;    // input channels per group
  const uint out_c = WIDE == 0u ? pc.cn : pc.cw, out_h = WIDE == 0u ? pc.hn : pc.hw, out_w = WIDE == 0u ? pc.wn : pc.ww;
  const uint src_c = WIDE == 0u ? pc.cw : pc.cn, src_h = WIDE == 0u ? pc.hw : pc.hn, src_w = WIDE == 0u ? pc.ww : pc.wn;
  const uint tile_h = pc.aux0, tile_w = pc.aux1, tile_plane = tile_h * tile_w;

  // Planes z = (n, g, channel block) in that nesting; this workgroup's first.
  const uint blocks = (cols + OB - 1u) / OB;
  const uint planes = pc.n * pc.groups * blocks;
  const uint z0 = wg.y * TP;
  const uint ty_tile = wg.x / pc.aux2;
  const uint oy0 = ty_tile * TH, ox0 = (wg.x - ty_tile * pc.aux2) * TW;

  int y_lo, x_lo;
  if (WIDE == 0u) {
    y_lo = int(oy0 * pc.sh) - int(pc.ph);
    x_lo = int(ox0 * pc.sw) - int(pc.pw);
  } else {
    y_lo = oa_floor_div(int(oy0 + pc.ph) - int((pc.kh - 1u) * pc.dh), int(pc.sh));
    x_lo = oa_floor_div(int(ox0 + pc.pw) - int((pc.kw - 1u) * pc.dw), int(pc.sw));
  }

  float acc[ROWS * OB];
  [[unroll]] for (uint i = 0u; i < ROWS * OB; ++i) acc[i] = 0.0;

  // Staging walks (plane q, row ly, column lx) of the TP staged planes in
  // steps of 128 elements, carried without divisions.
  const uint step_q = 128u / tile_plane, step_e = 128u - step_q * tile_plane;
  const uint step_y = step_e / tile_w, step_x = step_e - step_y * tile_w;
  const uint src_hw = src_h * src_w;
  for (uint c = 0u; c < kc; ++c) {
    if (tid < TP) {
      const uint z = z0 + tid;
      const uint n = z / (blocks * pc.groups), g = (z / blocks) % pc.groups;
      plane_base[tid] = z < planes ? (n * src_c + g * kc + c) * src_hw : ~0u;
    }
    barrier();
    uint q = tid / tile_plane;
    uint ly = (tid - q * tile_plane) / tile_w;
    uint lx = tid - q * tile_plane - ly * tile_w;
    for (uint i = tid; i < TP * tile_plane; i += 128u) {
      const uint base = plane_base[q];
      const int iy = y_lo + int(ly);
      const int ix = x_lo + int(lx);
      tile[i] = (base != ~0u && iy >= 0 && iy < int(src_h) && ix >= 0 && ix < int(src_w))
                    ? src[base + uint(iy) * src_w + uint(ix)]
                    : 0.0;
      lx += step_x;
      ly += step_y;
      if (lx >= tile_w) {
        lx -= tile_w;
        ++ly;
      }
      q += step_q;
      if (ly >= tile_h) {
        ly -= tile_h;
        ++q;
      }
    }
    for (uint i = tid; i < TP * OB * khw; i += 128u) {
      const uint qob = i / khw;  // q * OB + ob
      const uint tap = i - qob * khw;
      const uint z = z0 + qob / OB;
      const uint g = (z / blocks) % pc.groups;
      const uint col = (z % blocks) * OB + qob % OB;
      float w = 0.0;
      if (z < planes && col < cols) {
        const uint row = WIDE == 0u ? (g * cng + col) * cwg + c : (g * cng + c) * cwg + col;
        w = wt[row * khw + tap];
      }
      ws[i] = w;
    }
    barrier();
    for (uint kh = 0u; kh < pc.kh; ++kh) {
      for (uint kw = 0u; kw < pc.kw; ++kw) {
        const uint tap = kh * pc.kw + kw;
        // One plane per workgroup: its weights once per tap, not once per row.
        float w0[OB];
        [[unroll]] for (uint ob = 0u; ob < OB; ++ob) w0[ob] = ws[ob * khw + tap];
        [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
          const uint j = tid + 128u * r;
          const uint q = TP == 1u ? 0u : j / PLANE, oyl = (j % PLANE) / TW, oxl = j % TW;
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
            if (pc.sh == 1u && pc.sw == 1u) {  // uniform: no divisions at unit stride
              ly = ty;
              lx = tx;
            } else {
              ly = ty / pc.sh;
              lx = tx / pc.sw;
              hit = ly * pc.sh == ty && lx * pc.sw == tx;
            }
          }
          if (hit) {
            const float v = tile[q * tile_plane + ly * tile_w + lx];
            [[unroll]] for (uint ob = 0u; ob < OB; ++ob) acc[r * OB + ob] += v * (TP == 1u ? w0[ob] : ws[(q * OB + ob) * khw + tap]);
          }
        }
      }
    }
    barrier();
  }

  [[unroll]] for (uint r = 0u; r < ROWS; ++r) {
    const uint j = tid + 128u * r;
    const uint z = z0 + (TP == 1u ? 0u : j / PLANE);
    const uint oy = oy0 + (j % PLANE) / TW, ox = ox0 + j % TW;
    const uint n = z / (blocks * pc.groups), g = (z / blocks) % pc.groups;
    const uint col0 = (z % blocks) * OB;
    [[unroll]] for (uint ob = 0u; ob < OB; ++ob) {
      const uint col = col0 + ob;
      const uint ch = g * cols + col;
      if (z < planes && oy < out_h && ox < out_w && col < cols)
        dst[((n * out_c + ch) * out_h + oy) * out_w + ox] = acc[r * OB + ob] + (pc.has_bias != 0u ? bias[ch] : 0.0);
    }
  }
}

#endif
