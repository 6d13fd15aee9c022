// concat, chunk and split, declared as OpDefs over one column-block copy
// lowering (concat's backward is split's lowering and vice versa): the word
// block copy (matrix/copy_block) for 4-byte dtypes, the strided copy
// (matrix/strided_copy) for 2- and 1-byte ones.
#include "oa/matrix/concat.hpp"

#include <algorithm>

#include <fmt/ranges.h>

#include "matrix/axis.hpp"
#include "matrix/op_def.hpp"
#include "oa/matrix/layout.hpp"

namespace oa::matrix {

namespace {

using namespace detail::op_def;

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
    d.kernel = kernels::matrix_copy_block;
    d.bindings = {in.binding, to.binding};
    const std::int64_t n = n_rows * cols;
    d.push.set(push::matrix_copy_block{.n = detail::shader_u32(n, "elements per dispatch", op),
                                       .cols = detail::shader_u32(cols, "block width", op),
                                       .src_stride = detail::shader_u32(src.stride, "row stride", op),
                                       .src_offset = in.offset,
                                       .dst_stride = detail::shader_u32(dst.stride, "row stride", op),
                                       .dst_offset = to.offset});
    d.groups = {detail::groups_for(n, 1024), 1, 1};
    out.push_back(std::move(d));
  }
}

// Appends the copy of the contiguous `rows` x `cols` block `part` into
// (`into_whole`) or out of columns [column, column + cols) of `whole`, whose
// rows hold `stride` elements. A 2- or 1-byte copy into `whole` ORs into its
// words: the caller zero-fills it first.
void copy_part(const Matrix& part, const Matrix& whole, bool into_whole, std::int64_t rows, std::int64_t cols, std::int64_t stride,
               std::int64_t column, const char* op, std::vector<ComputeDispatch>& ds) {
  if (size_of(part.dtype()) == 4) {
    const Side p{&part, cols, 0}, w{&whole, stride, column};
    lower_block(part.engine(), rows, cols, into_whole ? p : w, into_whole ? w : p, op, ds);
  } else if (rows != 0 && cols != 0) {
    detail::strided_copy(op, into_whole, part.dtype(), (into_whole ? part : whole).storage(), (into_whole ? whole : part).storage(),
                         {rows, cols}, {stride, 1}, column, ds);
  }
}

// Appends y = the concatenation of xs along `axis`: the lowering of concat,
// and the backward of chunk and split.
void concat_dispatches(std::span<const Matrix> xs, std::size_t axis, const Matrix& y, const char* name,
                       std::vector<ComputeDispatch>& ds) {
  const std::int64_t outer = outer_of(y.shape(), axis), inner = inner_of(y.shape(), axis), y_cols = y.shape()[axis] * inner;
  if (size_of(y.dtype()) < 4 && y.numel() > 0) y.engine().fill(*y.storage(), 0, y.storage()->bytes(), 0);
  std::int64_t column = 0;
  for (const Matrix& x : xs) {
    const std::int64_t cols = x.shape()[axis] * inner;
    copy_part(x, y, true, outer, cols, y_cols, column, name, ds);
    column += cols;
  }
}

// Appends the slices of x along `axis` into parts (whose extents along axis
// sum to x's), skipping undefined parts: the lowering of chunk, and the
// backward of concat.
void split_dispatches(const Matrix& x, std::size_t axis, const std::vector<Matrix>& parts, const std::vector<std::int64_t>& extents,
                      const char* name, std::vector<ComputeDispatch>& ds) {
  const std::int64_t outer = outer_of(x.shape(), axis), inner = inner_of(x.shape(), axis), x_cols = x.shape()[axis] * inner;
  std::int64_t column = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::int64_t cols = extents[i] * inner;
    if (parts[i].defined()) copy_part(parts[i], x, false, outer, cols, x_cols, column, name, ds);
    column += cols;
  }
}

