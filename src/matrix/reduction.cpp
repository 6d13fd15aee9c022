#include "oa/matrix/reduction.hpp"

#include <algorithm>
#include <climits>
#include <limits>

#include "matrix/op_def.hpp"

namespace oa::matrix {

namespace {

using detail::apply;
using detail::BackwardCall;
using detail::field;
using detail::NoAttributes;
using detail::Op;
using detail::OpCall;
using detail::OutputSpec;
using detail::Saves;
using runtime::Access;
using runtime::ComputeDispatch;
using runtime::Storage;

// The OP codes of matrix/reduce; ArgMin runs ArgMax over -x (its NEGATE).
enum ReduceOp : std::uint32_t { Sum = 0, Max = 1, ArgMax = 2, ArgMin = 3 };
bool is_arg(ReduceOp op) { return op == ArgMax || op == ArgMin; }

std::int64_t range_words(const Engine& engine) {
  return static_cast<std::int64_t>(engine.device().max_storage_buffer_range / 4) - 64;
}
std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }
std::uint32_t u32(std::int64_t v) { return static_cast<std::uint32_t>(v); }

// Appends the passes of matrix/reduce that reduce `rows` rows of `length` f32
// items of `in` into `out` ([rows] values, or int32 indices for ArgMax and ArgMin). Rows
// longer than one segment give [rows, parts] partial results that the next
// pass reduces again. Callers check that max(rows, rows * length) fits a u32.
void reduce_rows(const Engine& engine, std::shared_ptr<Storage> in, std::int64_t rows, std::int64_t length, ReduceOp op,
                 float scale, const std::shared_ptr<Storage>& out, std::vector<ComputeDispatch>& ds) {
  bool pairs = false;  // `in` holds (value, index) pairs of an earlier ArgMax or ArgMin pass
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
      const auto src = detail::element_window(in, first * w_in, (end - first) * w_in, Access::Read);
      const auto dstw = detail::element_window(dst, s0 * w_out, q * w_out, Access::Write);
      ComputeDispatch d;
      d.kernel = kernels::matrix_reduce;
      d.specialization = {is_arg(op) ? ArgMax : op, threads, pairs, is_arg(op) ? (last ? 2u : 1u) : 0u, op == ArgMin && !pairs};
      d.bindings = {src.binding, dstw.binding};
      d.push.u32(u32(q)).u32(u32(r0)).u32(u32(p0)).u32(u32(length)).u32(u32(parts)).u32(u32(chunk));
      d.push.u32(src.offset).u32(dstw.offset).f32(last ? scale : 1.0f);
      d.groups = {detail::groups_for(q, 256 / threads), 1, 1};
      ds.push_back(std::move(d));
    }
    if (last) return;
    in = dst;
    pairs = is_arg(op);
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

// Appends gx = scale * gy broadcast to gx's shape (viewed as [outer, channels,
// inner], gy indexed by the channel).
void expand(const Matrix& gy, const Matrix& gx, std::int64_t channels, std::int64_t inner, float scale, const char* name,
            std::vector<ComputeDispatch>& ds) {
  for (auto c : detail::element_chunks(gy.engine(), gx.numel())) {
    const auto off = static_cast<std::uint64_t>(c.begin) * 4, bytes = static_cast<std::uint64_t>(c.count) * 4;
    ComputeDispatch d;
    d.kernel = kernels::matrix_expand;
    d.bindings = {runtime::BufferBinding::read(gy.storage()), runtime::BufferBinding::write(gx.storage(), off, bytes)};
    d.push.u32(u32(c.count)).u32(detail::shader_u32(c.begin, "element index", name));
    d.push.u32(detail::shader_u32(channels, "row count", name)).u32(detail::shader_u32(inner, "row length", name)).f32(scale);
    d.groups = {detail::groups_for(c.count, 1024), 1, 1};
    ds.push_back(std::move(d));
  }
}

// Appends the backward of max over `rows` rows of `length` elements of x with
// maxima y into gx (torch.amax: ties share the row's gradient evenly): a mask
// of the maxima, its per-row count (a tree reduction), then mask * gy / count.
void max_backward(const Matrix& gy, const Matrix& x, const Matrix& y, const Matrix& gx, std::int64_t rows, std::int64_t length,
                  const char* name, std::vector<ComputeDispatch>& ds) {
  const Engine& engine = x.engine();
  const auto count = engine.allocate(static_cast<std::uint64_t>(std::max<std::int64_t>(rows, 1)) * 4);
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
      d.push.u32(u32(c.count)).u32(detail::shader_u32(c.begin, "element index", name));
      d.push.u32(detail::shader_u32(rows, "row count", name)).u32(detail::shader_u32(length, "row length", name));
      d.groups = {detail::groups_for(c.count, 1024), 1, 1};
      ds.push_back(std::move(d));
    }
  };
  pass(0);
  if (rows > 0) reduce_rows(engine, gx.storage(), rows, length, Sum, 1.0f, count, ds);
  pass(1);
}

