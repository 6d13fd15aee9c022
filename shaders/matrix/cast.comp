#version 450
// y = x converted between dtypes (oa::matrix::cast): FROM and TO are 0 (f32),
// 1 (f16), 2 (bf16) or 3 (i32), never equal nor both i32. f16 <-> bf16 widens
// to f32 (exactly) and narrows once; i32 converts to f32 rounding to nearest,
// ties to even (exact below 2^24 in magnitude), and to a 16-bit dtype through
// that f32; a float converts to i32 truncating toward zero, saturating at the
// int32 range, NaN giving 0 (CUDA's cvt.rzi.s32.f32, which torch's casts
// use on the GPU). Invocation p converts elements 2p and 2p + 1: one 32-bit
// word of a 16-bit side, two words of an f32 or i32 side. A 16-bit storage is whole
// words, so the last word of an odd count gets a zero high half.
// The conversions are integer arithmetic (common/half.glsl), not
// packHalf2x16 / unpackHalf2x16: GLSL leaves their rounding and subnormal
// handling to the implementation. (lavapipe's happen to pass the same tests,
// ties to even and subnormals included.)
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "common/half.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint FROM = 0;
layout(constant_id = 1) const uint TO = 1;
layout(std430, binding = 0) readonly buffer In { uint src[]; };
layout(std430, binding = 1) writeonly buffer Out { uint dst[]; };
#include "matrix/cast.push.h"

uint widen(uint h) { return FROM == 1u ? oa_f32_from_f16(h) : oa_f32_from_bf16(h); }
uint narrow(uint x) { return TO == 1u ? oa_f16_from_f32(x) : oa_bf16_from_f32(x); }

// The f32 bits nearest the int32 v (ties to even), in integer arithmetic: GLSL
// leaves the rounding of its int-to-float conversion to the implementation.
uint f32_from_i32(int v) {
  const uint sign = v < 0 ? 0x80000000u : 0u, m = v < 0 ? 0u - uint(v) : uint(v);  // |INT32_MIN| = 2^31 as uint
  if (m < (1u << 24)) return floatBitsToUint(float(v));  // exact
  const int e = findMSB(m);  // 24 .. 31
  const uint shift = uint(e - 23), rest = m & ((1u << shift) - 1u), tie = 1u << (shift - 1u);
  uint keep = m >> shift;  // 24 significant bits
  if (rest > tie || (rest == tie && (keep & 1u) != 0u)) ++keep;
  const uint carry = keep >> 24;  // rounded up to 2^24: one more in the exponent
  return sign | (uint(e + 127) + carry) << 23 | ((keep >> carry) & 0x7fffffu);
}

// The int32 bits of f32 bits x truncated toward zero, saturating, NaN 0: GLSL
// leaves out-of-range float-to-int conversions undefined.
uint i32_from_f32(uint x) {
  const float v = uintBitsToFloat(x);
  if (isnan(v)) return 0u;
  if (v >= 2147483648.0) return 0x7fffffffu;
  if (v <= -2147483648.0) return 0x80000000u;
  return uint(int(v));  // |v| < 2^31: int() truncates exactly
}

void main() {
  const uint p = OA_GROUP_ID.x * 256u + gl_LocalInvocationID.x, i = 2u * p;
  if (i >= pc.n) return;
  const bool pair = i + 1u < pc.n;
  uint a, b;  // the f32 bits of elements i and i + 1
  if (FROM == 0u) {
    a = src[i];
    b = pair ? src[i + 1u] : 0u;
  } else if (FROM == 3u) {
    a = f32_from_i32(int(src[i]));
    b = pair ? f32_from_i32(int(src[i + 1u])) : 0u;
  } else {
    const uint w = src[p];
    a = widen(w & 0xffffu);
    b = widen(w >> 16);
  }
  if (TO == 0u || TO == 3u) {
    dst[i] = TO == 0u ? a : i32_from_f32(a);
    if (pair) dst[i + 1u] = TO == 0u ? b : i32_from_f32(b);
  } else {
    dst[p] = narrow(a) | (pair ? narrow(b) << 16 : 0u);
  }
}
