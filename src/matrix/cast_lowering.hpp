#pragma once
// The dispatches of oa::matrix::cast, for op lowerings that convert a
// temporary between f32 and a 16-bit dtype. Internal to the library.
#include <cstdint>
#include <vector>

#include "oa/matrix/matrix.hpp"
#include "oa/runtime/dispatch.hpp"

namespace oa::detail {

// The dtype code the shaders take (matrix/cast.comp, common/half_io.glsl):
// 0 f32, 1 f16, 2 bf16.
inline std::uint32_t dtype_code(DType d) { return d == DType::F32 ? 0u : d == DType::F16 ? 1u : 2u; }

// Appends the dispatches (kernel matrix/cast) converting the first `count`
// elements of x into the first `count` of y; their dtypes (f32, f16, bf16)
// differ. Narrowing rounds to nearest, ties to even.
void cast_dispatches(const Matrix& x, const Matrix& y, std::int64_t count, std::vector<runtime::ComputeDispatch>& dispatches);

}  // namespace oa::detail
