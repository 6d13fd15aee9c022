// max_pool_2d, avg_pool_2d and global_avg_pool_2d, each declared once
// (matrix/op_def.hpp): validation, forward and backward lowerings.
#include <climits>

#include "matrix/op_def.hpp"
#include "ml/nn_ops/common.hpp"

namespace oa::ml {

namespace {

using namespace nn_ops;

using namespace detail::op_def;

// A pooling window: [height, width] each, the stride resolved.
struct PoolAttributes {
  std::vector<std::int64_t> kernel_size, stride, padding;
  static constexpr auto fields = std::tuple{detail::field("kernel_size", &PoolAttributes::kernel_size),
                                            detail::field("stride", &PoolAttributes::stride),
                                            detail::field("padding", &PoolAttributes::padding)};
};

// Window parameters and plane sizes stay well inside the kernels' int32 arithmetic.
constexpr std::int64_t kMaxWindow = std::int64_t{1} << 24;

void require_plane(const Shape& s, const char* name) {
  if (s[2] * s[3] > INT32_MAX || s[2] > (INT32_MAX >> 1) || s[3] > (INT32_MAX >> 1))
    fail(ErrorKind::InvalidArgument, "{}: the H * W plane of x {} exceeds what the kernels index (2^31 - 1 elements, 2^30 per axis)",
         name, s);
}

// Validated geometry of a pooling window over x [N, C, H, W].
struct PoolGeometry {
  std::int64_t planes, H, W, OH, OW;
  std::array<std::int64_t, 2> kernel, stride, padding;

