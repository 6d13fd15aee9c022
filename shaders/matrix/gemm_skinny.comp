#version 450
// The f32 skinny GEMM: matrix/gemm_skinny.glsl without OA_GEMM_16.
#extension GL_GOOGLE_include_directive : require
#include "matrix/gemm_skinny.glsl"
