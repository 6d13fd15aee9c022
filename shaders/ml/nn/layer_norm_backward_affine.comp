#version 450
// Weight and bias gradients of layer_norm, rms_norm and group_norm
// (layer_norm.comp) as partial sums over slabs of rows, without storing
// dy * xhat. x and dy are viewed as [R, L], L = G * D: each view row holds G
// normalised rows of D columns (G = 1 but for group_norm, whose view row is one
// sample [C * S]); mu and rstd are [R, G]. For column q of view row r, in
// normalised row g = q / D, with k = x[r, g * D] (k = mu = 0 without CENTER):
//   xhat = ((x[r, q] - k) - mu[r, g]) * rstd[r, g],
//   pw[slab0 + s, q] = sum over the rows r of slab s of dy[r, q] * xhat,
//   pb[slab0 + s, q] = sum over the same rows of dy[r, q],
// slab s covering rows [s * slab_rows, min((s + 1) * slab_rows, R)). The host
// sums pw and pb over the slabs (and for group_norm over the S columns of a
// channel) into the gradients. Workgroup (b, s): TX invocations (constant 0,
// a power of two up to 256) across items b * TX + tx of WIDTH columns each
// (constant 1: 4 when D % 4 == 0, else 1), TY = 256 / TX of them down the
// slab's rows (ty, ty + TY, ...); the TY sums of an item meet in a
// shared-memory tree, so results are deterministic. NEED_W / NEED_B: write pw
// / pb (else their bindings are placeholders).
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint TX = 64;
layout(constant_id = 1) const uint WIDTH = 1;
layout(constant_id = 2) const bool CENTER = true;
layout(constant_id = 3) const bool NEED_W = true;
layout(constant_id = 4) const bool NEED_B = true;
const uint TY = 256u / TX;
layout(std430, binding = 0) readonly buffer X { float x[]; };
layout(std430, binding = 0) readonly buffer X4 { vec4 x4[]; };
layout(std430, binding = 1) readonly buffer DY { float dy[]; };
layout(std430, binding = 1) readonly buffer DY4 { vec4 dy4[]; };
layout(std430, binding = 2) readonly buffer Mu { float mu_in[]; };
layout(std430, binding = 3) readonly buffer Rstd { float rstd_in[]; };
layout(std430, binding = 4) writeonly buffer PW { float pw[]; };
layout(std430, binding = 4) writeonly buffer PW4 { vec4 pw4[]; };
layout(std430, binding = 5) writeonly buffer PB { float pb[]; };
layout(std430, binding = 5) writeonly buffer PB4 { vec4 pb4[]; };
#include "ml/nn/layer_norm_backward_affine.push.h"

// Item i of row r of an [R, L] tensor bound as floats f and vec4s f4 (only .x is meaningful when WIDTH is 1).
#define LOAD(f, f4, r, i) (WIDTH == 4u ? f4[(r) * (pc.L / 4u) + (i)] : vec4(f[(r) * pc.L + (i)], 0.0, 0.0, 0.0))
#define STORE(f, f4, r, i, v) \
  if (WIDTH == 4u) f4[(r) * (pc.L / 4u) + (i)] = (v); \
  else f[(r) * pc.L + (i)] = (v).x

shared vec4 part_w[256], part_b[256];

void main() {
  const uint t = gl_LocalInvocationID.x, tx = t % TX, ty = t / TX;
  const uint i = OA_GROUP_ID.x * TX + tx, s = OA_GROUP_ID.y;
  const bool live = i < pc.L / WIDTH;
  const uint g = i * WIDTH / pc.D;  // an item's columns share a normalised row
  vec4 sw = vec4(0.0), sb = vec4(0.0);
  if (live) {
    const uint end = min((s + 1u) * pc.slab_rows, pc.R);
    for (uint r = s * pc.slab_rows + ty; r < end; r += TY) {
      const vec4 d = LOAD(dy, dy4, r, i);
      if (NEED_B) sb += d;
      if (NEED_W) {
        const uint at = r * pc.G + g;
        const float k = CENTER ? x[r * pc.L + g * pc.D] : 0.0, mu = CENTER ? mu_in[at] : 0.0;
        sw += d * (((LOAD(x, x4, r, i) - k) - mu) * rstd_in[at]);
      }
    }
  }
  part_w[t] = sw;
  part_b[t] = sb;
  barrier();
  for (uint h = TY / 2u; h > 0u; h /= 2u) {
    if (ty < h) {
      part_w[t] += part_w[t + h * TX];
      part_b[t] += part_b[t + h * TX];
    }
    barrier();
  }
  if (ty != 0u || !live) return;
  if (NEED_W) STORE(pw, pw4, pc.slab0 + s, i, part_w[t]);
  if (NEED_B) STORE(pb, pb4, pc.slab0 + s, i, part_b[t]);
}
