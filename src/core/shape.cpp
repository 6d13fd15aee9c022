#include "oa/core/shape.hpp"

#include "oa/core/error.hpp"

namespace oa {

Shape::Shape(std::initializer_list<std::int64_t> dims) : Shape(std::span<const std::int64_t>(dims.begin(), dims.size())) {}

Shape::Shape(std::span<const std::int64_t> dims) {
  if (dims.size() > kMaxRank) fail(ErrorKind::InvalidArgument, "Shape: rank {} exceeds the maximum of {}", dims.size(), kMaxRank);
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0) fail(ErrorKind::InvalidArgument, "Shape: extent {} of axis {} is negative", dims[i], i);
    dims_[i] = dims[i];
  }
  rank_ = dims.size();
  (void)numel();
}

std::int64_t Shape::dim(int axis) const {
  const int r = static_cast<int>(rank_);
  const int a = axis < 0 ? axis + r : axis;
  if (a < 0 || a >= r) fail(ErrorKind::InvalidArgument, "Shape: axis {} is out of range for {}", axis, to_string());
  return dims_[a];
}

std::int64_t Shape::numel() const {
  std::int64_t n = 1;
  for (std::size_t i = 0; i < rank_; ++i) n = checked_mul(n, dims_[i], "Shape element count");
  return n;
}

std::int64_t Shape::rows() const {
  std::int64_t n = 1;
  for (std::size_t i = 0; i + 1 < rank_; ++i) n *= dims_[i];
  return n;
}

bool Shape::operator==(const Shape& o) const {
  if (rank_ != o.rank_) return false;
  for (std::size_t i = 0; i < rank_; ++i)
    if (dims_[i] != o.dims_[i]) return false;
  return true;
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (std::size_t i = 0; i < rank_; ++i) s += (i ? ", " : "") + std::to_string(dims_[i]);
  return s + "]";
}

std::int64_t checked_mul(std::int64_t a, std::int64_t b, const char* what) {
  std::int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) fail(ErrorKind::InvalidArgument, "{} overflows int64 ({} * {})", what, a, b);
  return r;
}

std::int64_t checked_add(std::int64_t a, std::int64_t b, const char* what) {
  std::int64_t r;
  if (__builtin_add_overflow(a, b, &r)) fail(ErrorKind::InvalidArgument, "{} overflows int64 ({} + {})", what, a, b);
  return r;
}

}  // namespace oa
