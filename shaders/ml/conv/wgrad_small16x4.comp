#version 450
// Per-channel convolution weight gradient, K <= 16 weights per output channel, 4 channels of one group per workgroup.
#define OA_MAXK 16
#define OA_OB 4
#extension GL_GOOGLE_include_directive : require
#include "ml/conv/wgrad_small.glsl"
