// Shared by the row softmax kernels: the row layout of common/rows.glsl, and
// the first CACHE columns each invocation visits stay in registers, so rows up
// to LANES * CACHE columns are read from memory once. Include after the
// push-constant block.
#ifndef OA_SOFTMAX_COMMON_GLSL
#define OA_SOFTMAX_COMMON_GLSL
#include "common/rows.glsl"
const uint CACHE = 8u;
#endif
