#pragma once
#include <cstddef>
#include <string_view>

namespace oa {

// Element types. The seed families compute in F32; I32 holds indices.
enum class DType { F32, F16, I32 };

constexpr std::size_t size_of(DType d) { return d == DType::F16 ? 2 : 4; }
constexpr std::string_view to_string(DType d) {
  return d == DType::F32 ? "f32" : d == DType::F16 ? "f16" : "i32";
}

}  // namespace oa
