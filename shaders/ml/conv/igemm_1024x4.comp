#version 450
// Implicit-GEMM convolution for at most 4 output channels: 1024 positions x 4 channels per workgroup, 4 positions per invocation.
#define OA_BM 1024
#define OA_BN 4
#define OA_TM 4
#define OA_TN 4
#extension GL_GOOGLE_include_directive : require
#include "ml/conv/igemm.glsl"
