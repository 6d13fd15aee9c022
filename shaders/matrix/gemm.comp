#version 450
// The f32 tiled GEMM: matrix/gemm.glsl without OA_GEMM_16.
#extension GL_GOOGLE_include_directive : require
#include "matrix/gemm.glsl"
