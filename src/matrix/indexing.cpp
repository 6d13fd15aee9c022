// The indexing family, declared once each (matrix/op_def.hpp): index_select
// and gather over one gather kernel (matrix/index_gather), scatter_add and
// their backward over one atomic-free scatter-add (matrix/index_scatter_add),
// where and masked_fill over one selection kernel (matrix/select).
#include "oa/matrix/indexing.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <limits>
#include <vector>

#include "matrix/axis.hpp"
#include "matrix/cast_lowering.hpp"
#include "matrix/float_lowering.hpp"
#include "matrix/op_def.hpp"
#include "oa/matrix/cast.hpp"
#include "oa/matrix/elementwise.hpp"
#include "oa/matrix/layout.hpp"
#include "oa/matrix/reduction.hpp"

namespace oa::matrix {

namespace {

using namespace detail::op_def;

constexpr const char* kIndexSelect = "oa::matrix::index_select";
constexpr const char* kGather = "oa::matrix::gather";
constexpr const char* kScatterAdd = "oa::matrix::scatter_add";
constexpr const char* kWhere = "oa::matrix::where";
constexpr const char* kMaskedFill = "oa::matrix::masked_fill";
constexpr const char* kNonzero = "oa::matrix::nonzero";
constexpr const char* kTril = "oa::matrix::tril";
constexpr const char* kTriu = "oa::matrix::triu";
constexpr const char* kOneHot = "oa::matrix::one_hot";
constexpr const char* kTakeAlongAxis = "oa::matrix::take_along_axis";
constexpr const char* kTopK = "oa::matrix::topk";

struct DimAttributes {
  std::int64_t dim = 0;  // non-negative
  static constexpr auto fields = std::tuple{field("dim", &DimAttributes::dim)};
};

// The [outer, N, inner] view of `s` around `dim`.
struct AxisView {
  std::int64_t outer = 1, extent = 1, inner = 1;
};
AxisView view_of(const Shape& s, std::int64_t dim) {
  AxisView v;
  for (std::size_t d = 0; d < s.rank(); ++d) {
    const auto i = static_cast<std::int64_t>(d);
    (i < dim ? v.outer : i == dim ? v.extent : v.inner) *= s[d];
  }
  return v;
}

// The device check of an op's index (`check`: a forward) or none (0: a
// backward, whose forward checked the same index), binding the record.
std::uint32_t index_check(bool check, ComputeDispatch& d, const Matrix& x, std::int64_t dim, std::int64_t extent, const char* op) {
  if (check) {
    const auto what = [dim, s = x.shape()] { return fmt::format("dim {} of x {}", dim, s); };
    return detail::bind_index_check(x.engine(), d, op, what, extent);
  }
  d.bindings.push_back(BufferBinding::read_write(x.engine().device_check_record()));
  return 0;
}

// mode 0: index [K] (index_select); 1: index shaped as the values (gather, scatter_add). x and y of one dtype, any.
void gather_dispatch(std::uint32_t mode, const Matrix& x, const Matrix& index, const Matrix& y, std::int64_t dim, const char* op, bool check,
                     std::vector<ComputeDispatch>& ds) {
  if (y.numel() == 0) return;
  const AxisView xv = view_of(x.shape(), dim), yv = view_of(y.shape(), dim);
  const auto size = static_cast<std::uint32_t>(size_of(y.dtype()));
  ComputeDispatch d;
  d.kernel = kernels::matrix_index_gather;
  d.specialization = {mode, size};
  d.bindings = {BufferBinding::read(x.storage()), BufferBinding::read(index.storage()), BufferBinding::write(y.storage())};
  const std::uint32_t check_id = index_check(check, d, x, dim, xv.extent, op);
  d.push.set(push::matrix_index_gather{.n = detail::shader_u32(y.numel(), "result elements", op),
                                       .K = detail::shader_u32(yv.extent, "index extent", op),
                                       .N = detail::shader_u32(xv.extent, "extent of x at dim", op),
                                       .inner = detail::shader_u32(xv.inner, "inner extent", op),
                                       .check_id = check_id});
  d.groups = {detail::groups_for(ceil_div(y.numel(), std::int64_t{4 / size}), 1024), 1, 1};
  ds.push_back(std::move(d));
}

// y (shape of x) = base (or 0 when undefined) + values scatter-added at index
// along dim; base, values and y are all f32 or all i32.
void scatter_dispatch(std::uint32_t mode, const Matrix& base, const Matrix& index, const Matrix& values, const Matrix& y, std::int64_t dim,
                      const char* op, bool check, std::vector<ComputeDispatch>& ds) {
  if (y.numel() == 0) return;
  const AxisView yv = view_of(y.shape(), dim), vv = view_of(values.shape(), dim);
  ComputeDispatch d;
  d.kernel = kernels::matrix_index_scatter_add;
  d.specialization = {mode, base.defined() ? 1u : 0u, y.dtype() == DType::I32 ? 1u : 0u};
  d.bindings = {BufferBinding::read((base.defined() ? base : values).storage()), BufferBinding::read(index.storage()),
                BufferBinding::read(values.storage()), BufferBinding::write(y.storage())};
  const std::uint32_t check_id = index_check(check, d, y, dim, yv.extent, op);
  d.push.set(push::matrix_index_scatter_add{.n = detail::shader_u32(y.numel(), "result elements", op),
                                            .K = detail::shader_u32(vv.extent, "index extent", op),
                                            .N = detail::shader_u32(yv.extent, "extent of x at dim", op),
                                            .inner = detail::shader_u32(yv.inner, "inner extent", op),
                                            .check_id = check_id});
  d.groups = {detail::groups_for(y.numel(), 256), 1, 1};
  ds.push_back(std::move(d));
}

// The gradient of x for index_select (mode 0) and gather (mode 1); a 16-bit one is summed in f32 and rounded once.
std::vector<Matrix> gather_backward(std::uint32_t mode, const BackwardCall<DimAttributes>& c) {
  const Matrix &gy = c.grad_outputs[0], &index = c.inputs[1];
  if (detail::is_half(gy.dtype()))
    return detail::widened_backward<DimAttributes>(c, [mode](const BackwardCall<DimAttributes>& w) { return gather_backward(mode, w); });
  Matrix gx = detail::allocate(gy.engine(), c.input_shapes[0]);
  std::vector<ComputeDispatch> ds;
  scatter_dispatch(mode, Matrix(), index, gy, gx, c.attributes.dim, c.name, false, ds);
  c.record(ds, {&gy, &index}, {&gx});
  return {gx, Matrix()};
}

const detail::Saves kSaveIndex{{false, true}, {}};

// ── index_select ────────────────────────────────────────────────────────────

const detail::Lowering<DimAttributes> kIndexSelectLowering = [](const OpCall<DimAttributes>& c, const std::vector<Matrix>& out,
                                                                 std::vector<ComputeDispatch>& ds) {
  gather_dispatch(0, c.inputs[0], c.inputs[1], out[0], c.attributes.dim, c.name, true, ds);
};

const Op<DimAttributes> kIndexSelectOp{
    {.name = kIndexSelect,
     .inputs = {"x", {"index", false, true}},
     .infer = [](const OpCall<DimAttributes>& c) {
       const Matrix &x = c.inputs[0], &index = c.inputs[1];
       detail::require_dtype(index, DType::I32, c.name, "index");
       if (index.rank() > 1)
         fail(ErrorKind::InvalidArgument, "{}: index {} must have rank 0 or 1 (x {})", c.name, index.shape(), x.shape());
       std::vector<std::int64_t> dims = x.shape().to_vector();
       dims[static_cast<std::size_t>(c.attributes.dim)] = index.numel();
       detail::shader_u32(x.numel(), "element count of x", c.name);
       detail::shader_u32(Shape(dims).numel(), "result elements", c.name);
       return std::vector<OutputSpec>{{Shape(dims), x.dtype()}};
     },
     .lower = every_dtype(kIndexSelectLowering),
     .saves = [](const OpCall<DimAttributes>&, const std::vector<bool>&) { return kSaveIndex; },
     .backward = [](const BackwardCall<DimAttributes>& c) { return gather_backward(0, c); }}};

// ── gather ──────────────────────────────────────────────────────────────────

// index has x's rank and x's extents outside dim (the public gather cuts x to that).
void require_index_beside_dim(const char* op, const Matrix& x, const Matrix& index, std::int64_t dim, bool at_most) {
  bool ok = index.rank() == x.rank();
  for (std::size_t d = 0; ok && d < x.rank(); ++d)
    if (static_cast<std::int64_t>(d) != dim) ok = at_most ? index.shape()[d] <= x.shape()[d] : index.shape()[d] == x.shape()[d];
  if (!ok)
    fail(ErrorKind::InvalidArgument, "{}: index {} must have the rank of x {} and {} extents outside dim {}", op, index.shape(), x.shape(),
         at_most ? "no larger" : "the same", dim);
}

const detail::Lowering<DimAttributes> kGatherLowering = [](const OpCall<DimAttributes>& c, const std::vector<Matrix>& out,
                                                           std::vector<ComputeDispatch>& ds) {
  gather_dispatch(1, c.inputs[0], c.inputs[1], out[0], c.attributes.dim, c.name, true, ds);
};

const Op<DimAttributes> kGatherOp{{.name = kGather,
                                   .inputs = {"x", {"index", false, true}},
                                   .infer = [](const OpCall<DimAttributes>& c) {
                                     const Matrix &x = c.inputs[0], &index = c.inputs[1];
                                     detail::require_dtype(index, DType::I32, c.name, "index");
                                     require_index_beside_dim(c.name, x, index, c.attributes.dim, false);
                                     detail::shader_u32(x.numel(), "element count of x", c.name);
                                     detail::shader_u32(index.numel(), "result elements", c.name);
                                     return std::vector<OutputSpec>{{index.shape(), x.dtype()}};
                                   },
                                   .lower = every_dtype(kGatherLowering),
                                   .saves = [](const OpCall<DimAttributes>&, const std::vector<bool>&) { return kSaveIndex; },
                                   .backward = [](const BackwardCall<DimAttributes>& c) { return gather_backward(1, c); }}};

// ── take_along_axis ─────────────────────────────────────────────────────────

// gather once the public function has broadcast x and indices to each other
// outside the axis (so indices has x's extents there).
const Op<DimAttributes> kTakeAlongAxisOp{{.name = kTakeAlongAxis,
                                          .inputs = {"x", {"indices", false, true}},
                                          .infer = [](const OpCall<DimAttributes>& c) {
                                            detail::require_dtype(c.inputs[1], DType::I32, c.name, "indices");
                                            detail::shader_u32(c.inputs[0].numel(), "element count of x", c.name);
                                            detail::shader_u32(c.inputs[1].numel(), "result elements", c.name);
                                            return std::vector<OutputSpec>{{c.inputs[1].shape(), c.inputs[0].dtype()}};
                                          },
                                          .lower = every_dtype(kGatherLowering),
                                          .saves = [](const OpCall<DimAttributes>&, const std::vector<bool>&) { return kSaveIndex; },
                                          .backward = [](const BackwardCall<DimAttributes>& c) { return gather_backward(1, c); }}};

// ── topk ────────────────────────────────────────────────────────────────────

struct TopKAttributes {
  std::int64_t k = 0, dim = 0;  // dim non-negative
  bool largest = true;
  static constexpr auto fields =
      std::tuple{field("k", &TopKAttributes::k), field("dim", &TopKAttributes::dim), field("largest", &TopKAttributes::largest)};
};

// Results: the values (x's dtype) and (no gradient) their i32 positions along
// dim; a 16-bit x is ordered by its exact f32 widening and its values
// gathered at the positions. The backward scatter-adds the values' gradient
// at those positions (a 16-bit one summed in f32 and rounded once).
const detail::Lowering<TopKAttributes> kTopKLowering = [](const OpCall<TopKAttributes>& c, const std::vector<Matrix>& out,
                                                          std::vector<ComputeDispatch>& ds) {
  const Matrix& x = c.inputs[0];
  if (out[0].numel() == 0) return;
  const AxisView v = view_of(x.shape(), c.attributes.dim);
  ComputeDispatch d;
  d.kernel = kernels::matrix_topk;
  d.specialization = {c.attributes.largest ? 1u : 0u, detail::dtype_code(x.dtype())};
  d.bindings = {BufferBinding::read(x.storage()), BufferBinding::write(out[0].storage()), BufferBinding::write(out[1].storage())};
  d.push.set(push::matrix_topk{.n = static_cast<std::uint32_t>(x.numel()),
                               .extent = static_cast<std::uint32_t>(v.extent),
                               .inner = static_cast<std::uint32_t>(v.inner),
                               .k = static_cast<std::uint32_t>(c.attributes.k)});
  d.groups = {detail::groups_for(x.numel(), 256), 1, 1};
  ds.push_back(std::move(d));
  if (detail::is_half(x.dtype())) gather_dispatch(1, x, out[1], out[0], c.attributes.dim, c.name, false, ds);
};

std::vector<Matrix> topk_backward(const BackwardCall<TopKAttributes>& c) {
  const Matrix &gy = c.grad_outputs[0], &indices = c.outputs[1];
  if (detail::is_half(gy.dtype())) return detail::widened_backward<TopKAttributes>(c, topk_backward);
  Matrix gx = detail::allocate(gy.engine(), c.input_shapes[0]);
  std::vector<ComputeDispatch> ds;
  scatter_dispatch(1, Matrix(), indices, gy, gx, c.attributes.dim, c.name, false, ds);
  c.record(ds, {&gy, &indices}, {&gx}, detail::attribute_values(c.attributes));
  return std::vector<Matrix>{gx};
}

const Op<TopKAttributes> kTopKOp{
    {.name = kTopK,
     .inputs = {"x"},
     .outputs = 2,
     .infer = [](const OpCall<TopKAttributes>& c) {
       const Matrix& x = c.inputs[0];
       const std::int64_t n = x.shape()[static_cast<std::size_t>(c.attributes.dim)];
       if (c.attributes.k < 0 || c.attributes.k > n)
         fail(ErrorKind::InvalidArgument, "{}: k {} is outside [0, {}] (the extent of x {} at axis {})", c.name, c.attributes.k, n, x.shape(),
              c.attributes.dim);
       detail::shader_u32(x.numel(), "element count of x", c.name);
       std::vector<std::int64_t> dims = x.shape().to_vector();
       dims[static_cast<std::size_t>(c.attributes.dim)] = c.attributes.k;
       return std::vector<OutputSpec>{{Shape(dims), x.dtype()}, {.shape = Shape(dims), .dtype = DType::I32, .no_grad = true}};
     },
     .lower = {{DType::F32, kTopKLowering}, {DType::F16, kTopKLowering}, {DType::BF16, kTopKLowering}, {DType::I32, kTopKLowering}},
     .saves = [](const OpCall<TopKAttributes>&, const std::vector<bool>&) { return detail::Saves{{}, {false, true}}; },
     .backward = topk_backward}};

// ── scatter_add ─────────────────────────────────────────────────────────────

// f32 and i32 in the kernel; f16 and bf16 summed in f32 and rounded once (float_lowerings).
std::vector<std::pair<DType, detail::Lowering<DimAttributes>>> scatter_add_lowerings() {
  const detail::Lowering<DimAttributes> lowering = [](const OpCall<DimAttributes>& c, const std::vector<Matrix>& out,
                                                      std::vector<ComputeDispatch>& ds) {
    scatter_dispatch(1, c.inputs[0], c.inputs[1], c.inputs[2], out[0], c.attributes.dim, c.name, true, ds);
  };
  auto lowerings = detail::float_lowerings<DimAttributes>(lowering);
  lowerings.emplace_back(DType::I32, lowering);
  return lowerings;
}

const Op<DimAttributes> kScatterAddOp{
    {.name = kScatterAdd,
     .inputs = {"x", {"index", false, true}, "src"},
     .infer = [](const OpCall<DimAttributes>& c) {
       const Matrix &x = c.inputs[0], &index = c.inputs[1], &src = c.inputs[2];
       detail::require_dtype(index, DType::I32, c.name, "index");
       detail::require_same_dtype(x, "x", src, "src", c.name);
       require_index_beside_dim(c.name, x, index, c.attributes.dim, false);
       if (!(src.shape() == index.shape()))
         fail(ErrorKind::InvalidArgument, "{}: src {} must have index's shape {} (x {})", c.name, src.shape(), index.shape(), x.shape());
       detail::shader_u32(x.numel(), "element count of x", c.name);
       detail::shader_u32(index.numel(), "element count of index", c.name);
       return std::vector<OutputSpec>{{x.shape(), x.dtype()}};
     },
     .lower = scatter_add_lowerings(),
     .saves = [](const OpCall<DimAttributes>&, const std::vector<bool>& needs) {
       return detail::Saves{{false, needs[2], false}, {}};
     },
     .backward = [](const BackwardCall<DimAttributes>& c) {
       const Matrix &gy = c.grad_outputs[0], &index = c.inputs[1];
       if (detail::is_half(gy.dtype())) return detail::widened_backward<DimAttributes>(c, kScatterAddOp.def.backward);
       Matrix gsrc;
       if (c.needs[2]) {
         gsrc = detail::allocate(gy.engine(), c.input_shapes[2]);
         std::vector<ComputeDispatch> ds;
         gather_dispatch(1, gy, index, gsrc, c.attributes.dim, c.name, false, ds);
         c.record(ds, {&gy, &index}, {&gsrc});
       }
       return std::vector<Matrix>{c.needs[0] ? gy : Matrix(), Matrix(), gsrc};
     }}};

// ── where and masked_fill ───────────────────────────────────────────────────

// y = cond ? A : B over `y`'s shape (matrix/select); a or b undefined: `value` there.
void select_dispatch(const Matrix& cond, const Matrix& a, const Matrix& b, float value, const Matrix& y, const char* op,
                     std::vector<ComputeDispatch>& ds) {
  if (y.numel() == 0) return;
  const Shape& ys = y.shape();
  const Shape& cs = cond.shape();
  const std::size_t pad = Shape::kMaxRank - ys.rank(), cpad = ys.rank() - cs.rank();
  std::array<std::uint32_t, Shape::kMaxRank> ext{}, stride{};
  ext.fill(1);
  std::int64_t s = 1;
  for (std::size_t d = ys.rank(); d-- > 0;) {
    ext[pad + d] = detail::shader_u32(ys[d], "extent", op);
    if (d >= cpad && cs[d - cpad] != 1) stride[pad + d] = detail::shader_u32(s, "condition stride", op);
    if (d >= cpad) s *= cs[d - cpad];
  }
  const Matrix& some = a.defined() ? a : b;
  const std::size_t size = size_of(y.dtype());
  ComputeDispatch d;
  d.kernel = kernels::matrix_select;
  d.specialization = {size == 4 ? 0u : detail::dtype_code(y.dtype())};
  d.bindings = {BufferBinding::read(cond.storage()), BufferBinding::read((a.defined() ? a : some).storage()),
                BufferBinding::read((b.defined() ? b : some).storage()), BufferBinding::write(y.storage())};
  d.push.set(push::matrix_select{.n = detail::shader_u32(y.numel(), "result elements", op),
                                 .flags = (a.defined() ? 0u : 1u) | (b.defined() ? 0u : 2u),
                                 .value = value,
                                 .ext = ext,
                                 .cstride = stride});
  d.groups = {detail::groups_for(detail::ceil_div(y.numel(), static_cast<std::int64_t>(4 / size)), 1024), 1, 1};
  ds.push_back(std::move(d));
}

// cond ? gy : 0 (when_true) or cond ? 0 : gy, recorded as "<op> backward".
template <class A>
Matrix select_gradient(const BackwardCall<A>& c, const Matrix& cond, bool when_true) {
  const Matrix& gy = c.grad_outputs[0];
  Matrix g = detail::allocate(gy.engine(), gy.shape(), gy.dtype());
  std::vector<ComputeDispatch> ds;
  select_dispatch(cond, when_true ? gy : Matrix(), when_true ? Matrix() : gy, 0.0f, g, c.name, ds);
  c.record(ds, {&gy, &cond}, {&g});
  return g;
}

// x and y already have the result's shape; condition broadcasts to it.
const Op<detail::NoAttributes> kWhereOp{
    {.name = kWhere,
     .inputs = {{"condition", false, true}, "x", "y"},
     .infer = [](const OpCall<detail::NoAttributes>& c) {
       detail::shader_u32(c.inputs[1].numel(), "result elements", c.name);
       const Matrix& x = c.inputs[1];
       return std::vector<OutputSpec>{{.shape = x.shape(), .dtype = x.dtype(), .no_grad = !is_floating_point(x.dtype())}};
     },
     .lower = {{DType::Bool,
                [](const OpCall<detail::NoAttributes>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
                  select_dispatch(c.inputs[0], c.inputs[1], c.inputs[2], 0.0f, out[0], c.name, ds);
                }}},
     .saves = [](const OpCall<detail::NoAttributes>&, const std::vector<bool>&) { return detail::Saves{{true, false, false}, {}}; },
     .backward = [](const BackwardCall<detail::NoAttributes>& c) {
       const Matrix& cond = c.inputs[0];
       return std::vector<Matrix>{Matrix(), c.needs[1] ? select_gradient(c, cond, true) : Matrix(),
                                  c.needs[2] ? select_gradient(c, cond, false) : Matrix()};
     }}};

struct FillAttributes {
  double value = 0;  // double, so that every int32 value arrives exact
  static constexpr auto fields = std::tuple{field("value", &FillAttributes::value)};
};

// The kernel takes the value as a 32-bit word: an i32 x gets it (checked by
// masked_fill to convert without overflow) toward zero as an int32's bits, a
// bool x 1 for any nonzero value (NaN included) and 0 for zero, the float
// dtypes the value as an f32 (rounded again to a 16-bit x's dtype).
const detail::Lowering<FillAttributes> kMaskedFillLowering = [](const OpCall<FillAttributes>& c, const std::vector<Matrix>& out,
                                                               std::vector<ComputeDispatch>& ds) {
  const double v = c.attributes.value;
  const DType dtype = c.inputs[0].dtype();
  const float word = dtype == DType::I32    ? std::bit_cast<float>(static_cast<std::int32_t>(v))
                     : dtype == DType::Bool ? std::bit_cast<float>(static_cast<std::uint32_t>(v != 0))
                                            : static_cast<float>(v);
  select_dispatch(c.inputs[1], Matrix(), c.inputs[0], word, out[0], c.name, ds);
};

// x already has the result's shape; mask broadcasts to it.
const Op<FillAttributes> kMaskedFillOp{
    {.name = kMaskedFill,
     .inputs = {"x", {"mask", false, true}},
     .infer = [](const OpCall<FillAttributes>& c) {
       detail::shader_u32(c.inputs[0].numel(), "result elements", c.name);
       return std::vector<OutputSpec>{{c.inputs[0].shape(), c.inputs[0].dtype()}};
     },
     .lower = every_dtype(kMaskedFillLowering),
     .saves = [](const OpCall<FillAttributes>&, const std::vector<bool>&) { return kSaveIndex; },
     .backward = [](const BackwardCall<FillAttributes>& c) { return std::vector<Matrix>{select_gradient(c, c.inputs[1], false), Matrix()}; }}};

// ── nonzero ─────────────────────────────────────────────────────────────────

struct CountAttributes {
  std::int64_t count = 0;  // the true elements of x, read back by nonzero()
  static constexpr auto fields = std::tuple{field("count", &CountAttributes::count)};
};

// The coordinates of a bool x's true elements (matrix/nonzero, blocks of 1024
// elements): a count per block, the counts' exclusive prefix sum (each
// block's first row), then each block's coordinates from its first row.
const Op<CountAttributes> kNonzeroOp{
    {.name = kNonzero,
     .inputs = {"x"},
     .infer = [](const OpCall<CountAttributes>& c) {
       const Matrix& x = c.inputs[0];
       const auto rank = static_cast<std::int64_t>(x.rank());
       detail::shader_u32(checked_mul(c.attributes.count, rank, "nonzero result elements"), "result elements", c.name);
       return std::vector<OutputSpec>{{Shape{c.attributes.count, rank}, DType::I32}};
     },
     .lower = {{DType::Bool, [](const OpCall<CountAttributes>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
                  const Matrix &x = c.inputs[0], &y = out[0];
                  if (y.numel() == 0) return;
                  const std::int64_t blocks = detail::ceil_div(x.numel(), 1024);
                  const Matrix first_rows = detail::allocate(c.engine, Shape{blocks}, DType::I32);
                  std::array<std::uint32_t, Shape::kMaxRank> ext{};
                  for (std::size_t d = 0; d < x.rank(); ++d) ext[d] = detail::u32(x.shape()[d]);
                  const push::matrix_nonzero p{
                      .n = detail::u32(x.numel()), .blocks = detail::u32(blocks), .rank = detail::u32(y.shape()[1]), .ext = ext};
                  const BufferBinding rows[3] = {BufferBinding::write(first_rows.storage()), BufferBinding::read_write(first_rows.storage()),
                                                 BufferBinding::read(first_rows.storage())};
                  for (std::uint32_t pass = 0; pass < 3; ++pass) {
                    ComputeDispatch d;
                    d.kernel = kernels::matrix_nonzero;
                    d.specialization = {pass};
                    // Passes 0 and 1 do not touch y (bound for the shader's layout).
                    d.bindings = {BufferBinding::read(x.storage()), rows[pass],
                                  pass == 2 ? BufferBinding::write(y.storage()) : BufferBinding::read(y.storage())};
                    d.push.set(p);
                    d.groups = {pass == 1 ? 1u : static_cast<std::uint64_t>(blocks), 1, 1};
                    ds.push_back(std::move(d));
                  }
                }}}}};

// ── tril and triu ───────────────────────────────────────────────────────────

struct TriangleAttributes {
  std::int64_t diagonal = 0;
  static constexpr auto fields = std::tuple{field("diagonal", &TriangleAttributes::diagonal)};
};

// y = x outside the triangle zeroed (matrix/triangle), one dispatch per element chunk.
void triangle_dispatches(bool upper, const Matrix& x, const Matrix& y, std::int64_t diagonal, const char* op,
                         std::vector<ComputeDispatch>& ds) {
  const std::int64_t rows = x.shape()[x.rank() - 2], cols = x.shape()[x.rank() - 1];
  // Offsets c - r lie in (-rows, cols): a diagonal beyond them acts as the bound.
  const auto diag = static_cast<std::int32_t>(std::clamp(diagonal, -rows, cols));
  const auto size = static_cast<std::uint32_t>(size_of(x.dtype()));
  for (auto c : detail::element_chunks(x.engine(), x.numel())) {
    const auto [off, bytes] = detail::chunk_window(x.dtype(), c);
    ComputeDispatch d;
    d.kernel = kernels::matrix_triangle;
    d.specialization = {upper ? 1u : 0u, size};
    d.bindings = {BufferBinding::read(x.storage(), off, bytes), BufferBinding::write(y.storage(), off, bytes)};
    d.push.set(push::matrix_triangle{.n = static_cast<std::uint32_t>(c.count),
                                     .base = detail::shader_u32(c.begin, "element index", op),
                                     .rows = static_cast<std::uint32_t>(rows),
                                     .cols = static_cast<std::uint32_t>(cols),
                                     .diagonal = diag});
    d.groups = {detail::groups_for(ceil_div(c.count, std::int64_t{4 / size}), 1024), 1, 1};
    ds.push_back(std::move(d));
  }
}

// tril (upper false) or triu: the same mask on the values and on the gradient, moved as bits (every dtype).
Op<TriangleAttributes> triangle_op(const char* name, bool upper) {
  const detail::Lowering<TriangleAttributes> lowering = [upper](const OpCall<TriangleAttributes>& c, const std::vector<Matrix>& out,
                                                                std::vector<ComputeDispatch>& ds) {
    triangle_dispatches(upper, c.inputs[0], out[0], c.attributes.diagonal, c.name, ds);
  };
  return Op<TriangleAttributes>(
      {.name = name,
       .inputs = {"x"},
       .infer = [](const OpCall<TriangleAttributes>& c) {
         const Matrix& x = c.inputs[0];
         if (x.rank() < 2) fail(ErrorKind::InvalidArgument, "{}: x {} must have rank 2 or more (a matrix, or a batch of them)", c.name, x.shape());
         if (x.shape()[x.rank() - 2] > INT32_MAX || x.shape()[x.rank() - 1] > INT32_MAX)
           fail(ErrorKind::InvalidArgument, "{}: x {} has a matrix extent past 2^31 - 1", c.name, x.shape());
         detail::shader_u32(x.numel(), "element count of x", c.name);
         return std::vector<OutputSpec>{{x.shape(), x.dtype()}};
       },
       .lower = every_dtype(lowering),
       .backward = [upper](const BackwardCall<TriangleAttributes>& c) {
         const Matrix& gy = c.grad_outputs[0];
         Matrix gx = detail::allocate(gy.engine(), gy.shape(), gy.dtype());
         std::vector<ComputeDispatch> ds;
         triangle_dispatches(upper, gy, gx, c.attributes.diagonal, c.name, ds);
         c.record(ds, {&gy}, {&gx}, detail::attribute_values(c.attributes));
         return std::vector<Matrix>{gx};
       }});
}

const auto kTrilOp = triangle_op(kTril, false);
const auto kTriuOp = triangle_op(kTriu, true);

// ── one_hot ─────────────────────────────────────────────────────────────────

struct OneHotAttributes {
  std::int64_t num_classes = 0;
  DType dtype = DType::F32;  // the result's, f32 or i32
  std::string dtype_name;    // dtype's name: the trace attribute
  static constexpr auto fields =
      std::tuple{field("num_classes", &OneHotAttributes::num_classes), field("dtype", &OneHotAttributes::dtype_name)};
};

// Integer indices in, f32 or i32 out: not differentiable (no backward).
const Op<OneHotAttributes> kOneHotOp{
    {.name = kOneHot,
     .inputs = {"indices"},
     .infer = [](const OpCall<OneHotAttributes>& c) {
       const Matrix& indices = c.inputs[0];
       const std::int64_t classes = c.attributes.num_classes;
       if (classes < 1 || classes > INT32_MAX)
         fail(ErrorKind::InvalidArgument, "{}: num_classes {} is outside [1, 2^31 - 1] (indices {})", c.name, classes, indices.shape());
       if (c.attributes.dtype != DType::F32 && c.attributes.dtype != DType::I32)
         fail(ErrorKind::InvalidArgument, "{}: dtype {} must be f32 or i32 (indices {})", c.name, to_string(c.attributes.dtype),
              indices.shape());
       if (indices.rank() >= Shape::kMaxRank)
         fail(ErrorKind::InvalidArgument, "{}: indices {} must have rank at most {} (the result adds an axis)", c.name, indices.shape(),
              Shape::kMaxRank - 1);
       std::vector<std::int64_t> dims = indices.shape().to_vector();
       dims.push_back(classes);
       detail::shader_u32(checked_mul(indices.numel(), classes, "one_hot result elements"), "result elements", c.name);
       return std::vector<OutputSpec>{{Shape(dims), c.attributes.dtype}};
     },
     .lower = {{DType::I32, [](const OpCall<OneHotAttributes>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
                  const Matrix& y = out[0];
                  std::uint32_t check = 0;  // one device check, bound by every chunk's dispatch
                  for (auto chunk : detail::element_chunks(y.engine(), y.numel())) {
                    const auto off = static_cast<std::uint64_t>(chunk.begin) * 4, bytes = static_cast<std::uint64_t>(chunk.count) * 4;
                    ComputeDispatch d;
                    d.kernel = kernels::matrix_one_hot;
                    d.specialization = {y.dtype() == DType::I32 ? 1u : std::bit_cast<std::uint32_t>(1.0f)};  // one's bits
                    d.bindings = {BufferBinding::read(c.inputs[0].storage()), BufferBinding::write(y.storage(), off, bytes)};
                    if (check == 0)
                      check = detail::bind_index_check(
                          c.engine, d, c.name, [] { return std::string("num_classes"); }, c.attributes.num_classes);
                    else d.bindings.push_back(BufferBinding::read_write(c.engine.device_check_record()));
                    d.push.set(push::matrix_one_hot{.n = static_cast<std::uint32_t>(chunk.count),
                                                    .base = static_cast<std::uint32_t>(chunk.begin),
                                                    .classes = static_cast<std::uint32_t>(c.attributes.num_classes),
                                                    .check_id = check});
                    d.groups = {detail::groups_for(chunk.count, 1024), 1, 1};
                    ds.push_back(std::move(d));
                  }
                }}}}};

// x cut to `target`'s extents (each no larger than x's) by slices along the axes that differ.
Matrix cut_to(const Matrix& x, const Shape& target) {
  Matrix out = x;
  for (std::size_t d = 0; d < x.rank(); ++d)
    if (target[d] != x.shape()[d]) out = narrow(out, static_cast<int>(d), 0, target[d]);
  return out;
}

}  // namespace

Matrix tril(const Matrix& x, std::int64_t diagonal) { return apply(kTrilOp, {x}, {diagonal})[0]; }
Matrix triu(const Matrix& x, std::int64_t diagonal) { return apply(kTriuOp, {x}, {diagonal})[0]; }

Matrix one_hot(const Matrix& indices, std::int64_t num_classes, DType dtype) {
  return apply(kOneHotOp, {indices}, {num_classes, dtype, std::string(to_string(dtype))})[0];
}

Matrix one_hot(std::span<const std::int32_t> indices, const Shape& shape, std::int64_t num_classes, std::optional<Engine> engine) {
  if (static_cast<std::int64_t>(indices.size()) != shape.numel())
    fail(ErrorKind::InvalidArgument, "{}: {} indices given for shape {} ({} elements)", kOneHot, indices.size(), shape, shape.numel());
  for (std::size_t k = 0; k < indices.size(); ++k)
    if (indices[k] < 0 || indices[k] >= num_classes)
      fail(ErrorKind::InvalidArgument, "{}: index {} at position {} is outside [0, {}) (indices {})", kOneHot, indices[k], k, num_classes,
           shape);
  return one_hot(Matrix::from_i32(shape, indices, std::move(engine)), num_classes);
}

Matrix index_select(const Matrix& x, int dim, const Matrix& index) {
  detail::require_defined(x, kIndexSelect, "x");
  return apply(kIndexSelectOp, {x, index}, {detail::existing_axis(kIndexSelect, x.shape(), dim, "dim")})[0];
}

Matrix index_select(const Matrix& x, int dim, std::span<const std::int32_t> index) {
  detail::require_defined(x, kIndexSelect, "x");
  const std::int64_t n = x.shape()[static_cast<std::size_t>(detail::existing_axis(kIndexSelect, x.shape(), dim, "dim"))];
  for (std::size_t k = 0; k < index.size(); ++k)
    if (index[k] < 0 || index[k] >= n)
      fail(ErrorKind::InvalidArgument, "{}: index {} at position {} is outside [0, {}) (dim {} of x {})", kIndexSelect, index[k], k, n, dim,
           x.shape());
  return index_select(x, dim, Matrix::from_i32({static_cast<std::int64_t>(index.size())}, index, x.engine()));
}

Matrix masked_select(const Matrix& x, const Matrix& mask) {
  constexpr const char* op = "oa::matrix::masked_select";
  detail::require_defined(x, op, "x");
  detail::require_dtype(mask, DType::Bool, op, "mask");
  detail::require_same_engine(x, "x", mask, "mask", op);
  const std::size_t k = mask.rank();
  bool leading = k >= 1 && k <= x.rank();
  for (std::size_t i = 0; leading && i < k; ++i) leading = mask.shape()[i] == x.shape()[i];
  if (!leading)
    fail(ErrorKind::InvalidArgument, "{}: mask {} must have the leading extents of x {} (rank 1 or more)", op, mask.shape(),
         x.shape());
  if (mask.numel() > std::numeric_limits<std::int32_t>::max())
    fail(ErrorKind::InvalidArgument, "{}: mask {} has more than 2^31 - 1 elements", op, mask.shape());
  const std::vector<std::uint8_t> selected = mask.to_bool();
  std::vector<std::int32_t> positions;
  for (std::size_t i = 0; i < selected.size(); ++i)
    if (selected[i] != 0) positions.push_back(static_cast<std::int32_t>(i));
  const Matrix rows = flatten(x, 0, static_cast<int>(k) - 1);
  return index_select(rows, 0, Matrix::from_i32({static_cast<std::int64_t>(positions.size())}, positions, x.engine()));
}

Matrix gather(const Matrix& x, int dim, const Matrix& index) {
  detail::require_defined(x, kGather, "x");
  const std::int64_t d = detail::existing_axis(kGather, x.shape(), dim, "dim");
  detail::require_dtype(index, DType::I32, kGather, "index");
  detail::require_same_engine(x, "x", index, "index", kGather);
  require_index_beside_dim(kGather, x, index, d, true);
  std::vector<std::int64_t> cut = index.shape().to_vector();
  cut[static_cast<std::size_t>(d)] = x.shape()[static_cast<std::size_t>(d)];
  return apply(kGatherOp, {cut_to(x, Shape(cut)), index}, {d})[0];
}

Matrix take_along_axis(const Matrix& x, const Matrix& indices, int axis) {
  detail::require_defined(x, kTakeAlongAxis, "x");
  detail::require_dtype(indices, DType::I32, kTakeAlongAxis, "indices");
  detail::require_same_engine(x, "x", indices, "indices", kTakeAlongAxis);
  const std::int64_t a = detail::existing_axis(kTakeAlongAxis, x.shape(), axis);
  if (indices.rank() != x.rank())
    fail(ErrorKind::InvalidArgument, "{}: indices {} must have the rank of x {}", kTakeAlongAxis, indices.shape(), x.shape());
  std::vector<std::int64_t> xs = x.shape().to_vector(), is = indices.shape().to_vector();
  for (std::size_t d = 0; d < xs.size(); ++d) {
    if (static_cast<std::int64_t>(d) == a || xs[d] == is[d]) continue;
    if (xs[d] != 1 && is[d] != 1)
      fail(ErrorKind::InvalidArgument, "{}: indices {} and x {} do not broadcast outside axis {} (axis {}: {} against {})", kTakeAlongAxis,
           indices.shape(), x.shape(), a, d, is[d], xs[d]);
    xs[d] = is[d] = std::max(xs[d], is[d]);
  }
  return apply(kTakeAlongAxisOp, {expand(x, xs), expand(indices, is)}, {a})[0];
}

TopK topk(const Matrix& x, std::int64_t k, int axis, bool largest) {
  detail::require_defined(x, kTopK, "x");
  const std::int64_t a = detail::existing_axis(kTopK, x.shape(), axis);
  const std::vector<Matrix> r = apply(kTopKOp, {x}, {k, a, largest});
  return {r[0], r[1]};
}

Matrix scatter_add(const Matrix& x, int dim, const Matrix& index, const Matrix& src) {
  detail::require_defined(x, kScatterAdd, "x");
  if (x.dtype() == DType::Bool)
    fail(ErrorKind::InvalidArgument, "{}: x must be f32, f16, bf16 or i32; found bool {}", kScatterAdd, x.shape());
  const std::int64_t d = detail::existing_axis(kScatterAdd, x.shape(), dim, "dim");
  detail::require_dtype(index, DType::I32, kScatterAdd, "index");
  detail::require_defined(src, kScatterAdd, "src");
  detail::require_same_dtype(x, "x", src, "src", kScatterAdd);
  detail::require_same_engine(x, "x", index, "index", kScatterAdd);
  detail::require_same_engine(x, "x", src, "src", kScatterAdd);
  require_index_beside_dim(kScatterAdd, x, index, d, false);
  bool fits = src.rank() == index.rank();
  for (std::size_t a = 0; fits && a < src.rank(); ++a) fits = index.shape()[a] <= src.shape()[a];
  if (!fits)
    fail(ErrorKind::InvalidArgument, "{}: src {} must have index's rank and extents at least index's {} (x {})", kScatterAdd, src.shape(),
         index.shape(), x.shape());
  return apply(kScatterAddOp, {x, index, cut_to(src, index.shape())}, {d})[0];
}

Matrix where(const Matrix& condition, const Matrix& x, const Matrix& y) {
  detail::require_dtype(condition, DType::Bool, kWhere, "condition");
  detail::require_defined(x, kWhere, "x");
  detail::require_dtype(y, x.dtype(), kWhere, "y");
  detail::require_same_engine(condition, "condition", x, "x", kWhere);
  detail::require_same_engine(condition, "condition", y, "y", kWhere);
  const Shape out = detail::broadcast_shapes(kWhere, {{"condition", condition.shape()}, {"x", x.shape()}, {"y", y.shape()}});
  detail::shader_u32(out.numel(), "result elements", kWhere);
  return apply(kWhereOp, {condition, expand(x, out.to_vector()), expand(y, out.to_vector())})[0];
}

Matrix nonzero(const Matrix& x) {
  detail::require_defined(x, kNonzero, "x");
  if (x.numel() > std::numeric_limits<std::int32_t>::max())
    fail(ErrorKind::InvalidArgument, "{}: x {} has more than 2^31 - 1 elements", kNonzero, x.shape());
  // ne with a host 0 compares f32: another dtype is cast first, which keeps zeros zero and every nonzero value
  // nonzero (a 16-bit float widens exactly, an i32's magnitude is at least 1).
  const Matrix flags = x.dtype() == DType::Bool ? x : ne(x.dtype() == DType::F32 ? x : cast(x, DType::F32), 0.0f);
  // The count fixes the result's shape: read back (a synchronization, as torch.nonzero's on a GPU).
  const std::int64_t count = sum_all(flags).to_i32()[0];
  return apply(kNonzeroOp, {flags}, {count})[0];
}

std::vector<Matrix> where(const Matrix& condition) {
  const Matrix rows = nonzero(condition);
  const std::int64_t k = rows.shape()[0];
  // A rank-0 condition counts as one element of a [1] (torch): index 0 when true.
  if (condition.rank() == 0) return {detail::zeros(rows.engine(), Shape{k}, DType::I32)};
  if (condition.rank() == 1) return {rows.reshape({k})};
  std::vector<Matrix> out;
  for (std::int64_t d = 0; d < static_cast<std::int64_t>(condition.rank()); ++d)
    out.push_back(k == 0 ? rows.reshape({0}) : narrow(rows, 1, d, 1).reshape({k}));
  return out;
}

Matrix masked_fill(const Matrix& x, const Matrix& mask, double value) {
  detail::require_defined(x, kMaskedFill, "x");
  detail::require_dtype(mask, DType::Bool, kMaskedFill, "mask");
  detail::require_same_engine(x, "x", mask, "mask", kMaskedFill);
  const Shape out = detail::broadcast_shapes(kMaskedFill, {{"x", x.shape()}, {"mask", mask.shape()}});
  detail::shader_u32(out.numel(), "result elements", kMaskedFill);
  // As torch, a value x's dtype cannot hold is refused: a finite value past the float dtype's largest finite one
  // (infinities and NaN fill), or for i32 one not finite or outside its range once truncated toward zero. Every
  // value converts to bool (nonzero: true).
  const double largest = x.dtype() == DType::F16 ? 65504.0 : x.dtype() == DType::BF16 ? 0x1.fep127 : std::numeric_limits<float>::max();
  const double whole = std::trunc(value);
  const bool overflows = x.dtype() == DType::I32    ? !(whole >= -0x1p31 && whole < 0x1p31)
                         : x.dtype() == DType::Bool ? false
                                                    : std::isfinite(value) && std::abs(value) > largest;
  if (overflows)
    fail(ErrorKind::InvalidArgument, "{}: value {} cannot be converted to {} without overflow (x {})", kMaskedFill, value,
         to_string(x.dtype()), x.shape());
  return apply(kMaskedFillOp, {expand(x, out.to_vector()), mask}, {value})[0];
}

}  // namespace oa::matrix
