#include "oa/core/dtype.hpp"

#include <bit>

namespace oa {

namespace {
using uint = std::uint32_t;
#include "../../shaders/common/half.glsl"
}  // namespace

std::uint16_t f16_from_float(float x) { return static_cast<std::uint16_t>(oa_f16_from_f32(std::bit_cast<uint>(x))); }
float float_from_f16(std::uint16_t h) { return std::bit_cast<float>(oa_f32_from_f16(h)); }
std::uint16_t bf16_from_float(float x) { return static_cast<std::uint16_t>(oa_bf16_from_f32(std::bit_cast<uint>(x))); }
float float_from_bf16(std::uint16_t b) { return std::bit_cast<float>(oa_f32_from_bf16(b)); }

}  // namespace oa
