#version 450
// Flash attention forward on the tensor cores for f16 q, k, v: see
// ml/attention/flash_forward_coopmat.glsl.
#extension GL_GOOGLE_include_directive : require
#include "ml/attention/flash_forward_coopmat.glsl"
