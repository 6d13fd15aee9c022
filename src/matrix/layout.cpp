// The layout family: permute and slice as strided copies (matrix/strided_copy),
// declared once each (matrix/op_def.hpp); the reshaping views over Matrix::reshape.
#include "oa/matrix/layout.hpp"

#include <algorithm>
#include <array>
#include <numeric>

#include <fmt/ranges.h>

#include "matrix/axis.hpp"
#include "matrix/op_def.hpp"
#include "oa/matrix/cast.hpp"
#include "oa/matrix/reduction.hpp"

namespace oa::detail {

// Declared in matrix/lowering.hpp.
void strided_copy(const char* op, bool scatter, DType dtype, const std::shared_ptr<runtime::Storage>& src,
                  const std::shared_ptr<runtime::Storage>& dst, const std::vector<std::int64_t>& extents,
                  const std::vector<std::int64_t>& strides, std::int64_t base, std::vector<runtime::ComputeDispatch>& ds) {
  const std::int64_t n = std::accumulate(extents.begin(), extents.end(), std::int64_t{1}, std::multiplies<>());
  if (n == 0) return;
  const auto size = static_cast<std::uint32_t>(size_of(dtype));
  const std::int64_t per = 4 / size;  // elements a word
  runtime::ComputeDispatch d;
  d.kernel = kernels::matrix_strided_copy;
  d.specialization = {scatter ? 1u : 0u, size};
  // A 16-bit or byte scatter ORs its elements into words (read and written).
  d.bindings = {runtime::BufferBinding::read(src), per > 1 && scatter ? runtime::BufferBinding::read_write(dst) : runtime::BufferBinding::write(dst)};
  const std::size_t pad = Shape::kMaxRank - extents.size();
  std::array<std::uint32_t, Shape::kMaxRank> ext{}, stride{};
  for (std::size_t d8 = 0; d8 < Shape::kMaxRank; ++d8) {
    ext[d8] = d8 < pad ? 1u : shader_u32(extents[d8 - pad], "extent", op);
    stride[d8] = d8 < pad ? 0u : shader_u32(strides[d8 - pad], "stride", op);
  }
  d.push.set(push::matrix_strided_copy{.n = shader_u32(n, "element count", op),
                                       .base = shader_u32(base, "element offset", op),
                                       .ext = ext,
                                       .stride = stride});
  d.groups = {groups_for(scatter ? n : ceil_div(n, per), 1024), 1, 1};  // a gather: dst words
  ds.push_back(std::move(d));
}

}  // namespace oa::detail