struct KeepDimAttributes {
  bool keepdim = false;
  static constexpr auto fields = std::tuple{field("keepdim", &KeepDimAttributes::keepdim)};
};

// The rows a reduction of x reduces: x's last axis (KeepDimAttributes: sum,
// mean, max, argmax), or all of x as one row (NoAttributes: the *_all forms).
template <class A>
struct Rows {
  std::int64_t rows = 1, length = 0;
  explicit Rows(const Shape& s) {
    if constexpr (std::is_same_v<A, NoAttributes>) {
      length = s.numel();
    } else {
      length = s.dim(-1);
      rows = Shape(s.dims().first(s.rank() - 1)).numel();
    }
  }
};

// Sums times this for mean (NaN for no elements, as torch), else 1.
float scale_of(bool mean, std::int64_t length) {
  return !mean ? 1.0f : length > 0 ? 1.0f / static_cast<float>(length) : std::numeric_limits<float>::quiet_NaN();
}

// A reduction of matrix/reduce: its checks and output shape, the lowering,
// and (but for argmax and argmin) its backward: gy broadcast back (sum, mean) or shared
// among each row's maxima (max).
template <class A>
Op<A> reduction_op(const char* name, ReduceOp op, bool mean) {
  auto backward = [op, mean](const BackwardCall<A>& c) {
    const Matrix& gy = c.grad_outputs[0];
    const Rows<A> r(c.input_shapes[0]);
    Matrix gx = detail::allocate(gy.engine(), c.input_shapes[0]);
    std::vector<ComputeDispatch> ds;
    if (op == Sum) {
      expand(gy, gx, r.rows, r.length, scale_of(mean, r.length), c.name, ds);
      c.record(ds, {&gy}, {&gx});
    } else {
      max_backward(gy, c.inputs[0], c.outputs[0], gx, r.rows, r.length, c.name, ds);
      c.record(ds, {&gy, &c.inputs[0], &c.outputs[0]}, {&gx});
    }
    return std::vector<Matrix>{gx};
  };
  return Op<A>({.name = name,
                .inputs = {"x"},
                .infer = [op](const OpCall<A>& c) {
                  const Matrix& x = c.inputs[0];
                  const Shape& s = x.shape();
                  if constexpr (std::is_same_v<A, NoAttributes>) {
                    if (op != Sum && s.numel() == 0) fail(ErrorKind::InvalidArgument, "{}: cannot reduce the empty x {}", c.name, s);
                    check_indexable(x, 1, c.name);
                    return std::vector<OutputSpec>{{Shape{}}};
                  } else {
                    if (s.rank() == 0)
                      fail(ErrorKind::InvalidArgument, "{}: x {} must have rank >= 1 (use the *_all form for a scalar)", c.name, s);
                    const std::int64_t length = s.dim(-1);
                    if (op != Sum && length == 0)
                      fail(ErrorKind::InvalidArgument, "{}: cannot reduce the empty last axis of x {}", c.name, s);
                    if (is_arg(op) && length > INT32_MAX)
                      fail(ErrorKind::InvalidArgument, "{}: last axis of x {} is too long for int32 indices", c.name, s);
                    std::vector<std::int64_t> dims(s.dims().begin(), s.dims().end() - 1);
                    check_indexable(x, Shape(dims).numel(), c.name);
                    if (c.attributes.keepdim) dims.push_back(1);
                    return std::vector<OutputSpec>{{Shape(dims), is_arg(op) ? DType::I32 : DType::F32}};
                  }
                },
                .lower = {{DType::F32,
                           [op, mean](const OpCall<A>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
                             const Rows<A> r(c.inputs[0].shape());
                             if (r.rows > 0)
                               reduce_rows(c.engine, c.inputs[0].storage(), r.rows, r.length, op, scale_of(mean, r.length),
                                           out[0].storage(), ds);
                           }}},
                .saves = [op](const OpCall<A>&, const std::vector<bool>&) { return op == Max ? Saves{{true}, {true}} : Saves{}; },
                .backward = is_arg(op) ? nullptr : std::function<std::vector<Matrix>(const BackwardCall<A>&)>(backward)});
}

