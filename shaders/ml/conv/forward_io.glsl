#ifndef OA_CONV_FORWARD_IO_GLSL
#define OA_CONV_FORWARD_IO_GLSL
// The bindings and push constants of the kernels that compute one side of the
// convolution relation from the other (direct.glsl, igemm.glsl): src the side
// read, wt the weight [CN, CW / groups, KH, KW], bias one per output channel,
// dst the side written.
#include "ml/conv/geometry.glsl"

layout(std430, binding = 0) readonly buffer Src { float src[]; };
layout(std430, binding = 1) readonly buffer Weight { float wt[]; };
layout(std430, binding = 2) readonly buffer Bias { float bias[]; };
layout(std430, binding = 3) writeonly buffer Dst { float dst[]; };
#include "ml/conv/geometry.push.h"

#endif
