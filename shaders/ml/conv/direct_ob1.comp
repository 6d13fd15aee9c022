#version 450
// Direct grouped convolution, 1 output channel per workgroup.
#define OA_OB 1
#extension GL_GOOGLE_include_directive : require
#include "ml/conv/direct.glsl"
