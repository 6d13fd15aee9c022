// Operand access of matrix/binary.comp and matrix/binary_backward.comp: word w
// of the output holds elements i = w * (1 or 2 for 16-bit DT) on; an operand
// of the output's shape is read by word (matrix/elementwise_quads.glsl), a broadcast
// one by channel ((base + i) / inner) % channels. Include after the push
// constants and DT.
#ifndef OA_MATRIX_BINARY_OPERANDS_GLSL
#define OA_MATRIX_BINARY_OPERANDS_GLSL
#include "common/half_io.glsl"

uint channel(uint i) { return ((pc.base + i) / pc.inner) % pc.channels; }

// The elements of the output word whose first element is i, in operand x: from
// x's word `word` at the output's shape, by channel when broadcast.
#define OPERAND(x, broadcast, word, i)                                                                   \
  ((broadcast) ? vec2(OA_LOAD_ANY(x, channel(i), DT), OA_LOAD_ANY(x, channel(min(i + 1u, pc.n - 1u)), DT)) \
               : oa_word_values(word, DT))

#endif
