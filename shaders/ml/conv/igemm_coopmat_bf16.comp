#version 450
// The tensor-core convolution forward for bf16: ml/conv/igemm_coopmat.glsl
// compiled as for f16, its 16-bit float type then rewritten to bf16 by the
// build (tools/spirv_bf16.cpp).
#extension GL_GOOGLE_include_directive : require
#include "ml/conv/igemm_coopmat.glsl"
