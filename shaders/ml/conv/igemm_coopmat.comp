#version 450
// The tensor-core convolution forward for f16: see ml/conv/igemm_coopmat.glsl.
#extension GL_GOOGLE_include_directive : require
#include "ml/conv/igemm_coopmat.glsl"
