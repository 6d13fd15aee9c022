// Shared by every oa kernel. The engine pushes a 32-byte header before each
// op's own push constants: the workgroup base of this piece of a split grid and
// the total grid. Kernels use OA_GROUP_ID / OA_NUM_GROUPS, never
// gl_WorkGroupID / gl_NumWorkGroups, so that grids past the device's
// maxComputeWorkGroupCount work.
#ifndef OA_COMMON_GLSL
#define OA_COMMON_GLSL

// A kernel's own push constants are declared once, in a <kernel>.push.h header
// that C++ includes too (src/runtime/push_fields.hpp): OA_PUSH(name), then
// OA_FIELD(type, name) or OA_ARRAY(type, name, count) per member, then
// OA_PUSH_END. Here they expand to the push-constant block `pc`, after the
// header. Members that several layouts share are a part: a header defines
// OA_PART_FIELDS_<part> and OA_PUSH_PART(part), and a layout lists them with
// OA_PART(part, member); here the part's members stand in the block one by one.
#define OA_PUSH(name) layout(push_constant) uniform Push { uvec4 oa_base; uvec4 oa_grid;
#define OA_FIELD(type, name) type name;
#define OA_ARRAY(type, name, count) type name[count];
#define OA_PUSH_END } pc;
#define OA_PUSH_PART(part)
#define OA_PART(part, member) OA_PART_FIELDS_##part
#define OA_GROUP_ID (gl_WorkGroupID + pc.oa_base.xyz)
#define OA_NUM_GROUPS (pc.oa_grid.xyz)

const float OA_INF = 1.0 / 0.0;

#endif
