#ifndef OA_ROWS_GLSL
#define OA_ROWS_GLSL
// Row layout shared by the row kernels (softmax, log-softmax, cross entropy,
// layer norm). A workgroup of 256 invocations serves 256 / LANES consecutive
// rows; the LANES invocations of a row each fold a strided share of it
// (element lane, lane + LANES, ...), then combine their partial results
// (common/reduce.glsl). LANES (a power of two, 1..256) is specialization
// constant 0, chosen by detail::lower_rows (src/matrix/lowering.hpp).
// Include after the push-constant block.
#include "common/reduce.glsl"
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint LANES = 256;
const uint ROWS_PER_GROUP = 256u / LANES;

uint rows_lane() { return gl_LocalInvocationID.x % LANES; }
uint rows_row() { return OA_GROUP_ID.x * ROWS_PER_GROUP + gl_LocalInvocationID.x / LANES; }

// The sum / maximum (NaN propagating) of v over the LANES invocations of this
// row, returned to each of them. Every invocation of the workgroup must call
// them (they may synchronise the workgroup).
float rows_sum(float v) { return oa_segment_sum(v, 1u, LANES); }
float rows_max(float v) { return oa_segment_max(v, 1u, LANES); }
#endif
