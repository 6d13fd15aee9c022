#pragma once
// The dispatches of oa::matrix::cast, for op lowerings that convert a
// temporary between f32 and a 16-bit dtype. Internal to the library.
#include <cstdint>
#include <vector>

#include "oa/matrix/matrix.hpp"
#include "oa/runtime/dispatch.hpp"

namespace oa::detail {

// The dtype code the shaders take (matrix/cast.comp, common/half_io.glsl,
// matrix/binary.comp): 0 f32, 1 f16, 2 bf16, 3 i32, 4 bool (matrix/select.comp).
inline std::uint32_t dtype_code(DType d) {
  switch (d) {
    case DType::F32: return 0u;
    case DType::F16: return 1u;
    case DType::BF16: return 2u;
    case DType::I32: return 3u;
    case DType::Bool: return 4u;
  }
  return 4u;
}

// Appends the dispatches (kernel matrix/cast) converting the first `count`
// elements of x into the first `count` of y; their dtypes (x f32, f16, bf16
// or i32; y f32, f16 or bf16) differ. Narrowing rounds to nearest, ties to
// even; i32 converts through f32 (exact below 2^24 in magnitude).
void cast_dispatches(const Matrix& x, const Matrix& y, std::int64_t count, std::vector<runtime::ComputeDispatch>& dispatches);

}  // namespace oa::detail
