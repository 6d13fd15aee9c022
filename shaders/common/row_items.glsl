#ifndef OA_ROW_ITEMS_GLSL
#define OA_ROW_ITEMS_GLSL
// The register-cached row layout of the row kernels that keep their share of
// a row in registers: layer_norm and layer_norm_backward (through
// ml/nn/norm_row.glsl), softmax_forward, log_softmax and cross_entropy
// (through common/row_slots.glsl). A row is read as items of WIDTH
// consecutive columns: WIDTH (constant 1) is 4, one vec4 load, where the row
// length is a multiple of 4 (and the kernel's other operands allow it), else
// 1. Invocation `lane` of a row (common/rows.glsl) takes the row's items
// lane + k * LANES, so the lanes of a row read consecutive memory, and keeps
// its first CACHE (constant 2) in registers. detail::append_row_items
// (src/matrix/lowering.hpp) sets both. Include after common/rows.glsl.
layout(constant_id = 1) const uint WIDTH = 1;
layout(constant_id = 2) const uint CACHE = 4;

// The row's item that is this invocation's item k.
uint row_item(uint k) { return rows_lane() + k * LANES; }
#endif
