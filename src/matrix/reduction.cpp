#include "oa/matrix/reduction.hpp"

#include <algorithm>
#include <climits>
#include <limits>

#include "matrix/lowering.hpp"
#include "oa/matrix/autograd.hpp"

namespace oa::matrix {

namespace {

using runtime::Access;
using runtime::ComputeDispatch;
using runtime::Storage;

enum ReduceOp : std::uint32_t { Sum = 0, Max = 1, ArgMax = 2 };

const bool kRegistered = [] {
  for (const char* n : {"oa::matrix::sum", "oa::matrix::mean", "oa::matrix::max", "oa::matrix::argmax"})
    register_contract({n, 1, 1, {{"keepdim", AttributeType::Bool}}});
  for (const char* n : {"oa::matrix::sum_all", "oa::matrix::mean_all", "oa::matrix::max_all"}) register_contract({n, 1, 1, {}});
  register_contract({"oa::matrix::sum_to", 1, 1, {{"shape", AttributeType::Ints}}});
  return true;
}();

std::int64_t range_words(const Engine& engine) {
  return static_cast<std::int64_t>(engine.device().max_storage_buffer_range / 4) - 64;
}
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
std::uint32_t u32(std::int64_t v) { return static_cast<std::uint32_t>(v); }

// Appends the passes of matrix/reduce that reduce `rows` rows of `length` f32
// items of `in` into `out` ([rows] values, or int32 indices for ArgMax). Rows
// longer than one segment give [rows, parts] partial results that the next
// pass reduces again. Callers check that max(rows, rows * length) fits a u32.
void reduce_rows(const Engine& engine, std::shared_ptr<Storage> in, std::int64_t rows, std::int64_t length, ReduceOp op,
                 float scale, const std::shared_ptr<Storage>& out, std::vector<ComputeDispatch>& ds) {
  bool pairs = false;  // `in` holds (value, index) pairs of an earlier ArgMax pass
  for (;;) {
    const std::uint32_t threads = length > 512 ? 256 : 32;  // invocations per segment
    const std::int64_t chunk = threads == 256 ? 4096 : 512;  // items per segment
    const std::int64_t parts = std::max<std::int64_t>(1, ceil_div(length, chunk));
    const bool last = parts == 1;
    const std::int64_t w_in = pairs ? 2 : 1, w_out = op == ArgMax && !last ? 2 : 1;
    const auto dst = last ? out : engine.allocate(static_cast<std::uint64_t>(rows * parts * w_out) * 4);
    const std::int64_t segments = rows * parts;
    const std::int64_t per = std::max<std::int64_t>(1, range_words(engine) / (std::max<std::int64_t>(1, std::min(chunk, length)) * w_in));
    for (std::int64_t s0 = 0; s0 < segments; s0 += per) {
      const std::int64_t q = std::min(per, segments - s0), sl = s0 + q - 1;
      const std::int64_t r0 = s0 / parts, p0 = s0 % parts;
      const std::int64_t first = r0 * length + p0 * chunk, end = sl / parts * length + std::min(length, (sl % parts + 1) * chunk);
      const auto src = detail::element_window(in, first * w_in, (end - first) * w_in, Access::Read);
      const auto dstw = detail::element_window(dst, s0 * w_out, q * w_out, Access::Write);
      ComputeDispatch d;
      d.kernel = "matrix/reduce";
      d.specialization = {op, threads, pairs, last ? (op == ArgMax ? 2u : 0u) : (op == ArgMax ? 1u : 0u)};
      d.bindings = {src.binding, dstw.binding};
      d.push.u32(u32(q)).u32(u32(r0)).u32(u32(p0)).u32(u32(length)).u32(u32(parts)).u32(u32(chunk));
      d.push.u32(src.offset).u32(dstw.offset).f32(last ? scale : 1.0f);
      d.groups = {detail::groups_for(q, 256 / threads), 1, 1};
      ds.push_back(std::move(d));
    }
    if (last) return;
    in = dst;
    pairs = op == ArgMax;
    length = parts;
  }
}

// Appends the passes of matrix/reduce_cols that sum X [rows, cols] over its rows into `out` [cols].
void reduce_cols(const Engine& engine, std::shared_ptr<Storage> in, std::int64_t rows, std::int64_t cols,
                 const std::shared_ptr<Storage>& out, std::vector<ComputeDispatch>& ds) {
  constexpr std::int64_t kBlock = 256;  // rows per workgroup
  for (;;) {
    const std::int64_t blocks = ceil_div(rows, kBlock);
    const bool last = blocks == 1;
    const auto dst = last ? out : engine.allocate(static_cast<std::uint64_t>(blocks * cols) * 4);
    const std::int64_t per = std::max<std::int64_t>(1, range_words(engine) / (kBlock * cols));
    for (std::int64_t g0 = 0; g0 < blocks; g0 += per) {
      const std::int64_t q = std::min(per, blocks - g0), first = g0 * kBlock, n = std::min(rows, (g0 + q) * kBlock) - first;
      const auto src = detail::element_window(in, first * cols, n * cols, Access::Read);
      const auto dstw = detail::element_window(dst, g0 * cols, q * cols, Access::Write);
      ComputeDispatch d;
      d.kernel = "matrix/reduce_cols";
      d.bindings = {src.binding, dstw.binding};
      d.push.u32(u32(n)).u32(u32(cols)).u32(src.offset).u32(dstw.offset);
      d.groups = {detail::groups_for(cols, 32), static_cast<std::uint64_t>(q), 1};
      ds.push_back(std::move(d));
    }
    if (last) return;
    in = dst;
    rows = blocks;
  }
}

void check_indexable(const Matrix& x, std::int64_t rows, const char* name) {
  detail::shader_u32(std::max(rows, x.numel()), "element count", name);
}

// Records gx = scale * gy broadcast to `shape` (viewed as [outer, channels,
// inner], gy indexed by the channel) as the backward of `name`.
Matrix expand(const Matrix& gy, const Shape& shape, std::int64_t channels, std::int64_t inner, float scale, const char* name) {
  Matrix gx = detail::allocate(gy.engine(), shape);
  std::vector<ComputeDispatch> ds;
  for (auto c : detail::element_chunks(gy.engine(), gx.numel())) {
    const auto off = static_cast<std::uint64_t>(c.begin) * 4, bytes = static_cast<std::uint64_t>(c.count) * 4;
    ComputeDispatch d;
    d.kernel = "matrix/expand";
    d.bindings = {runtime::BufferBinding::read(gy.storage()), runtime::BufferBinding::write(gx.storage(), off, bytes)};
    d.push.u32(u32(c.count)).u32(detail::shader_u32(c.begin, "element index", name));
    d.push.u32(detail::shader_u32(channels, "row count", name)).u32(detail::shader_u32(inner, "row length", name)).f32(scale);
    d.groups = {detail::groups_for(c.count, 1024), 1, 1};
    ds.push_back(std::move(d));
  }
  gy.engine().record(detail::semantic(name, {&gy}, {&gx}, {}, true), ds);
  return gx;
}

// Records the backward of max over `rows` rows of `length` elements of x with
// maxima y (torch.amax: ties share the row's gradient evenly): a mask of the
// maxima, its per-row count (a tree reduction), then mask * gy / count.
Matrix max_backward(const Matrix& gy, const Matrix& x, const Matrix& y, std::int64_t rows, std::int64_t length, const char* name) {
  const Engine& engine = x.engine();
  Matrix gx = detail::allocate(engine, x.shape());
  const auto count = engine.allocate(static_cast<std::uint64_t>(std::max<std::int64_t>(rows, 1)) * 4);
  const auto chunks = detail::element_chunks(engine, gx.numel());
  std::vector<ComputeDispatch> ds;
  auto pass = [&](std::uint32_t mode) {
    for (auto c : chunks) {
      const auto off = static_cast<std::uint64_t>(c.begin) * 4, bytes = static_cast<std::uint64_t>(c.count) * 4;
      ComputeDispatch d;
      d.kernel = "matrix/max_backward";
      d.specialization = {mode};
      if (mode == 0)
        d.bindings = {runtime::BufferBinding::read(x.storage(), off, bytes), runtime::BufferBinding::read(y.storage()),
                      runtime::BufferBinding::write(gx.storage(), off, bytes)};
      else
        d.bindings = {runtime::BufferBinding::read(gy.storage()), runtime::BufferBinding::read(count),
                      runtime::BufferBinding::read_write(gx.storage(), off, bytes)};
      d.push.u32(u32(c.count)).u32(detail::shader_u32(c.begin, "element index", name));
      d.push.u32(detail::shader_u32(rows, "row count", name)).u32(detail::shader_u32(length, "row length", name));
      d.groups = {detail::groups_for(c.count, 1024), 1, 1};
      ds.push_back(std::move(d));
    }
  };
  pass(0);
  if (rows > 0) reduce_rows(engine, gx.storage(), rows, length, Sum, 1.0f, count, ds);
  pass(1);
  engine.record(detail::semantic(name, {&gy, &x, &y}, {&gx}, {}, true), ds);
  return gx;
}

// Attaches the backward of a sum (scaled by `scale`) or max of x's `rows` rows
// of `length` elements, giving y.
void record_reduction(const Matrix& x, const Matrix& y, ReduceOp op, std::int64_t rows, std::int64_t length, float scale,
                      const char* name) {
  if (op == ArgMax || !autograd::needs_record({&x})) return;
  const Shape shape = x.shape();
  if (op == Sum) {
    autograd::record(name, {x}, {y}, [=](const std::vector<Matrix>& gy, const std::vector<bool>&) {
      return std::vector<Matrix>{expand(gy[0], shape, rows, length, scale, name)};
    });
    return;
  }
  autograd::record(name, {x}, {y},
                   [=, sx = autograd::SavedValue(x), sy = autograd::SavedValue(y)](const std::vector<Matrix>& gy,
                                                                                     const std::vector<bool>&) {
                     return std::vector<Matrix>{max_backward(gy[0], sx.get(), sy.get(), rows, length, name)};
                   });
}

Matrix last_axis(const Matrix& x, bool keepdim, ReduceOp op, bool mean, const char* name) {
  detail::require_f32(x, name, "x");
  const Shape& s = x.shape();
  if (s.rank() == 0) fail(ErrorKind::InvalidArgument, "{}: x {} must have rank >= 1 (use the *_all form for a scalar)", name, s);
  const std::int64_t length = s.dim(-1);
  if (op != Sum && length == 0) fail(ErrorKind::InvalidArgument, "{}: cannot reduce the empty last axis of x {}", name, s);
  if (op == ArgMax && length > INT32_MAX)
    fail(ErrorKind::InvalidArgument, "{}: last axis of x {} is too long for int32 indices", name, s);
  std::vector<std::int64_t> dims(s.dims().begin(), s.dims().end() - 1);
  const std::int64_t rows = Shape(dims).numel();
  check_indexable(x, rows, name);
  if (keepdim) dims.push_back(1);
  Matrix y = detail::allocate(x.engine(), Shape(dims), op == ArgMax ? DType::I32 : DType::F32);
  std::vector<ComputeDispatch> ds;
  const float scale = !mean ? 1.0f : length > 0 ? 1.0f / static_cast<float>(length) : std::numeric_limits<float>::quiet_NaN();
  if (rows > 0) reduce_rows(x.engine(), x.storage(), rows, length, op, scale, y.storage(), ds);
  x.engine().record(detail::semantic(name, {&x}, {&y}, {{"keepdim", keepdim}}), ds);
  record_reduction(x, y, op, rows, length, scale, name);
  return y;
}

Matrix all(const Matrix& x, ReduceOp op, bool mean, const char* name) {
  detail::require_f32(x, name, "x");
  const std::int64_t n = x.numel();
  if (op != Sum && n == 0) fail(ErrorKind::InvalidArgument, "{}: cannot reduce the empty x {}", name, x.shape());
  check_indexable(x, 1, name);
  Matrix y = detail::allocate(x.engine(), Shape{});
  std::vector<ComputeDispatch> ds;
  const float scale = !mean ? 1.0f : n > 0 ? 1.0f / static_cast<float>(n) : std::numeric_limits<float>::quiet_NaN();
  reduce_rows(x.engine(), x.storage(), 1, n, op, scale, y.storage(), ds);
  x.engine().record(detail::semantic(name, {&x}, {&y}), ds);
  record_reduction(x, y, op, 1, n, scale, name);
  return y;
}

}  // namespace

Matrix sum(const Matrix& x, bool keepdim) { return last_axis(x, keepdim, Sum, false, "oa::matrix::sum"); }
Matrix mean(const Matrix& x, bool keepdim) { return last_axis(x, keepdim, Sum, true, "oa::matrix::mean"); }
Matrix max(const Matrix& x, bool keepdim) { return last_axis(x, keepdim, Max, false, "oa::matrix::max"); }
Matrix argmax(const Matrix& x, bool keepdim) { return last_axis(x, keepdim, ArgMax, false, "oa::matrix::argmax"); }

Matrix sum_all(const Matrix& x) { return all(x, Sum, false, "oa::matrix::sum_all"); }
Matrix mean_all(const Matrix& x) { return all(x, Sum, true, "oa::matrix::mean_all"); }
Matrix max_all(const Matrix& x) { return all(x, Max, false, "oa::matrix::max_all"); }

Matrix sum_to(const Matrix& x, const Shape& target) {
  const char* name = "oa::matrix::sum_to";
  detail::require_f32(x, name, "x");
  const Shape& s = x.shape();
  std::int64_t channels = s.numel(), inner = 1;
  if (!(s == target) && !detail::broadcast_layout(s, target, channels, inner))
    fail(ErrorKind::InvalidArgument,
         "{}: x {} does not broadcast from target {} (the target must be x's shape, a scalar, or span one contiguous run of "
         "x's axes)",
         name, s, target);
  const std::int64_t n = s.numel(), outer = channels * inner > 0 ? n / (channels * inner) : 0;
  check_indexable(x, channels, name);
  Matrix y = detail::allocate(x.engine(), target);
  const Engine& engine = x.engine();
  std::vector<ComputeDispatch> ds;
  detail::sum_channels(engine, x.storage(), outer, channels, inner, y.storage(), ds);
  engine.record(detail::semantic(name, {&x}, {&y}, {{"shape", target.to_vector()}}), ds);
  if (autograd::needs_record({&x})) {
    // The gradient of a sum over broadcast copies is gy broadcast back.
    autograd::record(name, {x}, {y}, [name, s, channels, inner](const std::vector<Matrix>& gy, const std::vector<bool>&) {
      return std::vector<Matrix>{gy[0].shape() == s ? gy[0] : expand(gy[0], s, channels, inner, 1.0f, name)};
    });
  }
  return y;
}

}  // namespace oa::matrix

