#version 450
// Implicit-GEMM convolution, 128 positions x 128 channels per workgroup, 8x8 per invocation.
#define OA_BM 128
#define OA_BN 128
#define OA_TM 8
#define OA_TN 8
#extension GL_GOOGLE_include_directive : require
#include "ml/conv/igemm.glsl"
