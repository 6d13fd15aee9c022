#version 450
// Deterministic scatter-add along one axis (scatter_add, and the backward of
// index_select and gather) without atomics: the result is viewed as
// [outer, N, inner] around the axis and the values as [outer, K, inner];
//   out[o, v, i] = base[o, v, i] (BASE 1; 0 when BASE 0)
//                + sum over k = 0 .. K-1, in increasing k, of values[o, k, i]
//                  where the i32 index of (o, k, i) equals v,
// that index being index[k] (MODE 0, index [K]) or index[(o K + k) inner + i]
// (MODE 1, index shaped as the values). Each result element scans the K
// indices of its line (cost O(K) per element); an index outside [0, N)
// matches no element, so it contributes nothing, and fails the op's device
// check (binding 4, Engine::register_device_check: id pc.check_id, the index
// as the value, reported by the lines' v = 0 elements; check_id 0 in a
// backward, whose forward checked the same index). The values are f32 (I32 0)
// or i32 (I32 1: exact, wrapping past the int32 range as two's complement),
// held as their 32-bit patterns.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint MODE = 0;
layout(constant_id = 1) const uint BASE = 0;
layout(constant_id = 2) const uint I32 = 0;
layout(std430, binding = 0) readonly buffer Base { uint base[]; };
layout(std430, binding = 1) readonly buffer Index { int index[]; };
layout(std430, binding = 2) readonly buffer Values { uint values[]; };
layout(std430, binding = 3) writeonly buffer Out { uint y[]; };
layout(std430, binding = 4) buffer Check { uint check[]; };
#include "matrix/index_scatter_add.push.h"
#include "common/device_check.glsl"

void main() {
  const uint i = OA_GROUP_ID.x * 256u + gl_LocalInvocationID.x;
  if (i >= pc.n) return;
  const uint in_row = i % pc.inner, v = (i / pc.inner) % pc.N, o = i / (pc.inner * pc.N);
  float acc = BASE == 1u ? uintBitsToFloat(base[i]) : 0.0;
  uint iacc = BASE == 1u ? base[i] : 0u;  // unsigned addition wraps as int32's two's complement
  for (uint k = 0u; k < pc.K; ++k) {
    const uint at = (o * pc.K + k) * pc.inner + in_row;
    const int idx = MODE == 0u ? index[k] : index[at];
    if (idx >= 0 && uint(idx) == v) {
      if (I32 == 1u) iacc += values[at];
      else acc += uintBitsToFloat(values[at]);
    } else if (v == 0u && pc.check_id != 0u && (idx < 0 || uint(idx) >= pc.N)) {
      oa_fail_check(pc.check_id, idx);
    }
  }
  y[i] = I32 == 1u ? iacc : floatBitsToUint(acc);
}