// The backward of chunk and split: x's gradient as the concatenation of the
// parts' gradients along the op's axis.
template <class A>
std::vector<Matrix> concat_of_gradients(const BackwardCall<A>& c) {
  const Matrix& gy = c.grad_outputs[0];
  Matrix gx = detail::allocate(gy.engine(), c.input_shapes[0], c.input_dtypes[0]);
  std::vector<ComputeDispatch> ds;
  concat_dispatches(c.grad_outputs, static_cast<std::size_t>(c.attributes.axis), gx, c.name, ds);
  c.record(ds, c.grad_outputs, {gx});
  return {gx};
}

struct ConcatAttributes {
  std::int64_t axis = 0;  // non-negative
  static constexpr auto fields = std::tuple{field("axis", &ConcatAttributes::axis)};
};

const Op<ConcatAttributes> kConcatOp{
    {.name = "oa::matrix::concat",
     .inputs = {"xs"},
     .infer = [](const OpCall<ConcatAttributes>& c) {
       const std::span<const Matrix> xs = c.inputs;
       const auto a = static_cast<std::size_t>(c.attributes.axis);
       const Shape& first = xs.front().shape();
       std::int64_t total = 0;
       for (std::size_t i = 0; i < xs.size(); ++i) {
         const Shape& s = xs[i].shape();
         if (xs[i].dtype() != xs.front().dtype())
           fail(ErrorKind::InvalidArgument, "{}: xs[{}] is {} {} but xs[0] is {} {} (concat takes operands of one dtype; cast them first)",
                c.name, i, to_string(xs[i].dtype()), s, to_string(xs.front().dtype()), first);
         bool same = s.rank() == first.rank();
         for (std::size_t d = 0; same && d < s.rank(); ++d) same = d == a || s[d] == first[d];
         if (!same)
           fail(ErrorKind::InvalidArgument, "{}: xs[{}] {} does not match xs[0] {} outside axis {}", c.name, i, s, first, a);
         total = checked_add(total, s[a], "concat extent");
       }
       std::vector<std::int64_t> dims = first.to_vector();
       dims[a] = total;
       detail::shader_u32(Shape(dims).numel(), "output elements", c.name);
       return std::vector<OutputSpec>{{Shape(dims), xs.front().dtype()}};
     },
     .lower = every_dtype<ConcatAttributes>(
         [](const OpCall<ConcatAttributes>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
           concat_dispatches(c.inputs, static_cast<std::size_t>(c.attributes.axis), out[0], c.name, ds);
         }),
     .backward = [](const BackwardCall<ConcatAttributes>& c) {
       const Matrix& gy = c.grad_outputs[0];
       const auto a = static_cast<std::size_t>(c.attributes.axis);
       std::vector<Matrix> g(c.input_shapes.size());
       std::vector<std::int64_t> extents;
       for (std::size_t i = 0; i < g.size(); ++i) {
         extents.push_back(c.input_shapes[i][a]);
         if (c.needs[i]) g[i] = detail::allocate(gy.engine(), c.input_shapes[i], c.input_dtypes[i]);
       }
       std::vector<ComputeDispatch> ds;
       split_dispatches(gy, a, g, extents, c.name, ds);
       c.record(ds, {gy}, g);
       return g;
     },
     .variadic = true}};

// Bounds the slices of an empty axis (each one a Matrix of its own).
constexpr std::int64_t kMaxEmptyChunks = 1 << 16;

struct ChunkAttributes {
  std::int64_t parts = 1, axis = 0;  // axis non-negative
  static constexpr auto fields = std::tuple{field("parts", &ChunkAttributes::parts), field("axis", &ChunkAttributes::axis)};
};

