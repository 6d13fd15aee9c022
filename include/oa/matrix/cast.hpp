#pragma once
// Conversion between the floating dtypes (oa::matrix): F32, F16 (IEEE
// 754-2008 binary16) and BF16 (bfloat16, as torch.bfloat16), and I32.
#include "oa/matrix/matrix.hpp"

namespace oa::matrix {

// x converted elementwise to `dtype` (torch.Tensor.to(dtype)), same shape.
// x is F32, F16, BF16 or I32, dtype F32, F16, BF16 or I32. Narrowing (f32 ->
// f16, f32 -> bf16) rounds to nearest, ties to even, with subnormal results
// where the format has them; f16 overflows to ±inf from |x| >= 65520; NaN
// stays NaN (quiet). Widening to f32 is exact; f16 <-> bf16 widens to f32 and
// rounds once. The same rounding as the host conversions of oa/core/dtype.hpp.
// I32 converts to f32 rounding to nearest, ties to even (exact for |x| <=
// 2^24), and to f16 or bf16 through that f32, as torch's integer-to-half casts
// do. A float converts to I32 truncating toward zero (torch's float-to-int
// casts), saturating at INT32_MIN / INT32_MAX (±inf too) with NaN giving 0, as
// CUDA's conversion (cvt.rzi.s32.f32) does; torch leaves those cases
// undefined. Neither an I32 x nor an I32 result takes a gradient, so a cast
// from or to I32 records nothing for autograd.
// A cast to x's own dtype returns x itself (no copy, nothing recorded), as
// PyTorch's Tensor.to does. Otherwise one dispatch per chunk of elements,
// semantic op "oa::matrix::cast" with attribute dtype ("f32", "f16", "bf16",
// "i32").
// Gradient (floating x and dtype): the output gradient cast back to x's dtype.
// Errors (oa::Error InvalidArgument naming the op and the argument; nothing
// recorded): x undefined, x not F32, F16, BF16 or I32, dtype not F32, F16,
// BF16 or I32; element counts past 2^32 - 1.
Matrix cast(const Matrix& x, DType dtype);

}  // namespace oa::matrix
