#pragma once
// The generic dispatch record. Every op lowers to one or more ComputeDispatch
// values; the engine records them without knowing which operation they serve.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <new>
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
// allocates nothing. Past N, push_back and assignment throw Internal. Only
// the items held are ever constructed, so a large N costs no time.
template <typename T, std::size_t N>
class InlineVector {
 public:
  InlineVector() = default;
  InlineVector(std::initializer_list<T> v) { assign(v.begin(), v.end()); }
  InlineVector(const InlineVector& o) { assign(o.begin(), o.end()); }
  InlineVector(InlineVector&& o) noexcept { take(o); }
  ~InlineVector() { clear(); }
  InlineVector& operator=(const InlineVector& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  InlineVector& operator=(InlineVector&& o) noexcept {
    if (this != &o) {
      clear();
      take(o);
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
    std::construct_at(slot(size_), std::move(value));
    ++size_;
  }
  void clear() {  // drops references at once
    std::destroy(begin(), end());
    size_ = 0;
  }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](std::size_t i) { return begin()[i]; }
  const T& operator[](std::size_t i) const { return begin()[i]; }
  T* begin() { return std::launder(slot(0)); }
  T* end() { return begin() + size_; }
  const T* begin() const { return std::launder(reinterpret_cast<const T*>(storage_)); }
  const T* end() const { return begin() + size_; }
  const T* data() const { return begin(); }
  operator std::span<const T>() const { return {begin(), size_}; }

 private:
  static constexpr const char* kWhat = std::is_same_v<T, std::uint32_t> ? "specialization constants" : "bindings";
  T* slot(std::size_t i) { return reinterpret_cast<T*>(storage_) + i; }
  template <typename It>
  void assign(It first, It last) {
    clear();
    for (; first != last; ++first) push_back(*first);
  }
  // Moves o's items here (this is empty) and empties o.
  void take(InlineVector& o) noexcept {
    for (T& item : o) std::construct_at(slot(size_++), std::move(item));
    o.clear();
  }
  alignas(T) std::byte storage_[N * sizeof(T)];
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
  // At most maxPushDescriptors on NVIDIA and lavapipe (32), so that every
  // dispatch can push its bindings; ml/optim/adamw_step binds 31.
  static constexpr std::size_t kMaxBindings = 32;
  static constexpr std::size_t kMaxSpecialization = 16;
  InlineVector<BufferBinding, kMaxBindings> bindings;              // set 0, binding i
  PushConstants push;                                              // the op's parameters
  InlineVector<std::uint32_t, kMaxSpecialization> specialization;  // constant_id i = specialization[i]
  std::array<std::uint64_t, 3> groups{1, 1, 1};  // total workgroups; the engine splits past device limits
};

}  // namespace oa::runtime