const Op<ChunkAttributes> kChunkOp{
    {.name = "oa::matrix::chunk",
     .inputs = {"x"},
     .outputs = -1,
     .infer = [](const OpCall<ChunkAttributes>& c) {
       const Matrix& x = c.inputs[0];
       const std::int64_t parts = c.attributes.parts, axis = c.attributes.axis, n = x.shape()[static_cast<std::size_t>(axis)];
       if (parts < 1) fail(ErrorKind::InvalidArgument, "{}: parts {} must be >= 1 (x {})", c.name, parts, x.shape());
       if (n == 0 && parts > kMaxEmptyChunks)
         fail(ErrorKind::InvalidArgument, "{}: parts {} of the empty axis {} of x {} exceeds {} (one empty slice each)", c.name, parts,
              axis, x.shape(), kMaxEmptyChunks);
       detail::shader_u32(x.numel(), "elements", c.name);
       // torch.chunk: slices of ceil(n / parts), the last one smaller, so that
       // there may be fewer than `parts` (an empty axis gives `parts` empty ones).
       const std::int64_t size = n / parts + (n % parts != 0), count = n == 0 ? parts : (n - 1) / size + 1;
       std::vector<OutputSpec> out;
       for (std::int64_t i = 0; i < count; ++i) {
         std::vector<std::int64_t> dims = x.shape().to_vector();
         dims[static_cast<std::size_t>(axis)] = std::min(size, n - i * size);
         out.push_back({Shape(dims), x.dtype()});
       }
       return out;
     },
     .lower = every_dtype<ChunkAttributes>(
         [](const OpCall<ChunkAttributes>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
           const auto a = static_cast<std::size_t>(c.attributes.axis);
           std::vector<std::int64_t> extents;
           for (const Matrix& o : out) extents.push_back(o.shape()[a]);
           split_dispatches(c.inputs[0], a, out, extents, c.name, ds);
         }),
     .backward = [](const BackwardCall<ChunkAttributes>& c) { return concat_of_gradients(c); }}};

struct SplitAttributes {
  std::vector<std::int64_t> sizes;
  std::int64_t axis = 0;  // non-negative
  static constexpr auto fields = std::tuple{field("sizes", &SplitAttributes::sizes), field("axis", &SplitAttributes::axis)};
};

const Op<SplitAttributes> kSplitOp{
    {.name = "oa::matrix::split",
     .inputs = {"x"},
     .outputs = -1,
     .infer = [](const OpCall<SplitAttributes>& c) {
       const Matrix& x = c.inputs[0];
       const auto axis = static_cast<std::size_t>(c.attributes.axis);
       std::int64_t total = 0;
       bool ok = !c.attributes.sizes.empty();
       for (auto s : c.attributes.sizes) ok = ok && s >= 0 && !__builtin_add_overflow(total, s, &total);
       if (!ok || total != x.shape()[axis])
         fail(ErrorKind::InvalidArgument, "{}: sizes [{}] (non-negative, at least one) do not sum to extent {} of axis {} of x {}", c.name,
              fmt::join(c.attributes.sizes, ", "), x.shape()[axis], axis, x.shape());
       detail::shader_u32(x.numel(), "elements", c.name);
       std::vector<OutputSpec> out;
       for (auto s : c.attributes.sizes) {
         std::vector<std::int64_t> dims = x.shape().to_vector();
         dims[axis] = s;
         out.push_back({Shape(dims), x.dtype()});
       }
       return out;
     },
     .lower = every_dtype<SplitAttributes>(
         [](const OpCall<SplitAttributes>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
           split_dispatches(c.inputs[0], static_cast<std::size_t>(c.attributes.axis), out, c.attributes.sizes, c.name, ds);
         }),
     .backward = [](const BackwardCall<SplitAttributes>& c) { return concat_of_gradients(c); }}};

}  // namespace

Matrix concat(const std::vector<Matrix>& xs, int axis) {
  const char* name = kConcatOp.def.name;
  if (xs.empty()) fail(ErrorKind::InvalidArgument, "{}: xs is empty (at least one operand is required)", name);
  detail::require_defined(xs.front(), name, "xs");
  const std::size_t a = static_cast<std::size_t>(detail::existing_axis(name, xs.front().shape(), axis, "axis", "xs[0]"));
  return apply(kConcatOp, xs, {static_cast<std::int64_t>(a)})[0];
}

