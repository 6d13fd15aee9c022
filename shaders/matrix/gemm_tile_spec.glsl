// The specialization constants the tiled GEMMs (matrix/gemm.glsl,
// matrix/gemm_coopmat.glsl) share, at the ids the host gives them: the
// workgroup size, the BM x BN tile of C a workgroup computes, its K step BK,
// the operands' layouts (TRANS_A: A_b stored [K, M]; TRANS_B: B_b stored
// [N, K]) and whether A and B are read by quads (VEC_A, VEC_B: see each
// kernel). Ids 4 and 5 are each kernel's own (how a workgroup splits its tile).
#ifndef OA_GEMM_TILE_SPEC_GLSL
#define OA_GEMM_TILE_SPEC_GLSL
layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint BM = 64;
layout(constant_id = 2) const uint BN = 64;
layout(constant_id = 3) const uint BK = 32;
layout(constant_id = 6) const bool TRANS_A = false;
layout(constant_id = 7) const bool TRANS_B = false;
layout(constant_id = 8) const bool VEC_A = false;
layout(constant_id = 9) const bool VEC_B = false;
#endif
