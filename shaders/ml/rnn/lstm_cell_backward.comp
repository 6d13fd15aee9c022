#version 450
// Gradients of lstm_cell.comp from the saved activated gates i, f, g, o
// ([B, 4H]), c_prev and c, given dh and dc ([B, H]):
//   dct = dc + dh * o * (1 - tanh(c)^2),
//   da_i = dct * g * i (1 - i),     da_f = dct * c_prev * f (1 - f),
//   da_g = dct * i * (1 - g^2),     da_o = dh * tanh(c) * o (1 - o),
//   dc_prev = dct * f.
// da [B, 4H] is the gradient of both gx and gh (their sum feeds the gates).
// WRITE_DC_PREV: write dc_prev (else its binding is a placeholder). ADD_DR:
// dh is the bound dh plus dr [B, H] (a layer's step adds the part that flows
// back from the next step; else dr's binding is a placeholder). Operand
// offsets oK in the push constants (ml/rnn/cell.push.h).
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "common/math.glsl"
layout(constant_id = 0) const bool WRITE_DC_PREV = true;
layout(constant_id = 1) const bool ADD_DR = false;
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer DH { float dh[]; };
layout(std430, binding = 1) readonly buffer DC { float dc[]; };
layout(std430, binding = 2) readonly buffer ACT { float act[]; };
layout(std430, binding = 3) readonly buffer CP { float c_prev[]; };
layout(std430, binding = 4) readonly buffer CO { float c_out[]; };
layout(std430, binding = 5) writeonly buffer DA { float da[]; };
layout(std430, binding = 6) writeonly buffer DCP { float dc_prev[]; };
layout(std430, binding = 7) readonly buffer DR { float dr[]; };
#include "ml/rnn/cell.push.h"

void main() {
  const uint e = OA_GROUP_ID.x * 256u + gl_LocalInvocationID.x;
  if (e >= pc.n) return;
  const uint b = e / pc.H, j = e - b * pc.H, base = b * 4u * pc.H + j, a = pc.o2 + base, d = pc.o5 + base;
  const float i = act[a], f = act[a + pc.H], g = act[a + 2u * pc.H], o = act[a + 3u * pc.H];
  const float tc = oa_tanh(c_out[pc.o4 + e]), g_h = dh[pc.o0 + e] + (ADD_DR ? dr[e] : 0.0);
  const float dct = dc[pc.o1 + e] + g_h * o * (1.0 - tc * tc);
  da[d] = dct * g * i * (1.0 - i);
  da[d + pc.H] = dct * c_prev[pc.o3 + e] * f * (1.0 - f);
  da[d + 2u * pc.H] = dct * i * (1.0 - g * g);
  da[d + 3u * pc.H] = g_h * tc * o * (1.0 - o);
  if (WRITE_DC_PREV) dc_prev[pc.o6 + e] = dct * f;
}
