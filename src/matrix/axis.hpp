#pragma once
// Axis arguments of the matrix ops (internal to the library): negative axes
// count from the end, as in PyTorch.
#include <algorithm>
#include <cstdint>

#include "oa/core/error.hpp"
#include "oa/core/shape.hpp"

namespace oa::detail {

// `axis` made non-negative among `positions` axis positions (the operand's
// rank, or one more where an op inserts an axis: unsqueeze, stack); a 0-d
// operand takes 0 or -1. Throws InvalidArgument naming `op`, the argument
// `name`, the range and the operand `operand` with its shape.
inline std::int64_t normal_axis(const char* op, const Shape& shape, int axis, std::int64_t positions, const char* name = "axis",
                                const char* operand = "x") {
  const std::int64_t n = std::max<std::int64_t>(positions, 1);
  if (axis < -n || axis >= n)
    fail(ErrorKind::InvalidArgument, "{}: {} {} is out of range [{}, {}] for {} {}", op, name, axis, -n, n - 1, operand, shape);
  return axis < 0 ? axis + n : axis;
}

// normal_axis for an op that takes an axis of the operand itself (one to
// index, join or split along), which a 0-d operand does not have.
inline std::int64_t existing_axis(const char* op, const Shape& shape, int axis, const char* name = "axis", const char* operand = "x") {
  if (shape.rank() == 0)
    fail(ErrorKind::InvalidArgument, "{}: {} {} is out of range for {} {}, which has no axis (rank 0)", op, name, axis, operand, shape);
  return normal_axis(op, shape, axis, static_cast<std::int64_t>(shape.rank()), name, operand);
}

}  // namespace oa::detail
