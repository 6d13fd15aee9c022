#ifndef OA_CONV_GEOMETRY_GLSL
#define OA_CONV_GEOMETRY_GLSL
// The convolution relation shared by the conv kernels. A convolution links a
// "narrow" tensor [N, CN, HN, WN] and a "wide" tensor [N, CW, HW, WW] through a
// weight [CN, CW / groups, KH, KW]: narrow position yn and tap kh meet wide
// position yw = yn * sh - ph + kh * dh (likewise along x). Convolution computes
// narrow from wide; transposed convolution (and the convolution's input
// gradient) computes wide from narrow; the weight gradient reduces over narrow
// positions.
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"

// floor(a / b) for b > 0.
int oa_floor_div(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// The taps of kernel axis `k` (extent `kk`, dilation `d`) that reach wide
// positions of residue `phase` modulo stride `s` with padding `p`: kh = k0 +
// t * step for t < count; the narrow position of wide p0 + j * s through tap t is
// j + base - t * (step * d / s).
struct OaPhaseTaps {
  uint k0;
  uint step;
  uint count;
  int base;
  int tap;
};

OaPhaseTaps oa_phase_taps(uint phase, uint s, uint p, uint kk, uint d) {
  OaPhaseTaps r;
  uint target = (phase + p % s) % s;
  // step = s / gcd(s, d)
  uint a = s, b = d % s;
  while (b != 0u) {
    uint t = a % b;
    a = b;
    b = t;
  }
  r.step = s / a;
  // The first matching tap lies below min(kk, step); k * d stays below 2^31
  // (validated), so the search costs at most one pass over the kernel.
  r.k0 = 0u;
  bool found = false;
  for (uint k = 0u; k < min(kk, r.step); ++k) {
    if ((k * d) % s == target) {
      r.k0 = k;
      found = true;
      break;
    }
  }
  r.count = found && r.k0 < kk ? (kk - 1u - r.k0) / r.step + 1u : 0u;
  r.base = r.count > 0u ? (int(phase + p) - int(r.k0 * d)) / int(s) : 0;
  r.tap = int(d / a);  // step * d / s
  return r;
}

#endif