  // The push constants of ml/nn/pool2d and pool2d_backward over `n` elements.
  push::ml_nn_pool2d layout(std::int64_t n) const {
    const auto i32 = [](std::int64_t v) { return static_cast<std::int32_t>(v); };
    return {.n = static_cast<std::uint32_t>(n),
            .H = static_cast<std::uint32_t>(H),
            .W = static_cast<std::uint32_t>(W),
            .OH = static_cast<std::uint32_t>(OH),
            .OW = static_cast<std::uint32_t>(OW),
            .KH = i32(kernel[0]),
            .KW = i32(kernel[1]),
            .SH = i32(stride[0]),
            .SW = i32(stride[1]),
            .PH = i32(padding[0]),
            .PW = i32(padding[1])};
  }
};

PoolGeometry resolve(const Shape& s, const PoolAttributes& o, const char* name) {
  if (s.rank() != 4 || s[1] == 0 || s[2] == 0 || s[3] == 0)  // a batch of N = 0 is an empty batch
    fail(ErrorKind::InvalidArgument, "{}: x must be NCHW with nonzero C, H and W; found {}", name, s);
  auto pair = [](const std::vector<std::int64_t>& v) { return std::array<std::int64_t, 2>{v[0], v[1]}; };
  PoolGeometry g{s[0] * s[1], s[2], s[3], 0, 0, pair(o.kernel_size), pair(o.stride), pair(o.padding)};
  for (int a = 0; a < 2; ++a) {
    const std::int64_t in = s[2 + a], k = g.kernel[a], st = g.stride[a], p = g.padding[a];
    if (k < 1 || st < 1 || p < 0)
      fail(ErrorKind::InvalidArgument, "{}: kernel_size [{}, {}] and stride [{}, {}] must be >= 1 and padding [{}, {}] >= 0 (x {})", name,
           g.kernel[0], g.kernel[1], g.stride[0], g.stride[1], g.padding[0], g.padding[1], s);
    if (2 * p > k)
      fail(ErrorKind::InvalidArgument, "{}: padding [{}, {}] must be at most half of kernel_size [{}, {}] (x {})", name, g.padding[0],
           g.padding[1], g.kernel[0], g.kernel[1], s);
    const std::int64_t padded = checked_add(in, 2 * p, "padded extent");
    if (padded < k)
      fail(ErrorKind::InvalidArgument, "{}: kernel_size [{}, {}] exceeds the padded input of x {} (padding [{}, {}])", name, g.kernel[0],
           g.kernel[1], s, g.padding[0], g.padding[1]);
    (a == 0 ? g.OH : g.OW) = (padded - k) / st + 1;
  }
  for (const auto& v : {g.kernel, g.stride, g.padding})
    for (auto e : v)
      if (e > kMaxWindow)
        fail(ErrorKind::InvalidArgument, "{}: kernel_size, stride and padding must be at most {}; found {} (x {})", name, kMaxWindow, e, s);
  require_plane(s, name);
  detail::shader_u32(s.numel(), "element count of x", name);
  detail::shader_u32(checked_mul(checked_mul(g.planes, g.OH, "output size"), g.OW, "output size"), "element count of the output", name);
  return g;
}

// dx of a pooling op from dy [.., OH, OW] (and the saved argmax indices for
// max pooling; undefined otherwise), recorded as one backward op.
template <class A>
Matrix pool_backward(const BackwardCall<A>& c, const Matrix& index, const PoolGeometry& g) {
  const Matrix& gy = c.grad_outputs[0];
  const Shape& x_shape = c.input_shapes[0];
  const Engine& engine = gy.engine();
  Matrix dx = detail::allocate(engine, x_shape);
  if (dx.numel() == 0) {  // an empty batch: no dispatch
    c.record({}, {&gy, &index}, {&dx});
    return dx;
  }
  ComputeDispatch d;
  d.kernel = kernels::ml_nn_pool2d_backward;
  d.specialization = {index.defined()};
  d.bindings = {BufferBinding::read(gy.storage()), BufferBinding::read(index.defined() ? index.storage() : gy.storage()),
                BufferBinding::write(dx.storage())};
  d.push.set(g.layout(dx.numel()));
  d.groups = {detail::groups_for(dx.numel(), 256), 1, 1};
  c.record({&d, 1}, {&gy, &index}, {&dx});
  return dx;
}

// max_pool_2d (max: outputs y and the auxiliary i32 argmax that the backward
// reads) or avg_pool_2d over x [N, C, H, W] (ml/nn/pool2d).
detail::Op<PoolAttributes> pool_op(const char* name, bool max) {
  return detail::Op<PoolAttributes>(
      {.name = name,
       .inputs = {"x"},
       .infer = [max](const OpCall<PoolAttributes>& c) {
         const PoolGeometry g = resolve(c.inputs[0].shape(), c.attributes, c.name);
         const Shape& s = c.inputs[0].shape();
         std::vector<OutputSpec> out{{Shape{s[0], s[1], g.OH, g.OW}}};
         if (max) out.push_back({out[0].shape, DType::I32, true});
         return out;
       },
       .lower = {{DType::F32,
                  [max](const OpCall<PoolAttributes>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
                    const PoolGeometry g = resolve(c.inputs[0].shape(), c.attributes, c.name);
                    if (out[0].numel() == 0) return;  // an empty batch
                    ComputeDispatch d;
                    d.kernel = kernels::ml_nn_pool2d;
                    d.specialization = {max};
                    d.bindings = {BufferBinding::read(c.inputs[0].storage()), BufferBinding::write(out[0].storage()),
                                  BufferBinding::write(max ? out[1].storage() : unused_output(c.engine))};
                    d.push.set(g.layout(out[0].numel()));
                    d.groups = {detail::groups_for(out[0].numel(), 256), 1, 1};
                    ds.push_back(std::move(d));
                  }}},
       .saves = [max](const OpCall<PoolAttributes>&, const std::vector<bool>&) { return Saves{{}, {false, max}}; },
       .backward = [max](const BackwardCall<PoolAttributes>& c) {
         const PoolGeometry g = resolve(c.input_shapes[0], c.attributes, c.name);
         return std::vector<Matrix>{pool_backward(c, max ? c.outputs[1] : Matrix(), g)};
       }});
}

const detail::Op<PoolAttributes> kMaxPool = pool_op("oa::ml::max_pool_2d", true);
const detail::Op<PoolAttributes> kAvgPool = pool_op("oa::ml::avg_pool_2d", false);

PoolAttributes window(const Pool2dOptions& o) {
  const auto stride = o.stride.value_or(o.kernel_size);
  return {{o.kernel_size[0], o.kernel_size[1]}, {stride[0], stride[1]}, {o.padding[0], o.padding[1]}};
}

// The mean of each H * W plane of x [N, C, H, W]: y [N, C] (no dispatch for
// no planes). Its gradient is the average pooling gradient of one window
// covering the plane.
const detail::Op<NoAttributes> kGlobalAvgPool{
    {.name = "oa::ml::global_avg_pool_2d",
     .inputs = {"x"},
     .infer = [](const OpCall<NoAttributes>& c) {
       const Shape& s = c.inputs[0].shape();
       if (s.rank() != 4 || s[2] == 0 || s[3] == 0)  // N = 0 or C = 0: an empty result, as torch
         fail(ErrorKind::InvalidArgument, "{}: x must be NCHW with nonzero H and W; found {}", c.name, s);
       detail::shader_u32(s.numel(), "element count of x", c.name);
       require_plane(s, c.name);
       return std::vector<OutputSpec>{{Shape{s[0], s[1]}}};
     },
     .lower = {{DType::F32,
                [](const OpCall<NoAttributes>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
                  const Shape& s = c.inputs[0].shape();
                  const std::int64_t area = s[2] * s[3];
                  if (s[0] * s[1] == 0) return;
                  detail::reduce_rows(c.engine, c.inputs[0].storage(), s[0] * s[1], area, detail::RowReduction::Sum,
                                      static_cast<float>(1.0 / static_cast<double>(area)), out[0].storage(), ds);
                }}},
     .backward = [](const BackwardCall<NoAttributes>& c) {
       const Shape& s = c.input_shapes[0];
       const PoolGeometry g{s[0] * s[1], s[2], s[3], 1, 1, {s[2], s[3]}, {s[2], s[3]}, {0, 0}};
       return std::vector<Matrix>{pool_backward(c, Matrix(), g)};
     }}};

}  // namespace

Pool2dOptions Pool2dOptions::square(std::int64_t kernel_size, std::int64_t stride, std::int64_t padding) {
  Pool2dOptions o{{kernel_size, kernel_size}, std::nullopt, {padding, padding}};
  if (stride != 0) o.stride = std::array<std::int64_t, 2>{stride, stride};
  return o;
}

Matrix max_pool_2d(const Matrix& x, const Pool2dOptions& options) { return detail::apply(kMaxPool, {x}, window(options))[0]; }
Matrix avg_pool_2d(const Matrix& x, const Pool2dOptions& options) { return detail::apply(kAvgPool, {x}, window(options))[0]; }
Matrix max_pool_2d(const Matrix& x, std::int64_t kernel_size, std::int64_t stride, std::int64_t padding) {
  return max_pool_2d(x, Pool2dOptions::square(kernel_size, stride, padding));
}
Matrix avg_pool_2d(const Matrix& x, std::int64_t kernel_size, std::int64_t stride, std::int64_t padding) {
  return avg_pool_2d(x, Pool2dOptions::square(kernel_size, stride, padding));
}

Matrix global_avg_pool_2d(const Matrix& x) { return detail::apply(kGlobalAvgPool, {x})[0]; }

}  // namespace oa::ml
