#version 450
// The LSTM cell after its gate GEMMs (Hochreiter & Schmidhuber 1997 with a
// forget gate, Gers et al. 2000; torch.nn.LSTMCell's gate order i, f, g, o).
// Per batch row b and hidden unit j, with a = gx + gh the gate
// pre-activations [B, 4H] (the four blocks of H in the order i, f, g, o):
//   i = sigmoid(a_i), f = sigmoid(a_f), g = tanh(a_g), o = sigmoid(a_o),
//   c = f * c_prev + i * g,  h = o * tanh(c).
// Also writes the activated gates (same layout as a) for the backward pass.
// HAS_GH false: gx holds the summed pre-activations (gh's binding is then a
// placeholder, never read). One invocation per (b, j); n = B * H; operand
// offsets oK in the push constants (ml/rnn/cell.push.h).
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "common/math.glsl"
layout(constant_id = 0) const bool HAS_GH = true;
layout(local_size_x = 256) in;
layout(std430, binding = 0) readonly buffer GX { float gx[]; };
layout(std430, binding = 1) readonly buffer GH { float gh[]; };
layout(std430, binding = 2) readonly buffer CP { float c_prev[]; };
layout(std430, binding = 3) writeonly buffer HO { float h_out[]; };
layout(std430, binding = 4) writeonly buffer CO { float c_out[]; };
layout(std430, binding = 5) writeonly buffer ACT { float act[]; };
#include "ml/rnn/cell.push.h"

float gate(uint k) { return HAS_GH ? gx[pc.o0 + k] + gh[pc.o1 + k] : gx[pc.o0 + k]; }

void main() {
  const uint e = OA_GROUP_ID.x * 256u + gl_LocalInvocationID.x;
  if (e >= pc.n) return;
  const uint b = e / pc.H, j = e - b * pc.H, base = b * 4u * pc.H + j;
  const float i = oa_sigmoid(gate(base));
  const float f = oa_sigmoid(gate(base + pc.H));
  const float g = oa_tanh(gate(base + 2u * pc.H));
  const float o = oa_sigmoid(gate(base + 3u * pc.H));
  const float c = f * c_prev[pc.o2 + e] + i * g;
  c_out[pc.o4 + e] = c;
  h_out[pc.o3 + e] = o * oa_tanh(c);
  const uint a = pc.o5 + base;
  act[a] = i;
  act[a + pc.H] = f;
  act[a + 2u * pc.H] = g;
  act[a + 3u * pc.H] = o;
}
