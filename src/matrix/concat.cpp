// concat and chunk: validation, the column-block copy lowering, and their
// autograd rules (each one's backward is the other's lowering).
#include "oa/matrix/concat.hpp"

#include <algorithm>

#include "matrix/lowering.hpp"
#include "oa/matrix/autograd.hpp"

namespace oa::matrix {

namespace {

using runtime::Access;
using runtime::ComputeDispatch;

constexpr const char* kConcat = "oa::matrix::concat";
constexpr const char* kChunk = "oa::matrix::chunk";

const detail::ContractRegistration kConcatContract{{kConcat, -1, 1, {{"axis", AttributeType::Int}}}};
const detail::ContractRegistration kChunkContract{
    {kChunk, 1, -1, {{"parts", AttributeType::Int}, {"axis", AttributeType::Int}}}};

// The non-negative form of `axis` for rank `rank`; throws naming `op`.
std::size_t normal_axis(int axis, const Shape& shape, const char* op, const char* arg) {
  const int r = static_cast<int>(shape.rank());
  const int a = axis < 0 ? axis + r : axis;
  if (r == 0 || a < 0 || a >= r) fail(ErrorKind::InvalidArgument, "{}: axis {} is out of range for {} {}", op, axis, arg, shape);
  return static_cast<std::size_t>(a);
}

// Product of the extents before `axis` and after it.
std::int64_t outer_of(const Shape& s, std::size_t axis) {
  std::int64_t n = 1;
  for (std::size_t i = 0; i < axis; ++i) n *= s[i];
  return n;
}
std::int64_t inner_of(const Shape& s, std::size_t axis) {
  std::int64_t n = 1;
  for (std::size_t i = axis + 1; i < s.rank(); ++i) n *= s[i];
  return n;
}

// One side of a block copy: rows of `stride` words, the block starting at column `column`.
struct Side {
  const Matrix* matrix;
  std::int64_t stride;
  std::int64_t column;
};

// Appends the dispatches copying `rows` x `cols` from `src` to `dst`, split
// into row ranges whose bindings fit the device's maxStorageBufferRange.
void lower_block(const Engine& engine, std::int64_t rows, std::int64_t cols, Side src, Side dst, const char* op,
                 std::vector<ComputeDispatch>& out) {
  if (rows == 0 || cols == 0) return;
  const std::int64_t step = detail::window_batch(engine, {{src.stride, cols}, {dst.stride, cols}});
  for (std::int64_t r0 = 0; r0 < rows; r0 += step) {
    const std::int64_t n_rows = std::min(step, rows - r0);
    const auto window = [&](const Side& s, Access access) {
      return detail::element_window(s.matrix->storage(), r0 * s.stride + s.column, (n_rows - 1) * s.stride + cols, access);
    };
    const detail::ElementWindow in = window(src, Access::Read), to = window(dst, Access::Write);
    ComputeDispatch d;
    d.kernel = "matrix/copy_block";
    d.bindings = {in.binding, to.binding};
    const std::int64_t n = n_rows * cols;
    d.push.u32(detail::shader_u32(n, "elements per dispatch", op))
        .u32(detail::shader_u32(cols, "block width", op))
        .u32(detail::shader_u32(src.stride, "row stride", op))
        .u32(in.offset)
        .u32(detail::shader_u32(dst.stride, "row stride", op))
        .u32(to.offset);
    d.groups = {detail::groups_for(n, 1024), 1, 1};
    out.push_back(std::move(d));
  }
}

// Records y = the concatenation of xs along `axis` (validated) as one semantic
// op named `name`: the forward of concat, or the backward of chunk.
Matrix concat_lowering(const std::vector<Matrix>& xs, std::size_t axis, const char* name, std::vector<OpAttribute> attributes,
                       bool backward) {
  const Engine& engine = xs.front().engine();
  std::vector<std::int64_t> dims = xs.front().shape().to_vector();
  dims[axis] = 0;
  for (const Matrix& x : xs) dims[axis] += x.shape()[axis];
  Matrix y = detail::allocate(engine, Shape(dims));
  const std::int64_t outer = outer_of(y.shape(), axis), inner = inner_of(y.shape(), axis), y_cols = dims[axis] * inner;
  std::vector<ComputeDispatch> ds;
  std::int64_t column = 0;
  SemanticOp op = detail::semantic(name, {}, {&y}, std::move(attributes), backward);
  for (const Matrix& x : xs) {
    const std::int64_t cols = x.shape()[axis] * inner;
    lower_block(engine, outer, cols, {&x, cols, 0}, {&y, y_cols, column}, name, ds);
    column += cols;
    op.inputs.push_back(x.shape());
  }
  engine.record(std::move(op), ds);
  return y;
}

// Records the slices of x along `axis` with the given extents (summing to
// x's) as one semantic op named `name`: the forward of chunk, or the backward
// of concat. Slice i is left undefined (and not computed) when `wanted` is
// given and wanted[i] is false.
std::vector<Matrix> split_lowering(const Matrix& x, std::size_t axis, const std::vector<std::int64_t>& extents,
                                   const char* name, std::vector<OpAttribute> attributes, bool backward,
                                   const std::vector<bool>* wanted = nullptr) {
  const Engine& engine = x.engine();
  const std::int64_t outer = outer_of(x.shape(), axis), inner = inner_of(x.shape(), axis), x_cols = x.shape()[axis] * inner;
  std::vector<Matrix> parts;
  std::vector<ComputeDispatch> ds;
  SemanticOp op = detail::semantic(name, {&x}, {}, std::move(attributes), backward);
  std::int64_t column = 0;
  for (std::size_t i = 0; i < extents.size(); ++i) {
    const std::int64_t cols = extents[i] * inner;
    parts.emplace_back();
    if (!wanted || (*wanted)[i]) {
      std::vector<std::int64_t> dims = x.shape().to_vector();
      dims[axis] = extents[i];
      parts.back() = detail::allocate(engine, Shape(dims));
      lower_block(engine, outer, cols, {&x, x_cols, column}, {&parts.back(), cols, 0}, name, ds);
      op.outputs.push_back(parts.back().shape());
    }
    column += cols;
  }
  engine.record(std::move(op), ds);
  return parts;
}

}  // namespace

Matrix concat(const std::vector<Matrix>& xs, int axis) {
  if (xs.empty()) fail(ErrorKind::InvalidArgument, "{}: xs is empty (at least one operand is required)", kConcat);
  for (const Matrix& x : xs) detail::require_f32(x, kConcat, "xs");
  const Shape& first = xs.front().shape();
  const std::size_t a = normal_axis(axis, first, kConcat, "xs[0]");
  std::int64_t total = 0;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const Shape& s = xs[i].shape();
    detail::require_same_engine(xs.front(), xs[i], kConcat);
    bool same = s.rank() == first.rank();
    for (std::size_t d = 0; same && d < s.rank(); ++d) same = d == a || s[d] == first[d];
    if (!same)
      fail(ErrorKind::InvalidArgument, "{}: xs[{}] {} does not match xs[0] {} outside axis {}", kConcat, i, s, first, axis);
    total = checked_add(total, s[a], "concat extent");
  }
  std::vector<std::int64_t> dims = first.to_vector();
  dims[a] = total;
  detail::shader_u32(Shape(dims).numel(), "output elements", kConcat);
  Matrix y = concat_lowering(xs, a, kConcat, {{"axis", static_cast<std::int64_t>(a)}}, false);
  if (autograd::needs_record(xs)) {
    std::vector<std::int64_t> extents;
    for (const Matrix& x : xs) extents.push_back(x.shape()[a]);
    autograd::record(kConcat, xs, {y}, [a, extents](const std::vector<Matrix>& gy, const std::vector<bool>& needs) {
      return split_lowering(gy[0], a, extents, kConcat, {{"axis", static_cast<std::int64_t>(a)}}, true, &needs);
    });
  }
  return y;
}

