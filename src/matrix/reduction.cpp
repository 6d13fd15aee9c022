#include "oa/matrix/reduction.hpp"

#include <algorithm>
#include <climits>
#include <limits>

#include "matrix/lowering.hpp"

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
  if (channels > 0) {
    if (n == 0) {  // nothing broadcast into the target: zeros
      reduce_rows(engine, x.storage(), channels, 0, Sum, 1.0f, y.storage(), ds);
    } else if (channels == 1) {  // a scalar target
      reduce_rows(engine, x.storage(), 1, n, Sum, 1.0f, y.storage(), ds);
    } else if (inner == 1 && outer > 1) {
      reduce_cols(engine, x.storage(), outer, channels, y.storage(), ds);
    } else if (outer == 1) {
      reduce_rows(engine, x.storage(), channels, inner, Sum, 1.0f, y.storage(), ds);
    } else {
      const auto rows = engine.allocate(static_cast<std::uint64_t>(outer * channels) * 4);
      reduce_rows(engine, x.storage(), outer * channels, inner, Sum, 1.0f, rows, ds);
      reduce_cols(engine, rows, outer, channels, y.storage(), ds);
    }
  }
  engine.record(detail::semantic(name, {&x}, {&y}, {{"shape", target.to_vector()}}), ds);
  return y;
}

}  // namespace oa::matrix
