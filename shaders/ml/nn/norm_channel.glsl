#ifndef OA_NORM_CHANNEL_GLSL
#define OA_NORM_CHANNEL_GLSL
// The weight (and bias) entry of column j of chunk row `row` in the layer_norm
// kernels: j itself, or with GROUPED (group_norm over x [N, C, S] viewed as
// [N * G, C / G * S]) the channel of that element, (row0 + row) % G * (D / S) + j / S
// (row0: the chunk's first row). Needs the push constants D, G, S, row0 and the
// constant GROUPED.
uint norm_channel(uint row, uint j) { return GROUPED ? ((pc.row0 + row) % pc.G) * (pc.D / pc.S) + j / pc.S : j; }
#endif
