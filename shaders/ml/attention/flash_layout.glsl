// The flash kernels' tensor layout (see flash_common.glsl) and constants,
// shared with flash_combine.comp.
#ifndef OA_FLASH_LAYOUT_GLSL
#define OA_FLASH_LAYOUT_GLSL

const float OA_LOG2E = 1.4426950408889634;
const float OA_LN2 = 0.6931471805599453;

// Element offset of row i of head bh in a tensor with S rows of D columns per head.
uint flash_row(uint bh, uint i, uint S, uint D, uint heads) {
  uint b = bh / heads;
  return ((b * S + i) * heads + (bh - b * heads)) * D;
}

#endif
