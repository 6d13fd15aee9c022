#include "oa/matrix/reduction.hpp"

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>

#include <fmt/ranges.h>

#include "matrix/axis.hpp"
#include "matrix/float_lowering.hpp"
#include "matrix/op_def.hpp"
#include "oa/matrix/cast.hpp"
#include "oa/matrix/elementwise.hpp"
#include "oa/matrix/indexing.hpp"
#include "oa/matrix/layout.hpp"

namespace oa::matrix {

namespace {

using namespace detail::op_def;

// The OP codes of matrix/reduce; ArgMin runs ArgMax over -x and IArgMin
// IArgMax over ~x (their NEGATE). ISum, IMax, IMin, IArgMax and IProd reduce
// int32 items exactly (ISum and IProd wrapping modulo 2^32).
enum ReduceOp : std::uint32_t {
  Sum = 0,
  Max = 1,
  ArgMax = 2,
  Min = 3,
  Prod = 4,
  ArgMin = 5,
  ISum = 6,
  IMax = 7,
  IMin = 8,
  IArgMax = 9,
  IArgMin = 10,
  IProd = 11
};
bool is_arg(ReduceOp op) { return op == ArgMax || op == ArgMin || op == IArgMax || op == IArgMin; }
// The kernel's OP for `op`: argmin runs as argmax over negated items.
ReduceOp kernel_op(ReduceOp op) { return op == ArgMin ? ArgMax : op == IArgMin ? IArgMax : op; }

std::int64_t range_words(const Engine& engine) {
  return static_cast<std::int64_t>(engine.device().max_storage_buffer_range / 4) - 64;
}

// Appends the passes of matrix/reduce that reduce `rows` rows of `length`
// items of `in` (f32, or int32 for the I ops) into `out` ([rows] values, or
// int32 indices for the arg ops). Rows longer than one segment give [rows,
// parts] partial results that the next pass reduces again. `root`: the final
// values are square roots. `bytes`: `in` holds bool bytes, read as int32 0 and
// 1 (for ISum, IMax, IMin). Callers check that max(rows, rows * length) fits a u32.
void reduce_rows(const Engine& engine, std::shared_ptr<Storage> in, std::int64_t rows, std::int64_t length, ReduceOp op,
                 float scale, const std::shared_ptr<Storage>& out, std::vector<ComputeDispatch>& ds, bool root = false,
                 bool bytes = false) {
  bool pairs = false;  // `in` holds (value, index) pairs of an earlier arg pass
  for (;;) {
    const std::uint32_t threads = length > 512 ? 256 : 32;  // invocations per segment
    const std::int64_t chunk = threads == 256 ? 4096 : 512;  // items per segment
    const std::int64_t parts = std::max<std::int64_t>(1, ceil_div(length, chunk));
    const bool last = parts == 1;
    const std::int64_t w_in = pairs ? 2 : 1, w_out = is_arg(op) && !last ? 2 : 1;
    const auto dst = last ? out : engine.allocate(static_cast<std::uint64_t>(rows * parts * w_out) * 4);
    const std::int64_t segments = rows * parts;
    const std::int64_t per = std::max<std::int64_t>(1, range_words(engine) / (std::max<std::int64_t>(1, std::min(chunk, length)) * w_in));
    for (std::int64_t s0 = 0; s0 < segments; s0 += per) {
      const std::int64_t q = std::min(per, segments - s0), sl = s0 + q - 1;
      const std::int64_t r0 = s0 / parts, p0 = s0 % parts;
      const std::int64_t first = r0 * length + p0 * chunk, end = sl / parts * length + std::min(length, (sl % parts + 1) * chunk);
      // Bytes: the words that hold them, in_off counting bytes.
      const auto src = bytes ? detail::element_window(in, first / 4, ceil_div(end, 4) - first / 4, Access::Read)
                             : detail::element_window(in, first * w_in, (end - first) * w_in, Access::Read);
      const auto dstw = detail::element_window(dst, s0 * w_out, q * w_out, Access::Write);
      ComputeDispatch d;
      d.kernel = kernels::matrix_reduce;
      d.specialization = {kernel_op(op), threads, pairs, is_arg(op) ? (last ? 2u : 1u) : 0u, kernel_op(op) != op && !pairs,
                          root && last, bytes};
      d.bindings = {src.binding, dstw.binding};
      d.push.set(push::matrix_reduce{.nseg = u32(q),
                                     .r0 = u32(r0),
                                     .p0 = u32(p0),
                                     .L = u32(length),
                                     .P = u32(parts),
                                     .chunk = u32(chunk),
                                     .in_off = bytes ? src.offset * 4 + u32(first % 4) : src.offset,
                                     .out_off = dstw.offset,
                                     .scale = last ? scale : 1.0f});
      d.groups = {detail::groups_for(q, 256 / threads), 1, 1};
      ds.push_back(std::move(d));
    }
    if (last) return;
    in = dst;
    pairs = is_arg(op);
    bytes = false;
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
      d.kernel = kernels::matrix_reduce_cols;
      d.bindings = {src.binding, dstw.binding};
      d.push.set(push::matrix_reduce_cols{.R = u32(n), .C = u32(cols), .x_off = src.offset, .y_off = dstw.offset});
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

// Sums times this for mean (NaN for no elements, as torch), else 1.
float scale_of(bool mean, std::int64_t length) {
  return !mean ? 1.0f : length > 0 ? 1.0f / static_cast<float>(length) : std::numeric_limits<float>::quiet_NaN();
}

// ── Reductions over any set of axes ─────────────────────────────────────────

enum class Kind { Sum, Mean, Max, Min, Prod, Var, Std, LogSumExp, Norm };

struct DimsAttributes {
  std::vector<std::int64_t> dims;  // sorted, non-negative, distinct
  bool keepdim = false;
  static constexpr auto fields = std::tuple{field("dims", &DimsAttributes::dims), field("keepdim", &DimsAttributes::keepdim)};
};
struct VarAttributes {
  std::vector<std::int64_t> dims;
  float correction = 1;
  bool keepdim = false;
  static constexpr auto fields = std::tuple{field("dims", &VarAttributes::dims), field("correction", &VarAttributes::correction),
                                            field("keepdim", &VarAttributes::keepdim)};
};
struct NormAttributes {
  float p = 2;
  std::vector<std::int64_t> dims;
  bool keepdim = false;
  static constexpr auto fields = std::tuple{field("p", &NormAttributes::p), field("dims", &NormAttributes::dims),
                                            field("keepdim", &NormAttributes::keepdim)};
};
float correction_of(const VarAttributes& a) { return a.correction; }
float correction_of(const auto&) { return 0.0f; }
float order_of(const NormAttributes& a) { return a.p; }
float order_of(const auto&) { return 0.0f; }

constexpr float kInf = std::numeric_limits<float>::infinity();

// x's shape seen by a reduction over `dims`: neighbouring axes that are all
// reduced or all kept merge into one run (extents of 1 dropped); `rows` kept
// elements by `length` reduced ones. When a kept run follows a reduced one,
// `moves`: the merged x (`extents`) must be permuted by `order` (kept runs
// first) before its rows are contiguous.
struct Layout {
  std::int64_t rows = 1, length = 1;
  std::vector<std::int64_t> extents, order;
  bool moves = false;
  Layout(const Shape& s, const std::vector<std::int64_t>& dims) {
    std::vector<bool> reduced_run;
    for (std::size_t d = 0; d < s.rank(); ++d) {
      const bool reduced = std::binary_search(dims.begin(), dims.end(), static_cast<std::int64_t>(d));
      (reduced ? length : rows) *= s[d];
      if (s[d] == 1) continue;
      if (!reduced_run.empty() && reduced_run.back() == reduced) {
        extents.back() *= s[d];
      } else {
        moves = moves || (!reduced && !reduced_run.empty() && reduced_run.back());
        extents.push_back(s[d]);
        reduced_run.push_back(reduced);
      }
    }
    for (int pass = 0; pass < 2; ++pass)
      for (std::size_t r = 0; r < extents.size(); ++r)
        if (reduced_run[r] == (pass == 1)) order.push_back(static_cast<std::int64_t>(r));
  }
};

// The reduced shape: dims dropped, or kept as extents of 1.
Shape reduced_shape(const Shape& s, const std::vector<std::int64_t>& dims, bool keepdim) {
  std::vector<std::int64_t> out;
  for (std::size_t d = 0; d < s.rank(); ++d) {
    if (!std::binary_search(dims.begin(), dims.end(), static_cast<std::int64_t>(d))) out.push_back(s[d]);
    else if (keepdim) out.push_back(1);
  }
  return Shape(out);
}

// A fresh f32 buffer of `words` values (at least one, so that empty rows bind something).
std::shared_ptr<Storage> scratch(const Engine& engine, std::int64_t words) {
  return engine.allocate(static_cast<std::uint64_t>(std::max<std::int64_t>(words, 1)) * 4);
}

// Appends y = f(x, r[row]) of matrix/reduce_map over `count` elements (see
// its MODE): element g belongs to row (g / inner) % rows.
void map_rows(const Engine& engine, std::uint32_t mode, const std::shared_ptr<Storage>& x, const std::shared_ptr<Storage>& r,
              const std::shared_ptr<Storage>& y, std::int64_t count, std::int64_t rows, std::int64_t inner, const char* name,
              std::vector<ComputeDispatch>& ds) {
  for (auto c : detail::element_chunks(engine, count)) {
    const auto off = static_cast<std::uint64_t>(c.begin) * 4, bytes = static_cast<std::uint64_t>(c.count) * 4;
    ComputeDispatch d;
    d.kernel = kernels::matrix_reduce_map;
    d.specialization = {mode};
    d.bindings = {runtime::BufferBinding::read(x, off, bytes), runtime::BufferBinding::read(r),
                  runtime::BufferBinding::write(y, off, bytes)};
    d.push.set(push::matrix_reduce_map{.n = u32(c.count),
                                       .base = detail::shader_u32(c.begin, "element index", name),
                                       .channels = detail::shader_u32(std::max<std::int64_t>(rows, 1), "row count", name),
                                       .inner = detail::shader_u32(inner, "row length", name)});
    d.groups = {detail::groups_for(c.count, 1024), 1, 1};
    ds.push_back(std::move(d));
  }
}

// x (of `dtype`) as the contiguous [v.rows, v.length] rows of layout v: x
// itself, or a permuted copy in x's dtype (appended to ds) when v moves.
std::shared_ptr<Storage> rows_of(const Engine& engine, const char* name, DType dtype, const std::shared_ptr<Storage>& x, const Layout& v,
                                 std::vector<ComputeDispatch>& ds) {
  if (!v.moves || v.rows * v.length == 0) return x;
  auto src = scratch(engine, ceil_div(v.rows * v.length * static_cast<std::int64_t>(size_of(dtype)), 4));
  detail::permute_into(name, dtype, x, Shape(v.extents), src, v.order, ds);
  return src;
}

// Appends the passes that reduce x (shape s) over `dims` into out (the
// reduced values in row-major order of the kept axes) for reduction `kind`.
void reduce_axes(const Engine& engine, const char* name, Kind kind, const std::shared_ptr<Storage>& x, const Shape& s,
                 const std::vector<std::int64_t>& dims, float correction, float p, const std::shared_ptr<Storage>& out,
                 std::vector<ComputeDispatch>& ds) {
  const Layout v(s, dims);
  const std::int64_t rows = v.rows, n = v.length;
  if (rows == 0) return;
  const std::shared_ptr<Storage> src = rows_of(engine, name, DType::F32, x, v, ds);
  switch (kind) {
    case Kind::Sum:
    case Kind::Mean: reduce_rows(engine, src, rows, n, Sum, scale_of(kind == Kind::Mean, n), out, ds); return;
    case Kind::Max: reduce_rows(engine, src, rows, n, Max, 1.0f, out, ds); return;
    case Kind::Min: reduce_rows(engine, src, rows, n, Min, 1.0f, out, ds); return;
    case Kind::Prod: reduce_rows(engine, src, rows, n, Prod, 1.0f, out, ds); return;
    case Kind::Var:
    case Kind::Std: {
      // The corrected two-pass algorithm (Chan, Golub & LeVeque 1983): with
      // d = x - mean, var = (sum d^2 - (sum d)^2 / n) / dof, where the second
      // term takes out what the rounding of the mean adds to the first (a mean
      // of 1e6 rounded by 0.4 would add 0.16 to every variance).
      const auto m = scratch(engine, rows), dev = scratch(engine, rows * n);
      reduce_rows(engine, src, rows, n, Sum, scale_of(true, n), m, ds);
      map_rows(engine, 0, src, m, dev, rows * n, rows, n, name, ds);
      const float dof = std::max(0.0f, static_cast<float>(n) - correction);
      if (dof == 0.0f) {  // inf or NaN, as PyTorch
        reduce_rows(engine, dev, rows, n, Sum, 1.0f / dof, out, ds, kind == Kind::Std);
        return;
      }
      const auto squares = scratch(engine, rows), sums = scratch(engine, rows);
      reduce_rows(engine, dev, rows, n, Sum, 1.0f / dof, squares, ds);
      map_rows(engine, 5, src, m, dev, rows * n, rows, n, name, ds);
      reduce_rows(engine, dev, rows, n, Sum, 1.0f / std::sqrt(static_cast<float>(n) * dof), sums, ds);
      map_rows(engine, kind == Kind::Std ? 7 : 6, squares, sums, out, rows, rows, 1, name, ds);
      return;
    }
    case Kind::LogSumExp: {
      const auto m = scratch(engine, rows), e = scratch(engine, rows * n), total = scratch(engine, rows);
      reduce_rows(engine, src, rows, n, Max, 1.0f, m, ds);
      map_rows(engine, 1, src, m, e, rows * n, rows, n, name, ds);
      reduce_rows(engine, e, rows, n, Sum, 1.0f, total, ds);
      map_rows(engine, 2, total, m, out, rows, rows, 1, name, ds);
      return;
    }
    case Kind::Norm: {
      const auto t = scratch(engine, rows * n);
      map_rows(engine, p == 2.0f ? 3 : 4, src, src, t, rows * n, rows, n, name, ds);
      reduce_rows(engine, t, rows, n, p == kInf ? Max : Sum, 1.0f, out, ds, p == 2.0f);
      return;
    }
  }
}

// Appends gx = scale * gy broadcast to gx's shape (viewed as [outer, channels,
// inner], gy indexed by the channel).
void expand_channels(const Matrix& gy, const Matrix& gx, std::int64_t channels, std::int64_t inner, float scale, const char* name,
            std::vector<ComputeDispatch>& ds) {
  for (auto c : detail::element_chunks(gy.engine(), gx.numel())) {
    const auto [off, bytes] = detail::chunk_window(gx.dtype(), c);
    ComputeDispatch d;
    d.kernel = kernels::matrix_expand;
    d.specialization = {detail::dtype_code(gx.dtype())};
    d.bindings = {runtime::BufferBinding::read(gy.storage()), runtime::BufferBinding::write(gx.storage(), off, bytes)};
    d.push.set(push::matrix_expand{.n = u32(c.count),
                                   .base = detail::shader_u32(c.begin, "element index", name),
                                   .channels = detail::shader_u32(channels, "row count", name),
                                   .inner = detail::shader_u32(inner, "row length", name),
                                   .scale = scale});
    d.groups = {detail::groups_for(size_of(gx.dtype()) == 2 ? (c.count + 1) / 2 : c.count, 1024), 1, 1};
    ds.push_back(std::move(d));
  }
}

// Appends the backward of max or min over `rows` contiguous rows of `length`
// elements of x with extremes y into gx (torch.amax: ties share the row's
// gradient evenly): a mask of the extremes, its per-row count (a tree
// reduction), then mask * gy / count.
void extreme_backward(const Matrix& gy, const Matrix& x, const Matrix& y, const Matrix& gx, std::int64_t rows, std::int64_t length,
                      const char* name, std::vector<ComputeDispatch>& ds) {
  const Engine& engine = x.engine();
  const auto count = scratch(engine, rows);
  const auto chunks = detail::element_chunks(engine, gx.numel());
  auto pass = [&](std::uint32_t mode) {
    for (auto c : chunks) {
      const auto off = static_cast<std::uint64_t>(c.begin) * 4, bytes = static_cast<std::uint64_t>(c.count) * 4;
      ComputeDispatch d;
      d.kernel = kernels::matrix_max_backward;
      d.specialization = {mode};
      if (mode == 0)
        d.bindings = {runtime::BufferBinding::read(x.storage(), off, bytes), runtime::BufferBinding::read(y.storage()),
                      runtime::BufferBinding::write(gx.storage(), off, bytes)};
      else
        d.bindings = {runtime::BufferBinding::read(gy.storage()), runtime::BufferBinding::read(count),
                      runtime::BufferBinding::read_write(gx.storage(), off, bytes)};
      d.push.set(push::matrix_max_backward{.n = u32(c.count),
                                           .base = detail::shader_u32(c.begin, "element index", name),
                                           .channels = detail::shader_u32(rows, "row count", name),
                                           .inner = detail::shader_u32(length, "row length", name)});
      d.groups = {detail::groups_for(c.count, 1024), 1, 1};
      ds.push_back(std::move(d));
    }
  };
  pass(0);
  if (rows > 0) reduce_rows(engine, gx.storage(), rows, length, Sum, 1.0f, count, ds);
  pass(1);
}

std::vector<int> as_ints(const std::vector<std::int64_t>& dims) { return {dims.begin(), dims.end()}; }

// An f32 mask of `mask` (1 where it holds) of shape s.
Matrix ones_where(const Matrix& mask, const Shape& s, const Engine& engine) {
  return masked_fill(Matrix::zeros(s, engine), mask, 1.0f);
}

// The backward of `kind`. Where a kernel serves the pattern (sum and mean
// with the kept axes one contiguous run, max and min over contiguous rows),
// one recorded "<name> backward"; otherwise public ops, recorded under
// their own names.
template <class A>
Matrix reduction_backward(Kind kind, const BackwardCall<A>& c) {
  const Matrix& gy = c.grad_outputs[0];
  const bool linear = kind == Kind::Sum || kind == Kind::Mean;
  if (gy.dtype() != DType::F32 && !linear) {  // 16-bit: the f32 rule on widened operands, rounded once to x's dtype
    const auto f32 = [kind](const BackwardCall<A>& w) { return std::vector<Matrix>{reduction_backward(kind, w)}; };
    return detail::widened_backward<A>(c, f32)[0];
  }
  const Shape& s = c.input_shapes[0];
  const std::vector<std::int64_t>& dims = c.attributes.dims;
  const Shape kept = reduced_shape(s, dims, true);
  const Layout v(s, dims);
  const Engine& engine = gy.engine();
  std::int64_t channels = 1, inner = 1;
  if (linear && detail::broadcast_layout(s, kept, channels, inner)) {
    Matrix gx = detail::allocate(engine, s, gy.dtype());
    std::vector<ComputeDispatch> ds;
    expand_channels(gy, gx, channels, inner, scale_of(kind == Kind::Mean, v.length), c.name, ds);
    c.record(ds, {&gy}, {&gx});
    return gx;
  }
  if ((kind == Kind::Max || kind == Kind::Min) && !v.moves) {
    Matrix gx = detail::allocate(engine, s);
    std::vector<ComputeDispatch> ds;
    extreme_backward(gy, c.inputs[0], c.outputs[0], gx, v.rows, v.length, c.name, ds);
    c.record(ds, {&gy, &c.inputs[0], &c.outputs[0]}, {&gx});
    return gx;
  }
  const Matrix g = gy.reshape(kept.to_vector());
  const Matrix& x = c.inputs[0];
  const Matrix y = c.outputs[0].defined() ? c.outputs[0].reshape(kept.to_vector()) : Matrix();
  const std::vector<int> axes = as_ints(dims);
  const float dof = std::max(0.0f, static_cast<float>(v.length) - correction_of(c.attributes));
  switch (kind) {
    case Kind::Sum: return expand(g, s.to_vector());
    case Kind::Mean: return expand(mul(g, scale_of(true, v.length)), s.to_vector());
    case Kind::Max:
    case Kind::Min: {
      const Matrix hits = ones_where(eq(x, y), s, engine);
      return mul(hits, div(g, sum(hits, axes, true)));
    }
    case Kind::Prod: {
      // Zeros are replaced by 1: p1 is the product of the nonzero elements.
      const Matrix zero = eq(x, 0.0f), x1 = masked_fill(x, zero, 1.0f);
      const Matrix p1 = prod(x1, axes, true), zeros = sum(ones_where(zero, s, engine), axes, true);
      const Matrix at_zero = masked_fill(p1, ne(zeros, 1.0f), 0.0f), elsewhere = masked_fill(div(p1, x1), ne(zeros, 0.0f), 0.0f);
      return mul(g, where(zero, at_zero, elsewhere));
    }
    case Kind::Var: return mul(sub(x, mean(x, axes, true)), mul(g, 2.0f / dof));
    case Kind::Std: return mul(sub(x, mean(x, axes, true)), div(g, mul(y, dof)));
    case Kind::LogSumExp: return mul(g, exp(sub(x, y)));
    case Kind::Norm: {
      const float p = order_of(c.attributes);
      if (p == 2.0f) return mul(x, masked_fill(div(g, y), eq(y, 0.0f), 0.0f));
      if (p == 1.0f) return mul(sign(x), g);
      const Matrix hits = ones_where(eq(abs(x), y), s, engine);
      return mul(mul(sign(x), hits), div(g, sum(hits, axes, true)));
    }
  }
  return Matrix();
}

// Appends the passes of int32 reduction `op` (ISum, IMax, IMin, IProd,
// IArgMax, IArgMin) of x (i32, or bool read as 0 and 1) along layout v into `out`.
template <class A>
void reduce_ints(const OpCall<A>& c, const Layout& v, ReduceOp op, const std::shared_ptr<Storage>& out, std::vector<ComputeDispatch>& ds) {
  const Matrix& x = c.inputs[0];
  if (v.rows == 0) return;
  reduce_rows(c.engine, rows_of(c.engine, c.name, x.dtype(), x.storage(), v, ds), v.rows, v.length, op, 1.0f, out, ds, false,
              x.dtype() == DType::Bool);
}

// Whether reduction `kind` of a bool x counts its elements as int32 0 and 1
// (sum, prod: an int32 result, as torch's int64) rather than giving bool.
bool bool_as_int(Kind kind) { return kind == Kind::Sum || kind == Kind::Prod; }

// The lowerings of reduction `kind`: f32, f16 and bf16 (float_lowerings);
// for sum and prod, int32 and bool (exact int32 sums and products, wrapping
// modulo 2^32); for max and min, int32 (exact) and bool (any and all: int32 0
// and 1 per row, then the mask of the nonzero).
template <class A>
std::vector<std::pair<DType, detail::Lowering<A>>> reduction_lowerings(Kind kind) {
  auto lowerings = detail::float_lowerings<A>([kind](const OpCall<A>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
    const Matrix& x = c.inputs[0];
    reduce_axes(c.engine, c.name, kind, x.storage(), x.shape(), c.attributes.dims, correction_of(c.attributes),
                order_of(c.attributes), out[0].storage(), ds);
  });
  if (kind != Kind::Sum && kind != Kind::Prod && kind != Kind::Max && kind != Kind::Min) return lowerings;
  const ReduceOp op = kind == Kind::Sum ? ISum : kind == Kind::Prod ? IProd : kind == Kind::Max ? IMax : IMin;
  const detail::Lowering<A> ints = [op](const OpCall<A>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
    reduce_ints(c, Layout(c.inputs[0].shape(), c.attributes.dims), op, out[0].storage(), ds);
  };
  lowerings.emplace_back(DType::I32, ints);
  if (bool_as_int(kind)) lowerings.emplace_back(DType::Bool, ints);
  else
    lowerings.emplace_back(DType::Bool, [op](const OpCall<A>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
      const Layout v(c.inputs[0].shape(), c.attributes.dims);
      const Matrix extremes = detail::allocate(c.engine, out[0].shape(), DType::I32);
      reduce_ints(c, v, op, extremes.storage(), ds);
      detail::nonzero_into(extremes, out[0], ds);
    });
  return lowerings;
}

// What each backward reads: max, min, std, logsumexp and norm their input
// and output; prod, var their input; sum and mean nothing.
Saves reduction_saves(Kind kind) {
  const bool input = kind != Kind::Sum && kind != Kind::Mean;
  const bool output = kind == Kind::Max || kind == Kind::Min || kind == Kind::Std || kind == Kind::LogSumExp || kind == Kind::Norm;
  return Saves{{input}, {output}};
}

// A reduction over any axes (attributes A: dims and keepdim, with var's
// correction or norm's order p).
template <class A>
Op<A> reduction_op(const char* name, Kind kind) {
  return Op<A>({.name = name,
                .inputs = {"x"},
                .infer = [kind](const OpCall<A>& c) {
                  const Matrix& x = c.inputs[0];
                  const Shape& s = x.shape();
                  const Layout v(s, c.attributes.dims);
                  const bool no_identity = kind == Kind::Max || kind == Kind::Min || (kind == Kind::Norm && order_of(c.attributes) == kInf);
                  if (no_identity && v.length == 0 && v.rows > 0)
                    fail(ErrorKind::InvalidArgument, "{}: cannot reduce x {} over the empty axes [{}]", c.name, s, fmt::join(c.attributes.dims, ", "));
                  if constexpr (std::is_same_v<A, NormAttributes>) {
                    const float p = c.attributes.p;
                    if (p != 1.0f && p != 2.0f && p != kInf)
                      fail(ErrorKind::InvalidArgument, "{}: p {} is not supported for x {} (1, 2 or inf)", c.name, p, s);
                  }
                  check_indexable(x, v.rows, c.name);
                  const DType dtype = bool_as_int(kind) && x.dtype() == DType::Bool ? DType::I32 : x.dtype();  // bool counts as int32
                  return std::vector<OutputSpec>{{reduced_shape(s, c.attributes.dims, c.attributes.keepdim), dtype}};
                },
                .lower = reduction_lowerings<A>(kind),
                .saves = [kind](const OpCall<A>&, const std::vector<bool>&) { return reduction_saves(kind); },
                .backward = [kind](const BackwardCall<A>& c) { return std::vector<Matrix>{reduction_backward(kind, c)}; }});
}

const auto kSum = reduction_op<DimsAttributes>("oa::matrix::sum", Kind::Sum);
const auto kMean = reduction_op<DimsAttributes>("oa::matrix::mean", Kind::Mean);
const auto kMax = reduction_op<DimsAttributes>("oa::matrix::max", Kind::Max);
const auto kMin = reduction_op<DimsAttributes>("oa::matrix::min", Kind::Min);
const auto kProd = reduction_op<DimsAttributes>("oa::matrix::prod", Kind::Prod);
const auto kVar = reduction_op<VarAttributes>("oa::matrix::var", Kind::Var);
const auto kStd = reduction_op<VarAttributes>("oa::matrix::std", Kind::Std);
const auto kLogSumExp = reduction_op<DimsAttributes>("oa::matrix::logsumexp", Kind::LogSumExp);
const auto kNorm = reduction_op<NormAttributes>("oa::matrix::norm", Kind::Norm);

// `dim` as sorted non-negative axes of x (every axis when empty); throws
// InvalidArgument naming `op` for an undefined x, an axis out of range or
// one listed twice. A rank-0 x takes 0 or -1, which reduce nothing.
std::vector<std::int64_t> reduced_axes(const char* op, const Matrix& x, const std::vector<int>& dim) {
  detail::require_defined(x, op, "x");
  const auto rank = static_cast<std::int64_t>(x.rank());
  std::vector<std::int64_t> out;
  for (int d : dim) {
    const std::int64_t a = detail::normal_axis(op, x.shape(), d, rank, "dim");
    if (std::find(out.begin(), out.end(), a) != out.end())
      fail(ErrorKind::InvalidArgument, "{}: dim [{}] names axis {} twice (x {})", op, fmt::join(dim, ", "), a, x.shape());
    out.push_back(a);
  }
  if (rank == 0) return {};
  if (dim.empty())
    for (std::int64_t a = 0; a < rank; ++a) out.push_back(a);
  std::sort(out.begin(), out.end());
  return out;
}

// ── argmax, argmin ──────────────────────────────────────────────────────────

struct ArgAttributes {
  std::int64_t dim = 0;  // non-negative
  bool keepdim = false;
  static constexpr auto fields = std::tuple{field("dim", &ArgAttributes::dim), field("keepdim", &ArgAttributes::keepdim)};
};

// The lowerings of argmax or argmin (`op`): f32, f16 and bf16
// (float_lowerings), and int32 (IArgMax or IArgMin).
std::vector<std::pair<DType, detail::Lowering<ArgAttributes>>> arg_lowerings(ReduceOp op) {
  auto lowerings = detail::float_lowerings<ArgAttributes>(
      [op](const OpCall<ArgAttributes>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
        const Layout v(c.inputs[0].shape(), {c.attributes.dim});
        if (v.rows == 0) return;
        const auto rows = rows_of(c.engine, c.name, DType::F32, c.inputs[0].storage(), v, ds);
        reduce_rows(c.engine, rows, v.rows, v.length, op, 1.0f, out[0].storage(), ds);
      });
  lowerings.emplace_back(DType::I32, [op](const OpCall<ArgAttributes>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
    reduce_ints(c, Layout(c.inputs[0].shape(), {c.attributes.dim}), op == ArgMax ? IArgMax : IArgMin, out[0].storage(), ds);
  });
  return lowerings;
}

// The index of the extreme along axis `dim` (not differentiable).
Op<ArgAttributes> arg_op(const char* name, ReduceOp op) {
  return Op<ArgAttributes>(
      {.name = name,
       .inputs = {"x"},
       .infer = [](const OpCall<ArgAttributes>& c) {
         const Shape& s = c.inputs[0].shape();
         const std::int64_t length = s[static_cast<std::size_t>(c.attributes.dim)];
         if (length == 0) fail(ErrorKind::InvalidArgument, "{}: cannot reduce the empty dim {} of x {}", c.name, c.attributes.dim, s);
         if (length > INT32_MAX)
           fail(ErrorKind::InvalidArgument, "{}: dim {} of x {} is too long for int32 indices", c.name, c.attributes.dim, s);
         check_indexable(c.inputs[0], s.numel() / length, c.name);
         return std::vector<OutputSpec>{{reduced_shape(s, {c.attributes.dim}, c.attributes.keepdim), DType::I32}};
       },
       .lower = arg_lowerings(op)});
}

const auto kArgMax = arg_op("oa::matrix::argmax", ArgMax);
const auto kArgMin = arg_op("oa::matrix::argmin", ArgMin);

// ── cumsum ──────────────────────────────────────────────────────────────────

struct CumsumAttributes {
  std::int64_t dim = 0;
  static constexpr auto fields = std::tuple{field("dim", &CumsumAttributes::dim)};
};

// Appends the matrix/cumsum scan of x (shape s) along `dim` into y.
void cumsum_dispatch(const Matrix& x, const Matrix& y, std::int64_t dim, bool reverse, std::vector<ComputeDispatch>& ds) {
  const Shape& s = x.shape();
  if (s.numel() == 0) return;
  const std::int64_t length = s.rank() == 0 ? 1 : s[static_cast<std::size_t>(dim)];
  std::int64_t inner = 1;
  for (std::size_t d = static_cast<std::size_t>(dim) + 1; d < s.rank(); ++d) inner *= s[d];
  const std::int64_t lines = s.numel() / length;
  ComputeDispatch d;
  d.kernel = kernels::matrix_cumsum;
  d.specialization = {reverse ? 1u : 0u};
  d.bindings = {runtime::BufferBinding::read(x.storage()), runtime::BufferBinding::write(y.storage())};
  d.push.set(push::matrix_cumsum{.lines = u32(lines), .L = u32(length), .inner = u32(inner)});
  d.groups = {detail::groups_for(lines, 256), 1, 1};
  ds.push_back(std::move(d));
}

const Op<CumsumAttributes> kCumsum{{.name = "oa::matrix::cumsum",
                                    .inputs = {"x"},
                                    .infer = [](const OpCall<CumsumAttributes>& c) {
                                      check_indexable(c.inputs[0], 1, c.name);
                                      return std::vector<OutputSpec>{{c.inputs[0].shape()}};
                                    },
                                    .lower = {{DType::F32,
                                               [](const OpCall<CumsumAttributes>& c, const std::vector<Matrix>& out,
                                                  std::vector<ComputeDispatch>& ds) {
                                                 cumsum_dispatch(c.inputs[0], out[0], c.attributes.dim, false, ds);
                                               }}},
                                    .backward = [](const BackwardCall<CumsumAttributes>& c) {
                                      const Matrix& gy = c.grad_outputs[0];
                                      Matrix gx = detail::allocate(gy.engine(), c.input_shapes[0]);
                                      std::vector<ComputeDispatch> ds;
                                      cumsum_dispatch(gy, gx, c.attributes.dim, true, ds);
                                      c.record(ds, {&gy}, {&gx});
                                      return std::vector<Matrix>{gx};
                                    }}};

struct SumToAttributes {
  std::vector<std::int64_t> shape;
  static constexpr auto fields = std::tuple{field("shape", &SumToAttributes::shape)};
};

// x viewed as [outer, channels, inner] with the target indexed by the
// channel (`channels_view`), or else, when the target broadcasts to x by
// NumPy's rules, the axes of x to sum over (`axes`: x's leading extra axes
// and those where the target has 1); `broadcasts` false otherwise.
struct Channels {
  std::int64_t outer = 0, channels = 0, inner = 1;
  bool channels_view = false, broadcasts = false;
  std::vector<std::int64_t> axes;
  Channels(const Shape& s, const Shape& target) : channels(s.numel()) {
    channels_view = s == target || detail::broadcast_layout(s, target, channels, inner);
    outer = channels * inner > 0 ? s.numel() / (channels * inner) : 0;
    broadcasts = channels_view;
    if (broadcasts || target.rank() > s.rank()) return;
    const std::size_t pad = s.rank() - target.rank();
    broadcasts = true;
    for (std::size_t d = 0; d < s.rank(); ++d) {
      const std::int64_t t = d < pad ? 1 : target[d - pad];
      if (d < pad || (t == 1 && s[d] != 1)) axes.push_back(static_cast<std::int64_t>(d));
      else broadcasts = broadcasts && t == s[d];
    }
  }
};

// The sum of f32 x into f32 y (sum_to's shapes).
void sum_to_f32(const Engine& engine, const char* name, const Matrix& x, const Matrix& y, std::vector<ComputeDispatch>& ds) {
  const Channels v(x.shape(), y.shape());
  if (v.channels_view) detail::sum_channels(engine, x.storage(), v.outer, v.channels, v.inner, y.storage(), ds);
  else reduce_axes(engine, name, Kind::Sum, x.storage(), x.shape(), v.axes, 0.0f, 0.0f, y.storage(), ds);
}

// x summed to a shape it broadcasts from; the gradient of a sum over
// broadcast copies is gy broadcast back. A 16-bit x is widened into an f32
// temporary, summed in f32, and the sums rounded once into its dtype.
const Op<SumToAttributes> kSumTo{
    {.name = "oa::matrix::sum_to",
     .inputs = {"x"},
     .infer = [](const OpCall<SumToAttributes>& c) {
       const Shape& s = c.inputs[0].shape();
       const Shape target(c.attributes.shape);
       const Channels v(s, target);
       if (!v.broadcasts)
         fail(ErrorKind::InvalidArgument, "{}: x {} does not broadcast from target {} (NumPy's rules: right aligned, extents equal or 1)",
              c.name, s, target);
       check_indexable(c.inputs[0], v.channels, c.name);
       return std::vector<OutputSpec>{{target, c.inputs[0].dtype()}};
     },
     .lower = detail::float_lowerings<SumToAttributes>(
         [](const OpCall<SumToAttributes>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
           sum_to_f32(c.engine, c.name, c.inputs[0], out[0], ds);
         }),
     .backward = [](const BackwardCall<SumToAttributes>& c) {
       const Matrix& gy = c.grad_outputs[0];
       const Shape& s = c.input_shapes[0];
       if (gy.shape() == s) return std::vector<Matrix>{gy};
       const Channels v(s, gy.shape());
       if (!v.channels_view) {
         if (gy.dtype() == DType::F32) return std::vector<Matrix>{expand(gy, s.to_vector())};
         return std::vector<Matrix>{cast(expand(cast(gy, DType::F32), s.to_vector()), gy.dtype())};
       }
       Matrix gx = detail::allocate(gy.engine(), s, gy.dtype());
       std::vector<ComputeDispatch> ds;
       expand_channels(gy, gx, v.channels, v.inner, 1.0f, c.name, ds);
       c.record(ds, {&gy}, {&gx});
       return std::vector<Matrix>{gx};
     }}};

// The public reductions: `dim` checked and normalised before apply.
template <class A>
Matrix reduce(const Op<A>& op, const Matrix& x, const std::vector<int>& dim, A attributes) {
  attributes.dims = reduced_axes(op.def.name, x, dim);
  return apply(op, {x}, attributes)[0];
}

// argmax or argmin: `dim` checked and normalised before apply.
Matrix arg_extreme(const Op<ArgAttributes>& op, const Matrix& x, int dim, bool keepdim) {
  detail::require_defined(x, op.def.name, "x");
  return apply(op, {x}, {detail::existing_axis(op.def.name, x.shape(), dim, "dim"), keepdim})[0];
}

}  // namespace

Matrix sum(const Matrix& x, const std::vector<int>& dim, bool keepdim) { return reduce(kSum, x, dim, DimsAttributes{{}, keepdim}); }
Matrix mean(const Matrix& x, const std::vector<int>& dim, bool keepdim) { return reduce(kMean, x, dim, DimsAttributes{{}, keepdim}); }
Matrix max(const Matrix& x, const std::vector<int>& dim, bool keepdim) { return reduce(kMax, x, dim, DimsAttributes{{}, keepdim}); }
Matrix min(const Matrix& x, const std::vector<int>& dim, bool keepdim) { return reduce(kMin, x, dim, DimsAttributes{{}, keepdim}); }
Matrix prod(const Matrix& x, const std::vector<int>& dim, bool keepdim) { return reduce(kProd, x, dim, DimsAttributes{{}, keepdim}); }
Matrix var(const Matrix& x, const std::vector<int>& dim, float correction, bool keepdim) {
  return reduce(kVar, x, dim, VarAttributes{{}, correction, keepdim});
}
Matrix std(const Matrix& x, const std::vector<int>& dim, float correction, bool keepdim) {
  return reduce(kStd, x, dim, VarAttributes{{}, correction, keepdim});
}
Matrix logsumexp(const Matrix& x, const std::vector<int>& dim, bool keepdim) {
  return reduce(kLogSumExp, x, dim, DimsAttributes{{}, keepdim});
}
Matrix norm(const Matrix& x, float p, const std::vector<int>& dim, bool keepdim) { return reduce(kNorm, x, dim, NormAttributes{p, {}, keepdim}); }

Matrix sum_all(const Matrix& x) { return sum(x, std::vector<int>{}); }
Matrix mean_all(const Matrix& x) { return mean(x, std::vector<int>{}); }
Matrix max_all(const Matrix& x) { return max(x, std::vector<int>{}); }

Matrix argmax(const Matrix& x, int dim, bool keepdim) { return arg_extreme(kArgMax, x, dim, keepdim); }
Matrix argmin(const Matrix& x, int dim, bool keepdim) { return arg_extreme(kArgMin, x, dim, keepdim); }

Matrix cumsum(const Matrix& x, int dim) {
  const char* op = "oa::matrix::cumsum";
  detail::require_defined(x, op, "x");
  return apply(kCumsum, {x}, {detail::normal_axis(op, x.shape(), dim, static_cast<std::int64_t>(x.rank()), "dim")})[0];
}

Matrix sum_to(const Matrix& x, const Shape& target) { return apply(kSumTo, {x}, {target.to_vector()})[0]; }

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
