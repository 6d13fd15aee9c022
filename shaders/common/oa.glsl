// Shared by every oa kernel. The engine pushes a 32-byte header before each
// op's own push constants: the workgroup base of this piece of a split grid and
// the total grid. Kernels use OA_GROUP_ID / OA_NUM_GROUPS, never
// gl_WorkGroupID / gl_NumWorkGroups, so that grids past the device's
// maxComputeWorkGroupCount work.
#ifndef OA_COMMON_GLSL
#define OA_COMMON_GLSL

#define OA_PUSH_BEGIN layout(push_constant) uniform Push { uvec4 oa_base; uvec4 oa_grid;
#define OA_PUSH_END } pc;
#define OA_GROUP_ID (gl_WorkGroupID + pc.oa_base.xyz)
#define OA_NUM_GROUPS (pc.oa_grid.xyz)

const float OA_INF = 1.0 / 0.0;

#endif
