#version 450
// Convolution weight gradient, 64 x 64 weights per workgroup, 4x4 per invocation.
#define OA_BO 64
#define OA_BKK 64
#define OA_TO 4
#define OA_TK 4
#extension GL_GOOGLE_include_directive : require
#include "ml/conv/wgrad.glsl"
