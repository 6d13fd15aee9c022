#pragma once
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace oa {

// Element types. The op families compute in F32; I32 holds indices; Bool
// (one byte per element, 0 = false, 1 = true, as torch.bool) holds masks.
// F16 is IEEE 754-2008 binary16 (1 sign, 5 exponent, 10 fraction bits;
// torch.float16) and BF16 is bfloat16 (1 sign, 8 exponent, 7 fraction bits:
// the top half of an f32; torch.bfloat16), both stored two bytes an element.
enum class DType { F32, F16, I32, Bool, BF16 };

constexpr std::size_t size_of(DType d) { return d == DType::F16 || d == DType::BF16 ? 2 : d == DType::Bool ? 1 : 4; }
constexpr std::string_view to_string(DType d) {
  switch (d) {
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::I32: return "i32";
    case DType::Bool: return "bool";
  }
  return "?";
}
// F32, F16 or BF16.
constexpr bool is_floating_point(DType d) { return d == DType::F32 || d == DType::F16 || d == DType::BF16; }

// Host conversions between f32 and the 16-bit formats (bit patterns as
// uint16). f32 -> f16 and f32 -> bf16 round to nearest, ties to even (IEEE
// 754-2008 roundTiesToEven), with correct subnormals; f16 overflows to ±inf
// from |x| >= 65520 (bf16 has f32's range: it overflows only where rounding
// carries past FLT_MAX's binade); NaN stays NaN (a quiet NaN of the same
// sign). The widenings f16 -> f32 and bf16 -> f32 are exact. The same
// arithmetic as the GPU casts (shaders/matrix/cast.comp) and as PyTorch's
// c10::Half and c10::BFloat16.
std::uint16_t f16_from_float(float x);
float float_from_f16(std::uint16_t h);
std::uint16_t bf16_from_float(float x);
float float_from_bf16(std::uint16_t b);

}  // namespace oa
