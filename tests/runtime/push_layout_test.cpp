// Push-constant layouts (shaders/**/*.push.h) as C++ types: compile-time
// checks that a designated initializer leaving a member out does not compile,
// and that the bytes are laid out as the GLSL block's.
#include <cstdint>
#include <type_traits>

#include "oa_push.hpp"

namespace {

using oa::push::matrix_unary;

template <typename L>
concept FromEveryMember = requires { L{.n = 1u, .a = 0.5f, .b = 2.0f}; };
template <typename L>
concept WithoutB = requires { L{.n = 1u, .a = 0.5f}; };
static_assert(FromEveryMember<matrix_unary>);
static_assert(!WithoutB<matrix_unary>, "a forgotten member is a compile error, not a 0 in the shader");
static_assert(!std::is_default_constructible_v<matrix_unary>);

// A part (the flash kernels' shared problem members) must be given too.
template <typename L>
concept WithoutProblem = requires { L{.has_lse_grad = 1u}; };
static_assert(!WithoutProblem<oa::push::ml_attention_flash_backward_dq>);
static_assert(sizeof(oa::push::ml_attention_flash_backward_dq) == 13 * 4);

// Arrays are 4-byte strided and uvec4 is 16-byte aligned, as in std430.
static_assert(sizeof(oa::push::matrix_select) == 19 * 4);
static_assert(alignof(oa::push::ml_optim_sum_squares) == 16 && sizeof(oa::push::ml_optim_sum_squares) == 32);

}  // namespace
