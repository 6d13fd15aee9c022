#version 450
// One time step of a recurrent layer in one dispatch: the recurrent GEMM
// h_prev W^T (+ bias) and the cell, for few batch rows (the GEMM of such a
// step is bound by reading W, which this kernel reads once per 16 rows).
//
// A workgroup serves batch rows b0 .. b0 + 15 (b0 = 16 * OA_GROUP_ID.y) and,
// in the cell modes, hidden units j0 .. j0 + 3 (j0 = 4 * OA_GROUP_ID.x): its
// slots are the G gate rows g * H + j of W [G * H, K] for those units
// (GEMM mode: 16 output columns n0 .. n0 + 15, the rows n of W [N, K]).
// Invocation (row bl, slot s) forms the dot product of row b0 + bl of A
// [B, K] (at offset o_a) with its row of W, in K order (vec4 partial sums
// when VEC), adds the bias, and leaves it in shared memory; then the first
// 4 slots of each row apply the cell to their unit:
//   G = 4 (LSTM, gates i, f, g, o; gx at o_gx holds x W_ih^T + b_ih [B, 4H]):
//     a = gx + pre; i, f, o = sigmoid, g = tanh; c = f * c_prev + i * g,
//     h = o * tanh(c); writes h (o_h), c (o_c) and the activated gates (o_act).
//   G = 3 (GRU, gates r, z, n): gh = pre; r = sigmoid(gx_r + gh_r),
//     z = sigmoid(gx_z + gh_z), n = tanh(gx_n + r * gh_n),
//     h = (1 - z) * n + z * h_prev (h_prev is A); writes h (o_h), r, z, n
//     (o_act) and gh (o_gh).
//   G = 0 (GEMM mode): C [B, N] at o_h = beta * C + A W^T (beta 0: C is not read).
// The same arithmetic as ml/rnn/lstm_cell.comp and gru_cell.comp after their GEMMs.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "common/math.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint G = 4;
layout(constant_id = 1) const bool HAS_BIAS = true;
layout(constant_id = 2) const bool VEC = false;  // K a multiple of 4 (o_a is then one too)
layout(std430, binding = 0) readonly buffer W { float w[]; };
layout(std430, binding = 0) readonly buffer W4 { vec4 w4[]; };
layout(std430, binding = 1) readonly buffer Bias { float bias[]; };
layout(std430, binding = 2) readonly buffer A { float a[]; };
layout(std430, binding = 2) readonly buffer A4 { vec4 a4[]; };
layout(std430, binding = 3) readonly buffer GX { float gx[]; };
layout(std430, binding = 4) readonly buffer CP { float c_prev[]; };
layout(std430, binding = 5) buffer HO { float h_out[]; };
layout(std430, binding = 6) writeonly buffer CO { float c_out[]; };
layout(std430, binding = 7) writeonly buffer ACT { float act[]; };
layout(std430, binding = 8) writeonly buffer GHO { float gh_out[]; };
#include "ml/rnn/recurrent_step.push.h"

const uint UNITS = G == 0u ? 16u : 4u;  // units (or columns) per workgroup
shared float pre[16][16];

void main() {
  const uint bl = gl_LocalInvocationID.x / 16u, s = gl_LocalInvocationID.x % 16u;
  const uint b = OA_GROUP_ID.y * 16u + bl, u0 = OA_GROUP_ID.x * UNITS;
  const uint g = G == 0u ? 0u : s / UNITS, j = u0 + (G == 0u ? s : s % UNITS);
  const uint row = g * pc.H + j;
  if (b < pc.B && j < pc.H && g < max(G, 1u)) {
    float acc = 0.0;
    if (VEC) {
      vec4 acc4 = vec4(0.0);
      const uint ab = (pc.o_a + b * pc.K) >> 2, wb = (row * pc.K) >> 2;
      for (uint k = 0u; k < pc.K / 4u; ++k) acc4 += a4[ab + k] * w4[wb + k];
      acc = (acc4.x + acc4.y) + (acc4.z + acc4.w);
    } else {
      for (uint k = 0u; k < pc.K; ++k) acc += a[pc.o_a + b * pc.K + k] * w[row * pc.K + k];
    }
    if (HAS_BIAS) acc += bias[row];
    if (G == 0u) {
      const uint e = pc.o_h + b * pc.H + j;
      h_out[e] = pc.beta == 0.0 ? acc : pc.beta * h_out[e] + acc;
      return;
    }
    pre[bl][s] = acc;
  }
  if (G == 0u) return;
  barrier();
  if (s >= UNITS || b >= pc.B || j >= pc.H) return;
  const uint GH = G * pc.H, x = pc.o_gx + b * GH + j, e = b * pc.H + j, at = pc.o_act + b * GH + j;
  if (G == 4u) {
    const float i = oa_sigmoid(gx[x] + pre[bl][s]);
    const float f = oa_sigmoid(gx[x + pc.H] + pre[bl][UNITS + s]);
    const float gg = oa_tanh(gx[x + 2u * pc.H] + pre[bl][2u * UNITS + s]);
    const float o = oa_sigmoid(gx[x + 3u * pc.H] + pre[bl][3u * UNITS + s]);
    const float c = f * c_prev[pc.o_c_prev + e] + i * gg;
    c_out[pc.o_c + e] = c;
    h_out[pc.o_h + e] = o * oa_tanh(c);
    act[at] = i;
    act[at + pc.H] = f;
    act[at + 2u * pc.H] = gg;
    act[at + 3u * pc.H] = o;
  } else {
    const float gh_r = pre[bl][s], gh_z = pre[bl][UNITS + s], gh_n = pre[bl][2u * UNITS + s];
    const float r = oa_sigmoid(gx[x] + gh_r);
    const float z = oa_sigmoid(gx[x + pc.H] + gh_z);
    const float nn = oa_tanh(gx[x + 2u * pc.H] + r * gh_n);
    h_out[pc.o_h + e] = (1.0 - z) * nn + z * a[pc.o_a + e];
    act[at] = r;
    act[at + pc.H] = z;
    act[at + 2u * pc.H] = nn;
    const uint gh = pc.o_gh + b * GH + j;
    gh_out[gh] = gh_r;
    gh_out[gh + pc.H] = gh_z;
    gh_out[gh + 2u * pc.H] = gh_n;
  }
}
