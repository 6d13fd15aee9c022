#version 450
// The scalar epilogue of a loss reduction: out = sums[0] / sums[1] (MEAN: the
// loss total over the number of counted rows; 0 / 0 gives NaN, as PyTorch)
// or sums[0] (sum).
#extension GL_GOOGLE_include_directive : require
#include "common/oa.glsl"
layout(local_size_x = 1) in;
layout(constant_id = 0) const bool MEAN = true;
layout(std430, binding = 0) readonly buffer Sums { float sums[]; };
layout(std430, binding = 1) writeonly buffer Out { float out_[]; };

void main() { out_[0] = MEAN ? sums[0] / sums[1] : sums[0]; }
