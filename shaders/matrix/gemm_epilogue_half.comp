#version 450
// The GEMM epilogue into an f16 or bf16 C: matrix/gemm_epilogue.glsl with OA_GEMM_16.
#extension GL_GOOGLE_include_directive : require
#define OA_GEMM_16
#include "matrix/gemm_epilogue.glsl"
