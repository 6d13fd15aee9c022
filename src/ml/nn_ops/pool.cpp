// max_pool_2d, avg_pool_2d and global_avg_pool_2d: validation, forward and
// backward lowerings, autograd rules.
#include <climits>

#include "ml/nn_ops/common.hpp"

namespace oa::ml {

namespace {

using namespace nn_ops;

constexpr const char* kMaxPool = "oa::ml::max_pool_2d";
constexpr const char* kAvgPool = "oa::ml::avg_pool_2d";
constexpr const char* kGlobalAvgPool = "oa::ml::global_avg_pool_2d";

const bool kRegistered = [] {
  for (const char* name : {kMaxPool, kAvgPool})
    register_contract({name, 1, 1, {{"kernel_size", AttributeType::Ints}, {"stride", AttributeType::Ints}, {"padding", AttributeType::Ints}}});
  register_contract({kGlobalAvgPool, 1, 1, {}});
  return true;
}();

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

  void push(runtime::PushConstants& push, std::int64_t n) const {
    push.u32(static_cast<std::uint32_t>(n)).u32(static_cast<std::uint32_t>(H)).u32(static_cast<std::uint32_t>(W));
    push.u32(static_cast<std::uint32_t>(OH)).u32(static_cast<std::uint32_t>(OW));
    for (const auto& a : {kernel, stride, padding})
      push.i32(static_cast<std::int32_t>(a[0])).i32(static_cast<std::int32_t>(a[1]));
  }
};

PoolGeometry resolve(const Matrix& x, const Pool2dOptions& o, const char* name) {
  detail::require_f32(x, name, "x");
  const Shape& s = x.shape();
  if (s.rank() != 4 || s.numel() == 0) fail(ErrorKind::InvalidArgument, "{}: x must be NCHW with nonzero extents; found {}", name, s);
  PoolGeometry g{s[0] * s[1], s[2], s[3], 0, 0, o.kernel_size, o.stride.value_or(o.kernel_size), o.padding};
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

std::vector<OpAttribute> attributes(const PoolGeometry& g) {
  auto list = [](const std::array<std::int64_t, 2>& a) { return std::vector<std::int64_t>{a[0], a[1]}; };
  return {{"kernel_size", list(g.kernel)}, {"stride", list(g.stride)}, {"padding", list(g.padding)}};
}

// dx of a pooling op from dy [.., OH, OW] (and the saved argmax indices for
// max pooling), recorded as one "<name> backward" op.
Matrix pool_backward(const Matrix& gy, const Matrix& index, const Shape& x_shape, const PoolGeometry& g, const char* name) {
  const Engine& engine = gy.engine();
  Matrix dx = detail::allocate(engine, x_shape);
  ComputeDispatch d;
  d.kernel = "ml/nn/pool2d_backward";
  d.specialization = {index.defined()};
  d.bindings = {BufferBinding::read(gy.storage()), BufferBinding::read(index.defined() ? index.storage() : gy.storage()),
                BufferBinding::write(dx.storage())};
  g.push(d.push, dx.numel());
  d.groups = {detail::groups_for(dx.numel(), 256), 1, 1};
  SemanticOp op = index.defined() ? detail::semantic(name, {&gy, &index}, {&dx}, {}, true) : detail::semantic(name, {&gy}, {&dx}, {}, true);
  engine.record(std::move(op), {&d, 1});
  return dx;
}

Matrix pool(const Matrix& x, const Pool2dOptions& options, bool max, const char* name) {
  const PoolGeometry g = resolve(x, options, name);
  const Engine& engine = x.engine();
  const Shape& s = x.shape();
  Matrix y = detail::allocate(engine, Shape{s[0], s[1], g.OH, g.OW});
  Matrix index = max ? detail::allocate(engine, y.shape(), DType::I32) : Matrix();
  ComputeDispatch d;
  d.kernel = "ml/nn/pool2d";
  d.specialization = {max};
  d.bindings = {BufferBinding::read(x.storage()), BufferBinding::write(y.storage()),
                BufferBinding::write(max ? index.storage() : unused_output(engine))};
  g.push(d.push, y.numel());
  d.groups = {detail::groups_for(y.numel(), 256), 1, 1};
  engine.record(detail::semantic(name, {&x}, {&y}, attributes(g)), {&d, 1});
  autograd::record(name, {x}, {y}, [sindex = autograd::SavedValue(index), shape = s, g, name](const std::vector<Matrix>& gy, const std::vector<bool>&) {
    return std::vector<Matrix>{pool_backward(gy[0], sindex.get(), shape, g, name)};
  });
  return y;
}

Pool2dOptions square(std::int64_t kernel_size, std::int64_t stride, std::int64_t padding) {
  Pool2dOptions o{{kernel_size, kernel_size}, std::nullopt, {padding, padding}};
  if (stride != 0) o.stride = std::array<std::int64_t, 2>{stride, stride};
  return o;
}

}  // namespace

Matrix max_pool_2d(const Matrix& x, const Pool2dOptions& options) { return pool(x, options, true, kMaxPool); }
Matrix avg_pool_2d(const Matrix& x, const Pool2dOptions& options) { return pool(x, options, false, kAvgPool); }
Matrix max_pool_2d(const Matrix& x, std::int64_t kernel_size, std::int64_t stride, std::int64_t padding) {
  return max_pool_2d(x, square(kernel_size, stride, padding));
}
Matrix avg_pool_2d(const Matrix& x, std::int64_t kernel_size, std::int64_t stride, std::int64_t padding) {
  return avg_pool_2d(x, square(kernel_size, stride, padding));
}

Matrix global_avg_pool_2d(const Matrix& x) {
  detail::require_f32(x, kGlobalAvgPool, "x");
  const Shape& s = x.shape();
  if (s.rank() != 4 || s.numel() == 0)
    fail(ErrorKind::InvalidArgument, "{}: x must be NCHW with nonzero extents; found {}", kGlobalAvgPool, s);
  detail::shader_u32(s.numel(), "element count of x", kGlobalAvgPool);
  require_plane(s, kGlobalAvgPool);
  const Engine& engine = x.engine();
  const std::int64_t planes = s[0] * s[1], area = s[2] * s[3];
  Matrix y = detail::allocate(engine, Shape{s[0], s[1]});
  std::vector<ComputeDispatch> ds;
  detail::reduce_rows(engine, x.storage(), planes, area, detail::RowReduction::Sum, static_cast<float>(1.0 / static_cast<double>(area)),
                      y.storage(), ds);
  engine.record(detail::semantic(kGlobalAvgPool, {&x}, {&y}), ds);
  // The gradient is the average pooling gradient of one window covering the plane.
  const PoolGeometry g{planes, s[2], s[3], 1, 1, {s[2], s[3]}, {s[2], s[3]}, {0, 0}};
  autograd::record(kGlobalAvgPool, {x}, {y}, [shape = s, g](const std::vector<Matrix>& gy, const std::vector<bool>&) {
    return std::vector<Matrix>{pool_backward(gy[0], Matrix(), shape, g, kGlobalAvgPool)};
  });
  return y;
}

}  // namespace oa::ml