namespace oa::detail {

void reduce_rows(const Engine& engine, std::shared_ptr<runtime::Storage> in, std::int64_t rows, std::int64_t length, RowReduction op,
                 float scale, const std::shared_ptr<runtime::Storage>& out, std::vector<runtime::ComputeDispatch>& dispatches) {
  static_assert(static_cast<std::uint32_t>(RowReduction::Sum) == matrix::Sum && static_cast<std::uint32_t>(RowReduction::Max) == matrix::Max &&
                static_cast<std::uint32_t>(RowReduction::ArgMax) == matrix::ArgMax);
  matrix::reduce_rows(engine, std::move(in), rows, length, static_cast<matrix::ReduceOp>(op), scale, out, dispatches);
}

void sum_channels(const Engine& engine, const std::shared_ptr<runtime::Storage>& in, std::int64_t outer, std::int64_t channels,
                  std::int64_t inner, const std::shared_ptr<runtime::Storage>& out, std::vector<runtime::ComputeDispatch>& ds) {
  using matrix::reduce_cols;
  using matrix::reduce_rows;
  using matrix::Sum;
  if (channels == 0) return;
  if (outer == 0 || inner == 0) {  // nothing sums into a channel: zeros
    reduce_rows(engine, in, channels, 0, Sum, 1.0f, out, ds);
  } else if (channels == 1) {
    reduce_rows(engine, in, 1, outer * inner, Sum, 1.0f, out, ds);
  } else if (inner == 1 && outer > 1) {
    reduce_cols(engine, in, outer, channels, out, ds);
  } else if (outer == 1) {
    reduce_rows(engine, in, channels, inner, Sum, 1.0f, out, ds);
  } else {
    const auto rows = engine.allocate(static_cast<std::uint64_t>(outer * channels) * 4);
    reduce_rows(engine, in, outer * channels, inner, Sum, 1.0f, rows, ds);
    reduce_cols(engine, rows, outer, channels, out, ds);
  }
}

}  // namespace oa::detail
