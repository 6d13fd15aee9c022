#version 450
// The f32 GEMM epilogue: matrix/gemm_epilogue.glsl without OA_GEMM_16.
#extension GL_GOOGLE_include_directive : require
#include "matrix/gemm_epilogue.glsl"
