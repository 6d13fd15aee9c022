#pragma once
// The generic dispatch record. Every op lowers to one or more ComputeDispatch
// values; the engine records them without knowing which operation they serve.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <span>
#include <string_view>
#include <type_traits>

#include "oa/core/error.hpp"
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

// A vector of at most N elements stored inline, so that building a dispatch
// allocates nothing. Past N, push_back and assignment throw Internal.
template <typename T, std::size_t N>
class InlineVector {
 public:
  InlineVector() = default;
  InlineVector(std::initializer_list<T> v) { assign(v.begin(), v.end()); }
  // Copies and moves touch the items held only (the rest stay T{}).
  InlineVector(const InlineVector& o) : size_(o.size_) { std::copy(o.begin(), o.end(), items_.begin()); }
  InlineVector(InlineVector&& o) noexcept : size_(o.size_) { std::move(o.begin(), o.end(), items_.begin()); }
  InlineVector& operator=(const InlineVector& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  InlineVector& operator=(InlineVector&& o) noexcept {
    if (this != &o) {
      clear();
      std::move(o.begin(), o.end(), items_.begin());
      size_ = o.size_;
    }
    return *this;
  }
  InlineVector& operator=(std::initializer_list<T> v) {
    assign(v.begin(), v.end());
    return *this;
  }
  InlineVector& operator=(std::span<const T> v) {
    assign(v.begin(), v.end());
    return *this;
  }
  void push_back(T value) {
    if (size_ == N) fail(ErrorKind::Internal, "a dispatch holds at most {} {}", N, kWhat);
    items_[size_++] = std::move(value);
  }
  void clear() {
    for (std::size_t i = 0; i < size_; ++i) items_[i] = T{};  // drops references at once
    size_ = 0;
  }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](std::size_t i) { return items_[i]; }
  const T& operator[](std::size_t i) const { return items_[i]; }
  T* begin() { return items_.data(); }
  T* end() { return items_.data() + size_; }
  const T* begin() const { return items_.data(); }
  const T* end() const { return items_.data() + size_; }
  const T* data() const { return items_.data(); }
  operator std::span<const T>() const { return {items_.data(), size_}; }

 private:
  static constexpr const char* kWhat = std::is_same_v<T, std::uint32_t> ? "specialization constants" : "bindings";
  template <typename It>
  void assign(It first, It last) {
    clear();
    for (; first != last; ++first) push_back(*first);
  }
  std::array<T, N> items_{};
  std::size_t size_ = 0;
};

// Push constants as raw bytes. The engine prepends its own 32-byte header
// (workgroup base and total grid, see shaders/common/oa.glsl), so an op has
// kMaxPushBytes bytes for its own parameters. They are set from one layout
// struct, oa::push::<kernel> (declared once in shaders/**/<kernel>.push.h for
// both the shader and C++), e.g. push.set(push::matrix_unary{.n = n, .a = 0, .b = 0}).
class PushConstants {
 public:
  static constexpr std::size_t kMaxPushBytes = 96;
  template <typename Layout>
  PushConstants& set(const Layout& layout) {
    static_assert(std::is_trivially_copyable_v<Layout> && sizeof(Layout) % 4 == 0, "push constants are 32-bit members");
    static_assert(sizeof(Layout) <= kMaxPushBytes, "a kernel's push constants fit in kMaxPushBytes");
    std::memcpy(bytes_.data(), &layout, sizeof(Layout));
    size_ = sizeof(Layout);
    return *this;
  }
  std::size_t size() const { return size_; }
  std::span<const std::uint8_t> bytes() const { return {bytes_.data(), size_}; }

 private:
  std::array<std::uint8_t, kMaxPushBytes> bytes_{};
  std::size_t size_ = 0;
};

struct ComputeDispatch {
  std::string_view kernel;                   // embedded shader name, e.g. "matrix/binary"
  static constexpr std::size_t kMaxBindings = 36;  // ml/optim/adamw_step binds 35
  static constexpr std::size_t kMaxSpecialization = 16;
  InlineVector<BufferBinding, kMaxBindings> bindings;              // set 0, binding i
  PushConstants push;                                              // the op's parameters
  InlineVector<std::uint32_t, kMaxSpecialization> specialization;  // constant_id i = specialization[i]
  std::array<std::uint64_t, 3> groups{1, 1, 1};  // total workgroups; the engine splits past device limits
};

}  // namespace oa::runtime
