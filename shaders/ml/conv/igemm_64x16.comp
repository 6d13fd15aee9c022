#version 450
// Implicit-GEMM convolution, 64 positions x 16 channels per workgroup, 4x4 per invocation.
#define OA_BM 64
#define OA_BN 16
#define OA_TM 4
#define OA_TN 4
#extension GL_GOOGLE_include_directive : require
#include "ml/conv/igemm.glsl"