const auto kSum = reduction_op<KeepDimAttributes>("oa::matrix::sum", Sum, false);
const auto kMean = reduction_op<KeepDimAttributes>("oa::matrix::mean", Sum, true);
const auto kMax = reduction_op<KeepDimAttributes>("oa::matrix::max", Max, false);
const auto kArgMax = reduction_op<KeepDimAttributes>("oa::matrix::argmax", ArgMax, false);
const auto kArgMin = reduction_op<KeepDimAttributes>("oa::matrix::argmin", ArgMin, false);
const auto kSumAll = reduction_op<NoAttributes>("oa::matrix::sum_all", Sum, false);
const auto kMeanAll = reduction_op<NoAttributes>("oa::matrix::mean_all", Sum, true);
const auto kMaxAll = reduction_op<NoAttributes>("oa::matrix::max_all", Max, false);

struct SumToAttributes {
  std::vector<std::int64_t> shape;
  static constexpr auto fields = std::tuple{field("shape", &SumToAttributes::shape)};
};

// x viewed as [outer, channels, inner] with the target indexed by the channel;
// false when x does not broadcast from the target.
struct Channels {
  std::int64_t outer = 0, channels = 0, inner = 1;
  bool broadcasts = false;
  Channels(const Shape& s, const Shape& target) : channels(s.numel()) {
    broadcasts = s == target || detail::broadcast_layout(s, target, channels, inner);
    outer = channels * inner > 0 ? s.numel() / (channels * inner) : 0;
  }
};

// x summed to a shape it broadcasts from; the gradient of a sum over
// broadcast copies is gy broadcast back.
const Op<SumToAttributes> kSumTo{
    {.name = "oa::matrix::sum_to",
     .inputs = {"x"},
     .infer = [](const OpCall<SumToAttributes>& c) {
       const Shape& s = c.inputs[0].shape();
       const Shape target(c.attributes.shape);
       const Channels v(s, target);
       if (!v.broadcasts)
         fail(ErrorKind::InvalidArgument,
              "{}: x {} does not broadcast from target {} (the target must be x's shape, a scalar, or span one contiguous run of "
              "x's axes)",
              c.name, s, target);
       check_indexable(c.inputs[0], v.channels, c.name);
       return std::vector<OutputSpec>{{target}};
     },
     .lower = {{DType::F32,
                [](const OpCall<SumToAttributes>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
                  const Channels v(c.inputs[0].shape(), out[0].shape());
                  detail::sum_channels(c.engine, c.inputs[0].storage(), v.outer, v.channels, v.inner, out[0].storage(), ds);
                }}},
     .backward = [](const BackwardCall<SumToAttributes>& c) {
       const Matrix& gy = c.grad_outputs[0];
       const Shape& s = c.input_shapes[0];
       if (gy.shape() == s) return std::vector<Matrix>{gy};
       const Channels v(s, gy.shape());
       Matrix gx = detail::allocate(gy.engine(), s);
       std::vector<ComputeDispatch> ds;
       expand(gy, gx, v.channels, v.inner, 1.0f, c.name, ds);
       c.record(ds, {&gy}, {&gx});
       return std::vector<Matrix>{gx};
     }}};

}  // namespace

Matrix sum(const Matrix& x, bool keepdim) { return apply(kSum, {x}, {keepdim})[0]; }
Matrix mean(const Matrix& x, bool keepdim) { return apply(kMean, {x}, {keepdim})[0]; }
Matrix max(const Matrix& x, bool keepdim) { return apply(kMax, {x}, {keepdim})[0]; }
Matrix argmax(const Matrix& x, bool keepdim) { return apply(kArgMax, {x}, {keepdim})[0]; }
Matrix argmin(const Matrix& x, bool keepdim) { return apply(kArgMin, {x}, {keepdim})[0]; }

Matrix sum_all(const Matrix& x) { return apply(kSumAll, {x})[0]; }
Matrix mean_all(const Matrix& x) { return apply(kMeanAll, {x})[0]; }
Matrix max_all(const Matrix& x) { return apply(kMaxAll, {x})[0]; }

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
