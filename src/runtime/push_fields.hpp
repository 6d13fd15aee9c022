#pragma once
// The C++ side of the push-constant layouts declared in shaders/**/*.push.h
// (shaders/common/oa.glsl expands the same macros into the GLSL block). The
// generated oa_push.hpp includes every layout inside namespace oa::push, so
// shaders/matrix/unary.push.h's OA_PUSH(matrix_unary) is oa::push::matrix_unary,
// filled with designated initializers and pushed by PushConstants::set.
#include <array>
#include <cstdint>
#include <type_traits>

namespace oa::push {

// One member of a layout. It has no default constructor, so a designated
// initializer that leaves a member out does not compile (a shader would
// otherwise read 0 there).
template <typename T>
struct alignas(std::is_same_v<T, std::array<std::uint32_t, 4>> ? 16 : alignof(T)) Field {
  constexpr Field(T v) : value(v) {}  // NOLINT: implicit, so `.n = count` converts
  T value;
};

}  // namespace oa::push

// GLSL member types as C++ types: 32-bit scalars, and uvec4 aligned to 16
// bytes as in the std430 push-constant block.
#define OA_PUSH_TYPE_uint std::uint32_t
#define OA_PUSH_TYPE_int std::int32_t
#define OA_PUSH_TYPE_float float
#define OA_PUSH_TYPE_uvec4 std::array<std::uint32_t, 4>

#define OA_PUSH(name) struct name {
#define OA_FIELD(type, name) ::oa::push::Field<OA_PUSH_TYPE_##type> name;
#define OA_ARRAY(type, name, count) ::oa::push::Field<std::array<OA_PUSH_TYPE_##type, count>> name;
#define OA_PUSH_END };
// A part (see shaders/common/oa.glsl) is a struct of its own here, a member
// of each layout that lists it; its bytes are the same as its members one by one.
#define OA_PUSH_PART(part) struct part { OA_PART_FIELDS_##part };
#define OA_PART(part, member) ::oa::push::part member;
