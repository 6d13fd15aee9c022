#version 450
// One level of the global gradient norm: a deterministic tree reduction over
// up to 8 inputs (unused inputs have count 0).
// SQUARE 1 sums x * x (the first level, over gradients); SQUARE 0 sums x (later
// levels, over partial sums).
// FINAL 0: the inputs are cut into chunks of CHUNK elements, input after input;
//   workgroup w reduces chunk w and writes its sum to out[w].
// FINAL 1: one workgroup reduces everything and writes sqrt(total) to out[0].
// Each thread sums a strided slice (at most CHUNK / 256 elements per input),
// then the workgroup adds the 256 sums (common/reduce.glsl).
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "common/reduce.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint SQUARE = 1;
layout(constant_id = 1) const uint FINAL = 0;
layout(std430, binding = 0) readonly buffer X0 { float x0[]; };
layout(std430, binding = 1) readonly buffer X1 { float x1[]; };
layout(std430, binding = 2) readonly buffer X2 { float x2[]; };
layout(std430, binding = 3) readonly buffer X3 { float x3[]; };
layout(std430, binding = 4) readonly buffer X4 { float x4[]; };
layout(std430, binding = 5) readonly buffer X5 { float x5[]; };
layout(std430, binding = 6) readonly buffer X6 { float x6[]; };
layout(std430, binding = 7) readonly buffer X7 { float x7[]; };
layout(std430, binding = 8) writeonly buffer Out { float out_[]; };
#include "ml/optim/sum_squares.push.h"

const uint CHUNK = 2048u;
uint count(uint j) { return j < 4u ? pc.count_lo[j] : pc.count_hi[j - 4u]; }

float load(uint j, uint i) {
  switch (j) {
    case 0u: return x0[i];
    case 1u: return x1[i];
    case 2u: return x2[i];
    case 3u: return x3[i];
    case 4u: return x4[i];
    case 5u: return x5[i];
    case 6u: return x6[i];
  }
  return x7[i];
}

float term(float x) { return SQUARE == 1u ? x * x : x; }

void main() {
  uint t = gl_LocalInvocationID.x;
  float acc = 0.0;
  if (FINAL == 1u) {
    for (uint j = 0u; j < 8u; ++j)
      for (uint i = t; i < count(j); i += 256u) acc += term(load(j, i));
  } else {
    // Find the input whose chunks hold chunk w (uniform across the workgroup).
    uint w = OA_GROUP_ID.x;
    uint first = 0u;
    uint j = 0u;
    for (; j < 7u; ++j) {
      uint chunks = (count(j) + CHUNK - 1u) / CHUNK;
      if (w < first + chunks) break;
      first += chunks;
    }
    uint begin = (w - first) * CHUNK;
    uint end = min(begin + CHUNK, count(j));
    for (uint i = begin + t; i < end; i += 256u) acc += term(load(j, i));
  }
  acc = oa_workgroup_sum(acc);
  if (t == 0u) {
    if (FINAL == 1u) out_[0] = sqrt(acc);
    else out_[OA_GROUP_ID.x] = acc;
  }
}
