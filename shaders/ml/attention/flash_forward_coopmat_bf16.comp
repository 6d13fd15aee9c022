#version 450
// Flash attention forward on the tensor cores for bf16 q, k, v:
// ml/attention/flash_forward_coopmat.glsl compiled as for f16, its 16-bit float
// type then rewritten to bf16 by the build (tools/spirv_bf16.cpp).
#extension GL_GOOGLE_include_directive : require
#include "ml/attention/flash_forward_coopmat.glsl"
