#version 450
// Bitonic sort (Batcher 1968) of (key, position) pairs for the embedding
// weight gradient: pair p is (indices[p], p), an index outside [0, V) has key
// V and the padding up to the power-of-two length T has key 0xffffffff. The
// pairs are distinct, so the sorted order (by key, then position) is unique:
// the gradient sums each vocabulary row in position order, deterministically.
// Pairs i and i + j of the stage of block size k are ordered ascending when
// i & k == 0, descending otherwise. Blocks of 512 pairs sort in shared memory.
//   MODE 0: build the pairs and run every stage k <= 512 within each block.
//   MODE 1: one global compare-exchange step (k, j) with j >= 512.
//   MODE 2: the steps j = 256 .. 1 of stage k within each block.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint MODE = 0;
layout(std430, binding = 0) readonly buffer Indices { int indices[]; };
layout(std430, binding = 1) buffer Pairs { uvec2 pairs[]; };
#include "ml/nn/embedding_sort.push.h"

shared uvec2 block[512];

bool after(uvec2 a, uvec2 b) { return a.x > b.x || (a.x == b.x && a.y > b.y); }

// The pair index of compare-exchange t in a step of distance j.
uint first_of(uint t, uint j) { return 2u * j * (t / j) + t % j; }

void local_step(uint base, uint k, uint j) {
  const uint i = first_of(gl_LocalInvocationID.x, j), l = i + j;
  const uvec2 a = block[i], b = block[l];
  if (((base + i) & k) == 0u ? after(a, b) : after(b, a)) {
    block[i] = b;
    block[l] = a;
  }
}

void main() {
  const uint t = gl_LocalInvocationID.x;
  if (MODE == 1u) {
    const uint i = first_of(OA_GROUP_ID.x * 256u + t, pc.j), l = i + pc.j;
    const uvec2 a = pairs[i], b = pairs[l];
    if ((i & pc.k) == 0u ? after(a, b) : after(b, a)) {
      pairs[i] = b;
      pairs[l] = a;
    }
    return;
  }
  const uint base = OA_GROUP_ID.x * 512u;
  for (uint q = 0u; q < 2u; ++q) {
    const uint p = base + t + q * 256u;
    if (MODE == 0u) {
      uint key = 0xffffffffu;
      if (p < pc.N) {
        const int v = indices[p];
        key = v >= 0 && v < pc.V ? uint(v) : uint(pc.V);
      }
      block[t + q * 256u] = uvec2(key, p);
    } else {
      block[t + q * 256u] = pairs[p];
    }
  }
  barrier();
  if (MODE == 0u) {
    for (uint k = 2u; k <= 512u; k <<= 1u)
      for (uint j = k / 2u; j > 0u; j >>= 1u) {
        local_step(base, k, j);
        barrier();
      }
  } else {
    for (uint j = 256u; j > 0u; j >>= 1u) {
      local_step(base, pc.k, j);
      barrier();
    }
  }
  pairs[base + t] = block[t];
  pairs[base + t + 256u] = block[t + 256u];
}
