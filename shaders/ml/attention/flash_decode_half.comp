#version 450
// ml/attention/flash_decode.glsl over f16 or bf16 tensors (FLASH_DT, constant 6):
// elements widened to f32 as they are read; f32 arithmetic and results.
#extension GL_GOOGLE_include_directive : require
#define OA_FLASH_16 6
#include "ml/attention/flash_decode.glsl"
