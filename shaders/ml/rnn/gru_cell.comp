#version 450
// The GRU cell after its gate GEMMs (Cho et al. 2014; torch.nn.GRUCell's
// gate order r, z, n). gx = W_ih x + b_ih and gh = W_hh h_prev + b_hh are
// [B, 3H] (blocks of H in the order r, z, n); per batch row b and unit j:
//   r = sigmoid(gx_r + gh_r), z = sigmoid(gx_z + gh_z),
//   n = tanh(gx_n + r * gh_n),  h = (1 - z) * n + z * h_prev.
// Also writes r, z, n (layout of gx) for the backward pass.
// One invocation per (b, j); n = B * H; operand offsets oK in the push
// constants (ml/rnn/cell.push.h).
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "common/math.glsl"
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer GX { float gx[]; };
layout(std430, binding = 1) readonly buffer GH { float gh[]; };
layout(std430, binding = 2) readonly buffer HP { float h_prev[]; };
layout(std430, binding = 3) writeonly buffer HO { float h_out[]; };
layout(std430, binding = 4) writeonly buffer ACT { float act[]; };
#include "ml/rnn/cell.push.h"

void main() {
  const uint e = OA_GROUP_ID.x * 256u + gl_LocalInvocationID.x;
  if (e >= pc.n) return;
  const uint b = e / pc.H, j = e - b * pc.H, base = b * 3u * pc.H + j, x = pc.o0 + base, h = pc.o1 + base, a = pc.o4 + base;
  const float r = oa_sigmoid(gx[x] + gh[h]);
  const float z = oa_sigmoid(gx[x + pc.H] + gh[h + pc.H]);
  const float nn = oa_tanh(gx[x + 2u * pc.H] + r * gh[h + 2u * pc.H]);
  h_out[pc.o3 + e] = (1.0 - z) * nn + z * h_prev[pc.o2 + e];
  act[a] = r;
  act[a + pc.H] = z;
  act[a + 2u * pc.H] = nn;
}
