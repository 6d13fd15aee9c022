#version 450
// ml/attention/flash_forward.glsl over f16 or bf16 tensors (FLASH_DT, constant 8):
// elements widened to f32 as they are read; f32 arithmetic and results.
#extension GL_GOOGLE_include_directive : require
#define OA_FLASH_16 8
#include "ml/attention/flash_forward.glsl"
