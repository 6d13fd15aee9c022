#pragma once
// The generic dispatch record. Every op lowers to one or more ComputeDispatch
// values; the engine records them without knowing which operation they serve.
#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>
#include <type_traits>
#include <vector>

#include "oa/runtime/storage.hpp"

namespace oa::runtime {

enum class Access { Read, Write, ReadWrite };

// A range of a Storage bound at binding index = position in ComputeDispatch::bindings.
// size_bytes = 0 binds from offset_bytes to the end of the storage.
struct BufferBinding {
  std::shared_ptr<Storage> storage;
  Access access = Access::Read;
  std::uint64_t offset_bytes = 0;
  std::uint64_t size_bytes = 0;

  static BufferBinding read(std::shared_ptr<Storage> s, std::uint64_t off = 0, std::uint64_t size = 0) { return {std::move(s), Access::Read, off, size}; }
  static BufferBinding write(std::shared_ptr<Storage> s, std::uint64_t off = 0, std::uint64_t size = 0) { return {std::move(s), Access::Write, off, size}; }
  static BufferBinding read_write(std::shared_ptr<Storage> s, std::uint64_t off = 0, std::uint64_t size = 0) { return {std::move(s), Access::ReadWrite, off, size}; }
};

// Push constants as raw bytes. The engine prepends its own 32-byte header
// (workgroup base and total grid, see shaders/common/oa.glsl), so an op has
// kMaxPushBytes bytes for its own parameters.
class PushConstants {
 public:
  static constexpr std::size_t kMaxPushBytes = 96;
  template <typename T>
  PushConstants& add(T value) {
    static_assert(std::is_trivially_copyable_v<T> && sizeof(T) == 4, "push constants are 32-bit scalars");
    const auto at = bytes_.size();
    bytes_.resize(at + 4);
    std::memcpy(bytes_.data() + at, &value, 4);
    return *this;
  }
  PushConstants& u32(std::uint32_t v) { return add(v); }
  PushConstants& i32(std::int32_t v) { return add(v); }
  PushConstants& f32(float v) { return add(v); }
  const std::vector<std::uint8_t>& bytes() const { return bytes_; }

 private:
  std::vector<std::uint8_t> bytes_;
};

struct ComputeDispatch {
  std::string_view kernel;                   // embedded shader name, e.g. "matrix/binary"
  std::vector<BufferBinding> bindings;       // set 0, binding i
  PushConstants push;                        // the op's parameters
  std::vector<std::uint32_t> specialization; // constant_id i = specialization[i]
  std::array<std::uint64_t, 3> groups{1, 1, 1};  // total workgroups; the engine splits past device limits
};

}  // namespace oa::runtime
