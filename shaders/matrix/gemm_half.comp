#version 450
// The tiled GEMM over f16 or bf16 A and B: matrix/gemm.glsl with OA_GEMM_16.
#extension GL_GOOGLE_include_directive : require
#define OA_GEMM_16
#include "matrix/gemm.glsl"