namespace oa::matrix {

namespace {

using namespace detail::op_def;

// Row-major strides of `s` in elements.
std::vector<std::int64_t> strides_of(const Shape& s) {
  std::vector<std::int64_t> out(s.rank(), 1);
  for (std::size_t d = s.rank(); d-- > 1;) out[d - 1] = out[d] * s[d];
  return out;
}

void strided_copy(const char* op, bool scatter, const Matrix& src, const Matrix& dst, const std::vector<std::int64_t>& extents,
                  const std::vector<std::int64_t>& strides, std::int64_t base, std::vector<ComputeDispatch>& ds) {
  detail::strided_copy(op, scatter, src.dtype(), src.storage(), dst.storage(), extents, strides, base, ds);
}

void require_numel_u32(const Matrix& x, const char* op) { detail::shader_u32(x.numel(), "element count of x", op); }

// ── permute ─────────────────────────────────────────────────────────────────

struct PermuteAttributes {
  std::vector<std::int64_t> dims;
  static constexpr auto fields = std::tuple{field("dims", &PermuteAttributes::dims)};
};

Shape permuted(const Shape& s, const std::vector<std::int64_t>& dims) {
  std::vector<std::int64_t> out;
  for (auto d : dims) out.push_back(s[static_cast<std::size_t>(d)]);
  return Shape(out);
}

// y = x with its axes reordered by dims (a gather along them); the backward
// gathers gy along the inverse permutation.
void permute_dispatch(const char* op, DType dtype, const std::shared_ptr<runtime::Storage>& x, const Shape& x_shape,
                      const std::shared_ptr<runtime::Storage>& y, const std::vector<std::int64_t>& dims, std::vector<ComputeDispatch>& ds) {
  const auto in = strides_of(x_shape);
  std::vector<std::int64_t> strides, extents;
  for (auto d : dims) {
    strides.push_back(in[static_cast<std::size_t>(d)]);
    extents.push_back(x_shape[static_cast<std::size_t>(d)]);
  }
  detail::strided_copy(op, false, dtype, x, y, extents, strides, 0, ds);
}
void permute_dispatch(const char* op, const Matrix& x, const Matrix& y, const std::vector<std::int64_t>& dims,
                      std::vector<ComputeDispatch>& ds) {
  permute_dispatch(op, x.dtype(), x.storage(), x.shape(), y.storage(), dims, ds);
}

const detail::Lowering<PermuteAttributes> kPermuteLowering = [](const OpCall<PermuteAttributes>& c, const std::vector<Matrix>& out,
                                                                std::vector<ComputeDispatch>& ds) {
  permute_dispatch(c.name, c.inputs[0], out[0], c.attributes.dims, ds);
};

const Op<PermuteAttributes> kPermute{
    {.name = "oa::matrix::permute",
     .inputs = {"x"},
     .infer = [](const OpCall<PermuteAttributes>& c) {
       const Matrix& x = c.inputs[0];
       std::vector<std::int64_t> seen = c.attributes.dims;
       std::sort(seen.begin(), seen.end());
       bool ok = seen.size() == x.rank();
       for (std::size_t i = 0; ok && i < seen.size(); ++i) ok = seen[i] == static_cast<std::int64_t>(i);
       if (!ok) fail(ErrorKind::InvalidArgument, "{}: dims {} is not a permutation of the axes of x {}", c.name, fmt::join(c.attributes.dims, ", "), x.shape());
       require_numel_u32(x, c.name);
       return std::vector<OutputSpec>{{permuted(x.shape(), c.attributes.dims), x.dtype()}};
     },
     .lower = every_dtype(kPermuteLowering),
     .backward = [](const BackwardCall<PermuteAttributes>& c) {
       const Matrix& gy = c.grad_outputs[0];
       std::vector<std::int64_t> inverse(c.attributes.dims.size());
       for (std::size_t k = 0; k < inverse.size(); ++k) inverse[static_cast<std::size_t>(c.attributes.dims[k])] = static_cast<std::int64_t>(k);
       Matrix gx = detail::allocate(gy.engine(), c.input_shapes[0], gy.dtype());
       std::vector<ComputeDispatch> ds;
       permute_dispatch(c.name, gy, gx, inverse, ds);
       c.record(ds, {&gy}, {&gx});
       return std::vector<Matrix>{gx};
     }}};

// ── slice ───────────────────────────────────────────────────────────────────

struct SliceAttributes {
  std::int64_t axis = 0, start = 0, stop = 0, step = 1;
  static constexpr auto fields = std::tuple{field("axis", &SliceAttributes::axis), field("start", &SliceAttributes::start),
                                            field("stop", &SliceAttributes::stop), field("step", &SliceAttributes::step)};
  std::int64_t count() const { return stop > start ? (stop - start + step - 1) / step : 0; }
};

// The slice's extents, strides into x and base offset.
struct SliceGeometry {
  std::vector<std::int64_t> extents, strides;
  std::int64_t base = 0;
};

SliceGeometry slice_geometry(const Shape& x, const SliceAttributes& a) {
  SliceGeometry g{x.to_vector(), strides_of(x), 0};
  const auto axis = static_cast<std::size_t>(a.axis);
  g.base = a.start * g.strides[axis];
  g.strides[axis] *= a.step;
  g.extents[axis] = a.count();
  return g;
}

const detail::Lowering<SliceAttributes> kSliceLowering = [](const OpCall<SliceAttributes>& c, const std::vector<Matrix>& out,
                                                            std::vector<ComputeDispatch>& ds) {
  const SliceGeometry g = slice_geometry(c.inputs[0].shape(), c.attributes);
  strided_copy(c.name, false, c.inputs[0], out[0], g.extents, g.strides, g.base, ds);
};

const Op<SliceAttributes> kSlice{{.name = "oa::matrix::slice",
                                  .inputs = {"x"},
                                  .infer = [](const OpCall<SliceAttributes>& c) {
                                    require_numel_u32(c.inputs[0], c.name);
                                    return std::vector<OutputSpec>{
                                        {Shape(slice_geometry(c.inputs[0].shape(), c.attributes).extents), c.inputs[0].dtype()}};
                                  },
                                  .lower = every_dtype(kSliceLowering),
                                  .backward = [](const BackwardCall<SliceAttributes>& c) {
                                    const Matrix& gy = c.grad_outputs[0];
                                    Matrix gx = detail::zeros(gy.engine(), c.input_shapes[0], gy.dtype());
                                    const SliceGeometry g = slice_geometry(c.input_shapes[0], c.attributes);
                                    std::vector<ComputeDispatch> ds;
                                    strided_copy(c.name, true, gy, gx, g.extents, g.strides, g.base, ds);
                                    c.record(ds, {&gy}, {&gx});
                                    return std::vector<Matrix>{gx};
                                  }}};

// ── expand ──────────────────────────────────────────────────────────────────

struct ExpandAttributes {
  std::vector<std::int64_t> shape;  // the result's extents (no -1)
  static constexpr auto fields = std::tuple{field("shape", &ExpandAttributes::shape)};
};

// gy summed over the axes that expand broadcast: gy is permuted so that the
// kept axes come first, viewed as [kept, broadcast] rows and summed over the
// last axis (oa::matrix::permute, sum: recorded under their own names).
Matrix sum_expanded(const Matrix& gy, const Shape& x) {
  const std::size_t rank = gy.rank(), pad = rank - x.rank();
  std::vector<std::int64_t> order, reduced;
  std::int64_t kept = 1, summed = 1;
  for (std::size_t d = 0; d < rank; ++d) {
    const bool broadcast = d < pad || (x[d - pad] == 1 && gy.shape()[d] != 1);
    (broadcast ? reduced : order).push_back(static_cast<std::int64_t>(d));
    (broadcast ? summed : kept) *= gy.shape()[d];
  }
  const bool in_order = std::is_sorted(reduced.begin(), reduced.end()) && (order.empty() || reduced.empty() || order.back() < reduced.front());
  order.insert(order.end(), reduced.begin(), reduced.end());
  const Matrix moved = in_order ? gy : permute(gy, order);
  return sum(moved.reshape({kept, summed})).reshape(x.to_vector());
}

const detail::Lowering<ExpandAttributes> kExpandLowering = [](const OpCall<ExpandAttributes>& c, const std::vector<Matrix>& out,
                                                              std::vector<ComputeDispatch>& ds) {
  const Shape& x = c.inputs[0].shape();
  const auto in = strides_of(x);
  const std::size_t pad = c.attributes.shape.size() - x.rank();
  std::vector<std::int64_t> strides(c.attributes.shape.size(), 0);
  for (std::size_t d = 0; d < x.rank(); ++d)
    if (x[d] != 1) strides[pad + d] = in[d];
  strided_copy(c.name, false, c.inputs[0], out[0], c.attributes.shape, strides, 0, ds);
};

const Op<ExpandAttributes> kExpand{{.name = "oa::matrix::expand",
                                    .inputs = {"x"},
                                    .infer = [](const OpCall<ExpandAttributes>& c) {
                                      const Shape out(c.attributes.shape);
                                      detail::shader_u32(out.numel(), "result elements", c.name);
                                      return std::vector<OutputSpec>{{out, c.inputs[0].dtype()}};
                                    },
                                    .lower = every_dtype(kExpandLowering),
                                    // A 16-bit gradient is summed in f32 and rounded once.
                                    .backward = [](const BackwardCall<ExpandAttributes>& c) {
                                      const Matrix& gy = c.grad_outputs[0];
                                      if (gy.dtype() == DType::F32) return std::vector<Matrix>{sum_expanded(gy, c.input_shapes[0])};
                                      return std::vector<Matrix>{cast(sum_expanded(cast(gy, DType::F32), c.input_shapes[0]), gy.dtype())};
                                    }}};

// [start, stop) lies within the axis. A step past the range is cut to it
// (the same single element, and strides and counts stay small).
Matrix apply_slice(const char* op, const Matrix& x, int axis, std::int64_t start, std::int64_t stop, std::int64_t step) {
  detail::require_defined(x, op, "x");
  if (x.rank() == 0) fail(ErrorKind::InvalidArgument, "{}: x {} has no axis to slice", op, x.shape());
  const std::int64_t a = detail::normal_axis(op, x.shape(), axis, static_cast<std::int64_t>(x.rank()));
  return detail::apply(kSlice, {x}, SliceAttributes{a, start, stop, std::min(step, std::max<std::int64_t>(stop - start, 1))})[0];
}

}  // namespace

Matrix permute(const Matrix& x, const std::vector<std::int64_t>& dims) {
  detail::require_defined(x, "oa::matrix::permute", "x");
  const auto rank = static_cast<std::int64_t>(x.rank());
  std::vector<std::int64_t> normal;
  for (auto d : dims) {
    if (d < -rank || d >= rank)
      fail(ErrorKind::InvalidArgument, "oa::matrix::permute: dims {} names an axis out of range for x {}", fmt::join(dims, ", "),
           x.shape());
    normal.push_back(d < 0 ? d + rank : d);
  }
  return detail::apply(kPermute, {x}, PermuteAttributes{normal})[0];
}

Matrix transpose(const Matrix& x, int dim0, int dim1) {
  detail::require_defined(x, "oa::matrix::transpose", "x");
  const auto rank = static_cast<std::int64_t>(x.rank());
  const std::int64_t a = detail::normal_axis("oa::matrix::transpose", x.shape(), dim0, rank, "dim0"),
                     b = detail::normal_axis("oa::matrix::transpose", x.shape(), dim1, rank, "dim1");
  if (rank == 0) return permute(x, {});
  std::vector<std::int64_t> dims(x.rank());
  std::iota(dims.begin(), dims.end(), 0);
  std::swap(dims[static_cast<std::size_t>(a)], dims[static_cast<std::size_t>(b)]);
  return permute(x, dims);
}

Matrix slice(const Matrix& x, int axis, std::optional<std::int64_t> start, std::optional<std::int64_t> stop, std::int64_t step) {
  const char* op = "oa::matrix::slice";
  detail::require_defined(x, op, "x");
  if (step < 1) fail(ErrorKind::InvalidArgument, "{}: step {} must be >= 1 (x {})", op, step, x.shape());
  const std::int64_t n =
      x.rank() == 0 ? 0 : x.shape()[static_cast<std::size_t>(detail::normal_axis(op, x.shape(), axis, static_cast<std::int64_t>(x.rank())))];
  auto clamp = [n](std::int64_t v) { return std::clamp(v < 0 ? v + n : v, std::int64_t{0}, n); };
  const std::int64_t b = clamp(start.value_or(0)), e = std::max(b, clamp(stop.value_or(n)));
  return apply_slice(op, x, axis, b, e, step);
}

Matrix narrow(const Matrix& x, int axis, std::int64_t start, std::int64_t length) {
  const char* op = "oa::matrix::narrow";
  detail::require_defined(x, op, "x");
  if (x.rank() == 0) fail(ErrorKind::InvalidArgument, "{}: x {} has no axis to narrow", op, x.shape());
  const std::int64_t a = detail::normal_axis(op, x.shape(), axis, static_cast<std::int64_t>(x.rank()));
  const std::int64_t n = x.shape()[static_cast<std::size_t>(a)], b = start < 0 && start >= -n ? start + n : start;
  if (b < 0 || b > n || length < 0 || length > n - b)
    fail(ErrorKind::InvalidArgument, "{}: start {} and length {} do not lie inside axis {} of x {} (extent {})", op, start, length, axis,
         x.shape(), n);
  return apply_slice(op, x, axis, b, b + length, 1);
}

Matrix expand(const Matrix& x, const std::vector<std::int64_t>& shape) {
  const char* op = "oa::matrix::expand";
  detail::require_defined(x, op, "x");  // every dtype, bool too (a where's bool operands)
  const std::size_t rank = shape.size();
  if (rank < x.rank() || rank > Shape::kMaxRank)
    fail(ErrorKind::InvalidArgument, "{}: shape [{}] must have between x's rank and {} axes (x {})", op, fmt::join(shape, ", "), Shape::kMaxRank,
         x.shape());
  const std::size_t pad = rank - x.rank();
  std::vector<std::int64_t> out(rank);
  for (std::size_t d = 0; d < rank; ++d) {
    const std::int64_t e = shape[d], have = d < pad ? -2 : x.shape()[d - pad];
    if (e == -1 && have >= 0) out[d] = have;
    else if (e >= 0 && (have < 0 || have == 1 || have == e)) out[d] = e;
    else
      fail(ErrorKind::InvalidArgument, "{}: x {} cannot be expanded to [{}] (axis {}: extent {} to {}; only extents of 1 expand, -1 keeps an existing one)", op,
           x.shape(), fmt::join(shape, ", "), d, d < pad ? std::string("new") : std::to_string(have), e);
  }
  if (Shape(out) == x.shape()) return x;
  return detail::apply(kExpand, {x}, ExpandAttributes{out})[0];
}

Matrix squeeze(const Matrix& x, std::optional<int> axis) {
  detail::require_defined(x, "oa::matrix::squeeze", "x");
  std::vector<std::int64_t> dims;
  const std::int64_t only =
      axis ? detail::normal_axis("oa::matrix::squeeze", x.shape(), *axis, static_cast<std::int64_t>(x.rank())) : -1;
  for (std::size_t d = 0; d < x.rank(); ++d)
    if (x.shape()[d] != 1 || (axis && static_cast<std::int64_t>(d) != only)) dims.push_back(x.shape()[d]);
  return x.reshape(dims);
}

Matrix unsqueeze(const Matrix& x, int axis) {
  detail::require_defined(x, "oa::matrix::unsqueeze", "x");
  if (x.rank() >= Shape::kMaxRank)
    fail(ErrorKind::InvalidArgument, "oa::matrix::unsqueeze: x {} already has the most axes a Matrix can have ({})", x.shape(), Shape::kMaxRank);
  const std::int64_t a = detail::normal_axis("oa::matrix::unsqueeze", x.shape(), axis, static_cast<std::int64_t>(x.rank()) + 1);
  std::vector<std::int64_t> dims = x.shape().to_vector();
  dims.insert(dims.begin() + a, 1);
  return x.reshape(dims);
}

Matrix flatten(const Matrix& x, int start_dim, int end_dim) {
  const char* op = "oa::matrix::flatten";
  detail::require_defined(x, op, "x");
  if (x.rank() == 0) return x.reshape({1});
  const auto rank = static_cast<std::int64_t>(x.rank());
  const std::int64_t a = detail::normal_axis(op, x.shape(), start_dim, rank, "start_dim"),
                     b = detail::normal_axis(op, x.shape(), end_dim, rank, "end_dim");
  if (a > b) fail(ErrorKind::InvalidArgument, "{}: start_dim {} comes after end_dim {} for x {}", op, start_dim, end_dim, x.shape());
  std::vector<std::int64_t> dims;
  std::int64_t merged = 1;
  for (std::int64_t d = 0; d < rank; ++d) {
    if (d < a || d > b) dims.push_back(x.shape()[static_cast<std::size_t>(d)]);
    else merged *= x.shape()[static_cast<std::size_t>(d)];
    if (d == b) dims.push_back(merged);
  }
  return x.reshape(dims);
}

Matrix unflatten(const Matrix& x, int axis, const std::vector<std::int64_t>& sizes) {
  const char* op = "oa::matrix::unflatten";
  detail::require_defined(x, op, "x");
  if (x.rank() == 0) fail(ErrorKind::InvalidArgument, "{}: x {} has no axis to unflatten", op, x.shape());
  const std::int64_t a = detail::normal_axis(op, x.shape(), axis, static_cast<std::int64_t>(x.rank()));
  const std::int64_t n = x.shape()[static_cast<std::size_t>(a)];
  std::int64_t known = 1;
  int inferred = -1;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1 && inferred == -1) inferred = static_cast<int>(i);
    else if (sizes[i] < 0 || __builtin_mul_overflow(known, sizes[i], &known)) inferred = -2;
  }
  if (x.rank() - 1 + sizes.size() > Shape::kMaxRank)
    fail(ErrorKind::InvalidArgument, "{}: sizes [{}] would give x {} more axes than a Matrix can have ({})", op, fmt::join(sizes, ", "),
         x.shape(), Shape::kMaxRank);
  std::vector<std::int64_t> split = sizes;
  if (inferred >= 0 && known != 0 && n % known == 0) split[static_cast<std::size_t>(inferred)] = n / known;
  if (sizes.empty() || inferred == -2 || (inferred >= 0 ? known == 0 || n % known != 0 : known != n))
    fail(ErrorKind::InvalidArgument, "{}: sizes [{}] do not split axis {} of x {} (extent {})", op, fmt::join(sizes, ", "), axis, x.shape(),
         n);
  std::vector<std::int64_t> dims = x.shape().to_vector();
  dims.erase(dims.begin() + a);
  dims.insert(dims.begin() + a, split.begin(), split.end());
  return x.reshape(dims);
}

}  // namespace oa::matrix

namespace oa::detail {

void permute_into(const char* op, DType dtype, const std::shared_ptr<runtime::Storage>& x, const Shape& x_shape,
                  const std::shared_ptr<runtime::Storage>& y, const std::vector<std::int64_t>& dims,
                  std::vector<runtime::ComputeDispatch>& dispatches) {
  matrix::permute_dispatch(op, dtype, x, x_shape, y, dims, dispatches);
}

}  // namespace oa::detail
