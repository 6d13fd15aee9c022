#version 450
// Convolution weight gradient, 128 x 128 weights per workgroup, 8x8 per invocation.
#define OA_BO 128
#define OA_BKK 128
#define OA_TO 8
#define OA_TK 8
#extension GL_GOOGLE_include_directive : require
#include "ml/conv/wgrad.glsl"
