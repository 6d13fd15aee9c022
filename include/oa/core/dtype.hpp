#pragma once
#include <cstddef>
#include <string_view>

namespace oa {

// Element types. The seed families compute in F32; I32 holds indices; Bool
// (one byte per element, 0 = false, 1 = true, as torch.bool) holds masks.
enum class DType { F32, F16, I32, Bool };

constexpr std::size_t size_of(DType d) { return d == DType::F16 ? 2 : d == DType::Bool ? 1 : 4; }
constexpr std::string_view to_string(DType d) {
  return d == DType::F32 ? "f32" : d == DType::F16 ? "f16" : d == DType::Bool ? "bool" : "i32";
}

}  // namespace oa