std::vector<Matrix> chunk(const Matrix& x, std::int64_t parts, int axis) {
  const char* name = kChunkOp.def.name;
  detail::require_defined(x, name, "x");
  const std::size_t a = static_cast<std::size_t>(detail::existing_axis(name, x.shape(), axis));
  return apply(kChunkOp, {x}, {parts, static_cast<std::int64_t>(a)});
}

std::vector<Matrix> split(const Matrix& x, const std::vector<std::int64_t>& sizes, int axis) {
  const char* name = kSplitOp.def.name;
  detail::require_defined(x, name, "x");
  const std::size_t a = static_cast<std::size_t>(detail::existing_axis(name, x.shape(), axis));
  return apply(kSplitOp, {x}, {sizes, static_cast<std::int64_t>(a)});
}

std::vector<Matrix> split(const Matrix& x, std::int64_t size, int axis) {
  const char* name = kSplitOp.def.name;
  detail::require_defined(x, name, "x");
  const std::size_t a = static_cast<std::size_t>(detail::existing_axis(name, x.shape(), axis));
  const std::int64_t n = x.shape()[a];
  if (size < 1 && !(size == 0 && n == 0))
    fail(ErrorKind::InvalidArgument, "{}: size {} must be >= 1 (0 only for an empty axis; x {})", name, size, x.shape());
  std::vector<std::int64_t> sizes;
  for (std::int64_t at = 0; at < n; at += size) sizes.push_back(std::min(size, n - at));
  if (sizes.empty()) sizes.push_back(0);
  return apply(kSplitOp, {x}, {sizes, static_cast<std::int64_t>(a)});
}

Matrix stack(const std::vector<Matrix>& xs, int axis) {
  const char* name = "oa::matrix::stack";  // unsqueezes and a concat: no op of its own
  if (xs.empty()) fail(ErrorKind::InvalidArgument, "{}: xs is empty (at least one operand is required)", name);
  // Under autocast concat promotes mixed floating operands (torch.stack's
  // autocast policy); otherwise their dtypes must match.
  const bool promotes = autocast_dtype().has_value();
  for (std::size_t i = 0; i < xs.size(); ++i) {
    detail::require_defined(xs[i], name, "xs");
    if (xs[i].dtype() != xs[0].dtype() && !(promotes && is_floating_point(xs[i].dtype()) && is_floating_point(xs[0].dtype())))
      fail(ErrorKind::InvalidArgument, "{}: xs[{}] is {} {} but xs[0] is {} {} (stack takes operands of one dtype; cast them first)", name,
           i, to_string(xs[i].dtype()), xs[i].shape(), to_string(xs[0].dtype()), xs[0].shape());
    if (!(xs[i].shape() == xs[0].shape()))
      fail(ErrorKind::InvalidArgument, "{}: xs[{}] {} differs from xs[0] {} (stack takes operands of one shape)", name, i, xs[i].shape(),
           xs[0].shape());
    if (!(xs[i].engine() == xs[0].engine()))
      fail(ErrorKind::InvalidArgument, "{}: xs[{}] {} lives on another engine than xs[0]", name, i, xs[i].shape());
  }
  const auto r = static_cast<int>(xs[0].rank());
  if (r >= static_cast<int>(Shape::kMaxRank))
    fail(ErrorKind::InvalidArgument, "{}: xs[0] {} already has the most axes a Matrix can have ({})", name, xs[0].shape(), Shape::kMaxRank);
  const auto a = static_cast<int>(detail::normal_axis(name, xs[0].shape(), axis, r + 1, "axis", "xs[0]"));
  std::vector<Matrix> parts;
  for (const Matrix& x : xs) parts.push_back(unsqueeze(x, a));
  return concat(parts, a);
}

}  // namespace oa::matrix
