#version 450
// Per-channel convolution weight gradient, K <= 16 weights per output channel.
#define OA_MAXK 16
#extension GL_GOOGLE_include_directive : require
#include "ml/conv/wgrad_small.glsl"
