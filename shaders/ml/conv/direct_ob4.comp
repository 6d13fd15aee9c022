#version 450
// Direct grouped convolution, 4 output channels per workgroup.
#define OA_OB 4
#extension GL_GOOGLE_include_directive : require
#include "ml/conv/direct.glsl"
