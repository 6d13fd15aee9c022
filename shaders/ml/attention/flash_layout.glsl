// The flash kernels' tensor and mask layouts (see flash_common.glsl) and
// constants, shared with flash_combine.comp and flash_backward_scores.comp.
#ifndef OA_FLASH_LAYOUT_GLSL
#define OA_FLASH_LAYOUT_GLSL

const float OA_LOG2E = 1.4426950408889634;
const float OA_LN2 = 0.6931471805599453;

// Element offset of row i of head bh in a tensor with S rows of D columns per head.
uint flash_row(uint bh, uint i, uint S, uint D, uint heads) {
  uint b = bh / heads;
  return ((b * S + i) * heads + (bh - b * heads)) * D;
}

// Element offset of mask row (bh, i): the mask is read through strides so
// that one [Sq, Sk] or [B, 1, Sq, Sk] mask serves every head without copies.
uint flash_mask_row(uint bh, uint i, uint mask_heads, uint stride_b, uint stride_h, uint stride_q) {
  const uint b = bh / mask_heads;
  return b * stride_b + (bh - b * mask_heads) * stride_h + i * stride_q;
}

#endif
