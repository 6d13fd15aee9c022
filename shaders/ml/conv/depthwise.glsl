#ifndef OA_CONV_DEPTHWISE_GLSL
#define OA_CONV_DEPTHWISE_GLSL
// What the depthwise kernels share (depthwise.comp computes the output,
// depthwise_wgrad.comp the weight gradient). One input and one output channel
// per group (groups = C), weight [C, 1, KH, KW]; narrow side [N, C, HN, WN],
// wide side [N, C, HW, WW] (geometry.glsl). Work comes in items: R rows x
// V = 4 consecutive columns of one narrow plane; the wide rows an item reaches
// are read one at a time, each row's window straight from global memory into
// registers (the caches serve the overlap between neighbours). Taps,
// strides, dilations and R are specialization constants, so the loops unroll
// into register arithmetic. The includer defines OA_DW_SRC(i), element i of
// the tensor it reads rows from, before including this file.
#extension GL_EXT_control_flow_attributes : require

layout(constant_id = 0) const uint KH = 3;
layout(constant_id = 1) const uint KW = 3;
layout(constant_id = 2) const uint SH = 1;
layout(constant_id = 3) const uint SW = 1;
layout(constant_id = 4) const uint DH = 1;
layout(constant_id = 5) const uint DW = 1;
layout(constant_id = 6) const uint R = 1;  // narrow rows per item
const uint V = 4u;                         // narrow columns per item
// Register capacities (conv.cpp keeps every problem within them).
const uint MAX_TAPS = 64u, MAX_SPAN = 32u, MAX_R = 4u;
const uint SPAN = (V - 1u) * SW + (KW - 1u) * DW + 1u;     // wide columns of one item
const uint ROWS_IN = (R - 1u) * SH + (KH - 1u) * DH + 1u;  // wide rows of one item

// Item i of a plane with `strips` = ceil(WN / V) strips per row and `groups`
// = ceil(HN / R) row groups: (first narrow column, first narrow row, plane).
uvec3 dw_item(uint i, uint strips, uint groups) {
  const uint strip = i % strips, rows = i / strips;
  const uint plane = rows / groups;
  return uvec3(strip * V, (rows - plane * groups) * R, plane);
}

// Row `iy` of an h x w plane starting at `plane_base` of the tensor that
// OA_DW_SRC reads, columns ix0 + e (e < span), zero outside the plane
// (padding). The wide tensor (h = HW, w = WW, span = SPAN) but for
// depthwise.comp's strided gather.
void dw_window(uint plane_base, int iy, int ix0, uint h, uint w, uint span, out float x[MAX_SPAN]) {
  const bool row_in = iy >= 0 && iy < int(h);
  const uint row = plane_base + uint(max(iy, 0)) * w;
  [[unroll]] for (uint e = 0u; e < span; ++e) {
    const int ix = ix0 + int(e);
    x[e] = row_in && ix >= 0 && ix < int(w) ? OA_DW_SRC(row + uint(ix)) : 0.0;
  }
}

#endif
