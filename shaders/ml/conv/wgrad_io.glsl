#ifndef OA_CONV_WGRAD_IO_GLSL
#define OA_CONV_WGRAD_IO_GLSL
// The bindings and push constants of the weight-gradient kernels (wgrad.glsl,
// wgrad_small.glsl): dn the narrow tensor, xw the wide one, dw the weight
// gradient (or a split's partial sums).
#include "ml/conv/geometry.glsl"

layout(std430, binding = 0) readonly buffer Narrow { float dn[]; };
layout(std430, binding = 1) readonly buffer Wide { float xw[]; };
layout(std430, binding = 2) writeonly buffer Out { float dw[]; };
#include "ml/conv/geometry.push.h"

#endif
