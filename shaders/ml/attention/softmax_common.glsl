// Shared by the row softmax kernels. A workgroup of 256 invocations owns
// 256 / ROW_LANES rows; the ROW_LANES invocations of one row stride over its
// columns and combine their partial results with a shared-memory tree. The
// first CACHE columns each invocation visits stay in registers, so rows up to
// ROW_LANES * CACHE columns are read from memory once.
#ifndef OA_SOFTMAX_COMMON_GLSL
#define OA_SOFTMAX_COMMON_GLSL

layout(local_size_x = 256) in;
layout(constant_id = 0) const uint ROW_LANES = 256;  // 8, 64 or 256
const uint CACHE = 8u;
const uint ROWS_PER_GROUP = 256u / ROW_LANES;

shared float row_scratch[256];

// Max (op 0) or sum (op 1) of `x` over the ROW_LANES invocations of this row;
// every invocation of the row gets the result. Call from uniform control flow.
float row_reduce(float x, uint op) {
  const uint tid = gl_LocalInvocationID.x;
  const uint lane = tid % ROW_LANES;
  row_scratch[tid] = x;
  for (uint stride = ROW_LANES / 2u; stride > 0u; stride >>= 1u) {
    barrier();
    if (lane < stride) {
      const float other = row_scratch[tid + stride];
      x = op == 0u ? max(x, other) : x + other;
      row_scratch[tid] = x;
    }
  }
  barrier();
  const float result = row_scratch[tid - lane];
  barrier();
  return result;
}

#endif
