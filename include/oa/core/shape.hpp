#pragma once
// Shape: rank 0..8, 64-bit extents, checked element-count arithmetic.
#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace oa {

class Shape {
 public:
  static constexpr std::size_t kMaxRank = 8;

  Shape() = default;  // rank 0: a scalar
  Shape(std::initializer_list<std::int64_t> dims);
  explicit Shape(std::span<const std::int64_t> dims);
  explicit Shape(const std::vector<std::int64_t>& dims) : Shape(std::span<const std::int64_t>(dims)) {}

  std::size_t rank() const { return rank_; }
  std::int64_t operator[](std::size_t axis) const { return dims_[axis]; }
  // Negative axes count from the end (-1 is the last axis). Throws InvalidArgument out of range.
  std::int64_t dim(int axis) const;
  std::span<const std::int64_t> dims() const { return {dims_.data(), rank_}; }
  std::vector<std::int64_t> to_vector() const { return {dims_.begin(), dims_.begin() + rank_}; }
  // Product of the extents (1 for rank 0); throws InvalidArgument on int64 overflow.
  std::int64_t numel() const;
  // Last extent (1 for rank 0) and the product of all others.
  std::int64_t cols() const { return rank_ == 0 ? 1 : dims_[rank_ - 1]; }
  std::int64_t rows() const;

  bool operator==(const Shape& o) const;
  std::string to_string() const;  // "[2, 3, 4]"

 private:
  std::array<std::int64_t, kMaxRank> dims_{};
  std::size_t rank_ = 0;
};

// Checked int64 arithmetic for shape math; throw InvalidArgument naming `what` on overflow.
std::int64_t checked_mul(std::int64_t a, std::int64_t b, const char* what);
std::int64_t checked_add(std::int64_t a, std::int64_t b, const char* what);

}  // namespace oa

template <>
struct fmt::formatter<oa::Shape> : fmt::formatter<std::string> {
  auto format(const oa::Shape& s, format_context& ctx) const {
    return fmt::formatter<std::string>::format(s.to_string(), ctx);
  }
};
