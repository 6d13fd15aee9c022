#version 450
// Convolution weight gradient, 16 x 32 weights per workgroup, 2x2 per invocation.
#define OA_BO 16
#define OA_BKK 32
#define OA_TO 2
#define OA_TK 2
#extension GL_GOOGLE_include_directive : require
#include "ml/conv/wgrad.glsl"