std::vector<Matrix> chunk(const Matrix& x, std::int64_t parts, int axis) {
  detail::require_f32(x, kChunk, "x");
  const std::size_t a = normal_axis(axis, x.shape(), kChunk, "x");
  if (parts < 1) fail(ErrorKind::InvalidArgument, "{}: parts {} must be >= 1 (x {})", kChunk, parts, x.shape());
  if (parts > std::max<std::int64_t>(x.shape()[a], 1))
    fail(ErrorKind::InvalidArgument, "{}: parts {} exceeds extent {} of axis {} of x {} (1 for an empty axis)", kChunk, parts,
         x.shape()[a], axis, x.shape());
  if (x.shape()[a] % parts != 0)
    fail(ErrorKind::InvalidArgument, "{}: extent {} of axis {} of x {} is not divisible by parts {}", kChunk, x.shape()[a], axis,
         x.shape(), parts);
  detail::shader_u32(x.numel(), "elements", kChunk);
  std::vector<OpAttribute> attributes{{"parts", parts}, {"axis", static_cast<std::int64_t>(a)}};
  std::vector<Matrix> ys =
      split_lowering(x, a, std::vector<std::int64_t>(static_cast<std::size_t>(parts), x.shape()[a] / parts), kChunk, attributes, false);
  autograd::record(kChunk, {x}, ys, [a, attributes](const std::vector<Matrix>& gy, const std::vector<bool>&) {
    return std::vector<Matrix>{concat_lowering(gy, a, kChunk, attributes, true)};
  });
  return ys;
}

}  // namespace oa::matrix
