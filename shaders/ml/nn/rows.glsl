#ifndef OA_NN_ROWS_GLSL
#define OA_NN_ROWS_GLSL
// Row layout shared by the nn row kernels (layer norm, log-softmax, cross
// entropy). A workgroup of 256 invocations serves 256 / LANES consecutive rows;
// the LANES invocations of a row each fold a strided share of it (element
// lane, lane + LANES, ...), then a shared-memory tree combines the LANES
// partial results. LANES (a power of two, 1..256) is specialization constant
// 0, chosen from the row length. Include after the push-constant block.
layout(local_size_x = 256) in;
layout(constant_id = 0) const uint LANES = 256;

shared float oa_rows_red[256];

uint rows_lane() { return gl_LocalInvocationID.x % LANES; }
uint rows_row() { return OA_GROUP_ID.x * (256u / LANES) + gl_LocalInvocationID.x / LANES; }

// The sum of v over the LANES invocations of this row; every invocation of
// the workgroup must call it (it synchronises the workgroup).
float rows_sum(float v) {
  const uint t = gl_LocalInvocationID.x, lane = t % LANES;
  oa_rows_red[t] = v;
  barrier();
  for (uint w = LANES / 2u; w > 0u; w >>= 1u) {
    if (lane < w) oa_rows_red[t] += oa_rows_red[t + w];
    barrier();
  }
  const float r = oa_rows_red[t - lane];
  barrier();
  return r;
}

// The maximum of v over the row's invocations; NaN propagates. Same rules as rows_sum.
float rows_max(float v) {
  const uint t = gl_LocalInvocationID.x, lane = t % LANES;
  oa_rows_red[t] = v;
  barrier();
  for (uint w = LANES / 2u; w > 0u; w >>= 1u) {
    if (lane < w) {
      const float o = oa_rows_red[t + w];
      if (isnan(o) || o > oa_rows_red[t]) oa_rows_red[t] = o;
    }
    barrier();
  }
  const float r = oa_rows_red[t - lane];
  barrier();
  return r;
}
#endif
