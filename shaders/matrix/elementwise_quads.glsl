// The grid of the same-layout elementwise kernels (matrix/unary.comp,
// unary_backward.comp, binary.comp, binary_backward.comp, accumulate.comp). The output holds
// pc.n elements of DT as 32-bit words (an f32 or i32 word holds one element, a
// 16-bit word two, a bool word four: n, ceil(n / 2) or ceil(n / 4) words), visited as uvec4 quads of 4 words:
// invocation t of workgroup g handles quads q = g * 256 * QUADS + t + 256 k
// (k < QUADS) and loads all of them before it computes any, so QUADS 128-bit
// loads per input are in flight. The quad after the last whole one
// (q = words / 4) handles the 0..3 words left over one by one. Element chunks
// start at multiples of 1024 elements (detail::element_chunks), so every
// binding starts on a 16-byte boundary and the uvec4 views stay aligned.
//
// The including shader declares DT, the push constants pc (with n), the output
// as two views of one binding, y[] (uint) and y4[] (uvec4), and defines
//   uvec4 input_quad(uint k, uint q): words 4q..4q+3 of input k (k < 3; 0 for an unused or broadcast input),
//   uint input_word(uint k, uint w): word w of input k (likewise),
//   uint result(uint w, uvec3 words): output word w from the inputs' words at w.
#ifndef OA_MATRIX_ELEMENTWISE_QUADS_GLSL
#define OA_MATRIX_ELEMENTWISE_QUADS_GLSL
#extension GL_EXT_control_flow_attributes : require
layout(local_size_x = 256) in;
const uint QUADS = 4u;

void main() {
  const uint words = DT == 0u || DT == 3u ? pc.n : DT == 4u ? (pc.n + 3u) / 4u : (pc.n + 1u) / 2u, quads = words / 4u;
  const uint q0 = OA_GROUP_ID.x * (256u * QUADS) + gl_LocalInvocationID.x;
  uvec4 in0[QUADS], in1[QUADS], in2[QUADS];
  [[unroll]] for (uint k = 0u; k < QUADS; ++k) {
    const uint q = q0 + k * 256u;
    if (q < quads) {
      in0[k] = input_quad(0u, q);
      in1[k] = input_quad(1u, q);
      in2[k] = input_quad(2u, q);
    }
  }
  [[unroll]] for (uint k = 0u; k < QUADS; ++k) {
    const uint q = q0 + k * 256u;
    if (q < quads) {
      uvec4 r;
      [[unroll]] for (uint e = 0u; e < 4u; ++e) r[e] = result(4u * q + e, uvec3(in0[k][e], in1[k][e], in2[k][e]));
      y4[q] = r;
    } else if (q == quads) {
      for (uint w = 4u * q; w < words; ++w) y[w] = result(w, uvec3(input_word(0u, w), input_word(1u, w), input_word(2u, w)));
    }
  }
}
#endif
