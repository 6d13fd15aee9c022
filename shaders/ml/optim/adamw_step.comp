#version 450
// One Adam or AdamW step (Kingma & Ba 2015; Loshchilov & Hutter 2019), as
// torch.optim.Adam / AdamW compute it, on up to OA_ADAM_ITEMS (7) parameters (or
// element ranges of them) in one dispatch, as PyTorch's foreach/fused Adam:
//   L2 0 (AdamW): d = g,               p = p * decay      (decay = 1 - lr * weight_decay)
//   L2 1 (Adam):  d = g + decay * p                       (decay = weight_decay)
//   m = m + (1 - beta1) * (d - m)                         (lerp)
//   v = beta2 * v + (1 - beta2) * d * d
//   AMSGRAD 1: v_max = max(v_max, v), used for v below    (torch's amsgrad)
//   p = p - step_size * m / (sqrt(v) / bc2_sqrt + eps)
// with step_size = lr / (1 - beta1^t) and bc2_sqrt = sqrt(1 - beta2^t) at
// the parameter's t-th update: t - 1 is its update count (binding 29), decay
// and lr are read from binding 28 (three floats per parameter, the item's
// slot picks them). Nothing changes when found_inf (binding 30, GradScaler's)
// is nonzero. PUSHED = 1 (a step without found_inf): the update count, decay
// and lr, the same for every item, come from the push constants instead and
// bindings 28 to 30 are never touched. Workgroups map to items as
// update_items.push.h says; each thread updates 4 elements (1024 per
// workgroup).
// Bindings: 4j parameter, 4j + 1 gradient, 4j + 2 exp_avg (m), 4j + 3
// exp_avg_sq (v) of item j; 28 step constants, 29 update counts, 30 found_inf.
// AMSGRAD 1: at most OA_ADAM_AMSGRAD_ITEMS (5) items, and 20 + j holds item
// j's max_exp_avg_sq (v_max) where items 5 and 6 would be (25 to 27 unused).
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
#include "ml/optim/adamw_step.push.h"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint PUSHED = 0;
layout(constant_id = 1) const uint L2 = 0;
layout(constant_id = 2) const uint AMSGRAD = 0;
// The four buffers of item k.
#define ITEM(k)                                                       \
  layout(std430, binding = 4 * k) buffer P##k { float p##k[]; };       \
  layout(std430, binding = 4 * k + 1) readonly buffer G##k { float g##k[]; }; \
  layout(std430, binding = 4 * k + 2) buffer M##k { float m##k[]; };   \
  layout(std430, binding = 4 * k + 3) buffer V##k { float v##k[]; };
ITEM(0) ITEM(1) ITEM(2) ITEM(3) ITEM(4) ITEM(5) ITEM(6)
// The running maximum of item k's v (AMSGRAD 1 only; aliases items 5 and 6).
#define MAX_ITEM(k) layout(std430, binding = 4 * OA_ADAM_AMSGRAD_ITEMS + k) buffer X##k { float x##k[]; };
MAX_ITEM(0) MAX_ITEM(1) MAX_ITEM(2) MAX_ITEM(3) MAX_ITEM(4)
layout(std430, binding = 4 * OA_ADAM_ITEMS) readonly buffer C { float constants[]; };
layout(std430, binding = 4 * OA_ADAM_ITEMS + 1) readonly buffer N { float counts[]; };
layout(std430, binding = 4 * OA_ADAM_ITEMS + 2) readonly buffer F { float found_inf[]; };
#include "ml/optim/update_items.glsl"

// 1 - beta^t = -expm1(t log(beta)) from log_beta = log(beta) (-inf for beta
// 0): a series near 0, where 1 - exp() would cancel, exp() elsewhere; relative
// error a few f32 ulps, with no reliance on the accuracy of the device's log.
float bias_correction(float t, float log_beta) {
  float x = t * log_beta;
  if (x <= -0.5) return 1.0 - exp(x);
  float term = x, sum = x;
  for (int k = 2; k <= 10; ++k) {
    term *= x / float(k);
    sum += term;
  }
  return -sum;
}

// AMSGRAD: vd, the v of the denominator, becomes the running maximum of
// item k's v (kept in x##k). Items 5 and 6 exist only without AMSGRAD.
#define RUNNING_MAX(k)            \
  vd = max(x##k[i], vi);          \
  x##k[i] = vd;
#define NO_MAX(k)

// The update of item k's elements i0 + 0, 256, 512, 768 (those below its
// count); VMAX(k) is RUNNING_MAX or NO_MAX.
#define UPDATE(k, VMAX)                                                        \
  for (uint s = 0u; s < 4u; ++s) {                                             \
    uint i = i0 + s * 256u;                                                    \
    if (i >= pc.n[k]) return;                                                  \
    float grad = g##k[i];                                                      \
    float w = p##k[i];                                                         \
    if (L2 == 1u) grad += decay * w;                                           \
    else w *= decay;                                                           \
    float mi = m##k[i];                                                        \
    mi = mi + (1.0 - pc.beta1) * (grad - mi);                                  \
    float vi = pc.beta2 * v##k[i] + (1.0 - pc.beta2) * grad * grad;            \
    m##k[i] = mi;                                                              \
    v##k[i] = vi;                                                              \
    float vd = vi;                                                             \
    if (AMSGRAD == 1u) { VMAX(k) }                                             \
    p##k[i] = w - step_size * (mi / (sqrt(vd) / bc2_sqrt + pc.eps));           \
  }

void main() {
  if (PUSHED == 0u && found_inf[0] != 0.0) return;
  uint local;
  uint j = update_item(OA_GROUP_ID.x, local);
  uint slot = pc.slot[j];
  uint i0 = local * 1024u + gl_LocalInvocationID.x;
  float t = (PUSHED == 1u ? pc.count : counts[slot]) + 1.0;
  float decay = PUSHED == 1u ? pc.decay : constants[3u * slot];
  float lr = PUSHED == 1u ? pc.lr : constants[3u * slot + 1u];
  float step_size = lr / bias_correction(t, pc.log_beta1);
  float bc2_sqrt = sqrt(bias_correction(t, pc.log_beta2));
  // One branch per workgroup (j is uniform), the whole update inside: a
  // branch per access would run every case on lavapipe.
  switch (int(j)) {
    case 0: UPDATE(0, RUNNING_MAX) break;
    case 1: UPDATE(1, RUNNING_MAX) break;
    case 2: UPDATE(2, RUNNING_MAX) break;
    case 3: UPDATE(3, RUNNING_MAX) break;
    case 4: UPDATE(4, RUNNING_MAX) break;
    case 5: if (AMSGRAD == 0u) UPDATE(5, NO_MAX) break;
    default: if (AMSGRAD == 0u) UPDATE(6, NO_MAX)
  }
}
