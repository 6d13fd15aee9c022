#version 450
// The f32 build of ml/attention/flash_forward.glsl.
#extension GL_GOOGLE_include_directive : require
#include "ml/attention/flash_forward.glsl"
