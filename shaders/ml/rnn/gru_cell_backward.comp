#version 450
// Gradients of gru_cell.comp from the saved r, z, n ([B, 3H]), gh and h_prev,
// given dh [B, H]:
//   dn = dh * (1 - z),  da_n = dn * (1 - n^2)      (a_n = gx_n + r * gh_n),
//   dgx_r = dgh_r = da_n * gh_n * r (1 - r),
//   dgx_z = dgh_z = dh * (h_prev - n) * z (1 - z),
//   dgx_n = da_n,  dgh_n = da_n * r,  dh_prev = dh * z.
// WRITE_DGX / WRITE_DGH / WRITE_DH_PREV: which gradients to write (the others'
// bindings are placeholders). ADD_DR: dh is the bound dh plus what dh_prev's
// binding holds before the step overwrites it (a layer's step adds the part
// that flows back from the next step). Operand offsets oK in the push
// constants (ml/rnn/cell.push.h).
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(constant_id = 0) const bool WRITE_DGX = true;
layout(constant_id = 1) const bool WRITE_DGH = true;
layout(constant_id = 2) const bool WRITE_DH_PREV = true;
layout(constant_id = 3) const bool ADD_DR = false;
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer DH { float dh[]; };
layout(std430, binding = 1) readonly buffer ACT { float act[]; };
layout(std430, binding = 2) readonly buffer GH { float gh[]; };
layout(std430, binding = 3) readonly buffer HP { float h_prev[]; };
layout(std430, binding = 4) writeonly buffer DGX { float dgx[]; };
layout(std430, binding = 5) writeonly buffer DGH { float dgh[]; };
layout(std430, binding = 6) buffer DHP { float dh_prev[]; };
#include "ml/rnn/cell.push.h"

void main() {
  const uint e = OA_GROUP_ID.x * 256u + gl_LocalInvocationID.x;
  if (e >= pc.n) return;
  const uint b = e / pc.H, j = e - b * pc.H, base = b * 3u * pc.H + j, a = pc.o1 + base;
  const float r = act[a], z = act[a + pc.H], nn = act[a + 2u * pc.H], g = dh[pc.o0 + e] + (ADD_DR ? dh_prev[pc.o6 + e] : 0.0);
  const float da_n = g * (1.0 - z) * (1.0 - nn * nn);
  const float da_r = da_n * gh[pc.o2 + base + 2u * pc.H] * r * (1.0 - r);
  const float da_z = g * (h_prev[pc.o3 + e] - nn) * z * (1.0 - z);
  if (WRITE_DGX) {
    const uint x = pc.o4 + base;
    dgx[x] = da_r;
    dgx[x + pc.H] = da_z;
    dgx[x + 2u * pc.H] = da_n;
  }
  if (WRITE_DGH) {
    const uint h = pc.o5 + base;
    dgh[h] = da_r;
    dgh[h + pc.H] = da_z;
    dgh[h + 2u * pc.H] = da_n * r;
  }
  if (WRITE_DH_PREV) dh_prev[pc.o6 + e] = g * z;
}
