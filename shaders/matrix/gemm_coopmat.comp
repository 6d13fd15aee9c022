#version 450
// The tensor-core GEMM for f16 A and B: see matrix/gemm_coopmat.glsl.
#extension GL_GOOGLE_include_directive : require
#include "matrix/gemm_coopmat.glsl"
