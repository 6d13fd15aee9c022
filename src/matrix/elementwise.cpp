#include "oa/matrix/elementwise.hpp"

#include "matrix/lowering.hpp"

namespace oa::matrix {

namespace {

using runtime::BufferBinding;
using runtime::ComputeDispatch;

enum UnaryOp : std::uint32_t { Neg, Exp, Log, Sqrt, Relu, Gelu, Tanh, Sigmoid, Clamp, Affine, Abs, Square, Rsqrt, Reciprocal };
enum BinaryOp : std::uint32_t { Add, Sub, Mul, Div, Max, Min };

const char* const kUnaryNames[] = {"oa::matrix::neg",   "oa::matrix::exp",     "oa::matrix::log",    "oa::matrix::sqrt",
                                   "oa::matrix::relu",  "oa::matrix::gelu",    "oa::matrix::tanh",   "oa::matrix::sigmoid",
                                   "oa::matrix::clamp", "oa::matrix::affine",  "oa::matrix::abs",    "oa::matrix::square",
                                   "oa::matrix::rsqrt", "oa::matrix::reciprocal"};
const char* const kBinaryNames[] = {"oa::matrix::add", "oa::matrix::sub",     "oa::matrix::mul",
                                    "oa::matrix::div", "oa::matrix::maximum", "oa::matrix::minimum"};

const bool kRegistered = [] {
  for (auto* n : kUnaryNames) {
    std::vector<AttributeSpec> attrs;
    if (std::string_view(n) == "oa::matrix::clamp") attrs = {{"low", AttributeType::Float}, {"high", AttributeType::Float}};
    if (std::string_view(n) == "oa::matrix::affine") attrs = {{"alpha", AttributeType::Float}, {"beta", AttributeType::Float}};
    register_contract({n, 1, 1, attrs});
  }
  for (auto* n : kBinaryNames) register_contract({n, 2, 1, {}});
  return true;
}();

Matrix unary(const Matrix& x, UnaryOp op, float a = 0, float b = 0, std::vector<OpAttribute> attrs = {}) {
  const char* name = kUnaryNames[op];
  detail::require_f32(x, name, "x");
  Matrix y = detail::allocate(x.engine(), x.shape());
  std::vector<ComputeDispatch> ds;
  for (auto c : detail::element_chunks(x.engine(), x.numel())) {
    const auto off = static_cast<std::uint64_t>(c.begin) * 4, bytes = static_cast<std::uint64_t>(c.count) * 4;
    ComputeDispatch d;
    d.kernel = "matrix/unary";
    d.specialization = {op};
    d.bindings = {BufferBinding::read(x.storage(), off, bytes), BufferBinding::write(y.storage(), off, bytes)};
    d.push.u32(static_cast<std::uint32_t>(c.count)).f32(a).f32(b);
    d.groups = {detail::groups_for(c.count, 1024), 1, 1};
    ds.push_back(std::move(d));
  }
  x.engine().record(detail::semantic(name, {&x}, {&y}, std::move(attrs)), ds);
  return y;
}

// Finds [outer, C, inner] such that `small` broadcast to `big` is indexed by
// (i / inner) % C; returns false when the pattern is not a contiguous run.
bool broadcast_layout(const Shape& big, const Shape& small, std::int64_t& channels, std::int64_t& inner) {
  if (small.rank() > big.rank()) return false;
  const std::size_t shift = big.rank() - small.rank();
  int first = -1, last = -1;
  for (std::size_t i = 0; i < small.rank(); ++i) {
    const auto s = small[i], g = big[i + shift];
    if (s == g && s != 1) {
      if (first < 0) first = static_cast<int>(i + shift);
      else if (last != static_cast<int>(i + shift) - 1) return false;
      last = static_cast<int>(i + shift);
    } else if (s != 1) {
      return false;
    }
  }
  channels = 1;
  inner = 1;
  if (first < 0) return true;
  for (int i = first; i <= last; ++i) channels *= big[i];
  for (std::size_t i = last + 1; i < big.rank(); ++i) inner *= big[i];
  return true;
}

Matrix binary(const Matrix& a, const Matrix& b, BinaryOp op) {
  const char* name = kBinaryNames[op];
  detail::require_f32(a, name, "a");
  detail::require_f32(b, name, "b");
  detail::require_same_engine(a, b, name);
  std::uint32_t mode = 0;
  std::int64_t channels = 1, inner = 1;
  const Shape* out_shape = &a.shape();
  if (!(a.shape() == b.shape())) {
    if (broadcast_layout(a.shape(), b.shape(), channels, inner)) {
      mode = 1;
    } else if (broadcast_layout(b.shape(), a.shape(), channels, inner)) {
      mode = 2;
      out_shape = &b.shape();
    } else {
      fail(ErrorKind::InvalidArgument,
           "{}: shapes {} and {} do not broadcast (one operand must match the other's shape, be a scalar, or span one "
           "contiguous run of its axes)",
           name, a.shape(), b.shape());
    }
  }
  Matrix z = detail::allocate(a.engine(), *out_shape);
  std::vector<ComputeDispatch> ds;
  for (auto c : detail::element_chunks(a.engine(), z.numel())) {
    const auto off = static_cast<std::uint64_t>(c.begin) * 4, bytes = static_cast<std::uint64_t>(c.count) * 4;
    ComputeDispatch d;
    d.kernel = "matrix/binary";
    d.specialization = {op, mode};
    auto bind = [&](const Matrix& m) {
      return (mode == 1 && &m == &b) || (mode == 2 && &m == &a) ? BufferBinding::read(m.storage())
                                                                 : BufferBinding::read(m.storage(), off, bytes);
    };
    d.bindings = {bind(a), bind(b), BufferBinding::write(z.storage(), off, bytes)};
    d.push.u32(static_cast<std::uint32_t>(c.count))
        .u32(detail::shader_u32(c.begin, "element index", name))
        .u32(detail::shader_u32(channels, "broadcast extent", name))
        .u32(detail::shader_u32(inner, "broadcast stride", name));
    d.groups = {detail::groups_for(c.count, 1024), 1, 1};
    ds.push_back(std::move(d));
  }
  a.engine().record(detail::semantic(name, {&a, &b}, {&z}), ds);
  return z;
}

}  // namespace

Matrix add(const Matrix& a, const Matrix& b) { return binary(a, b, Add); }
Matrix sub(const Matrix& a, const Matrix& b) { return binary(a, b, Sub); }
Matrix mul(const Matrix& a, const Matrix& b) { return binary(a, b, Mul); }
Matrix div(const Matrix& a, const Matrix& b) { return binary(a, b, Div); }
Matrix maximum(const Matrix& a, const Matrix& b) { return binary(a, b, Max); }
Matrix minimum(const Matrix& a, const Matrix& b) { return binary(a, b, Min); }

Matrix affine(const Matrix& x, float alpha, float beta) {
  return unary(x, Affine, alpha, beta, {{"alpha", double(alpha)}, {"beta", double(beta)}});
}
Matrix add(const Matrix& a, float s) { return affine(a, 1.0f, s); }
Matrix sub(const Matrix& a, float s) { return affine(a, 1.0f, -s); }
Matrix mul(const Matrix& a, float s) { return affine(a, s, 0.0f); }
Matrix div(const Matrix& a, float s) { return affine(a, 1.0f / s, 0.0f); }

Matrix neg(const Matrix& x) { return unary(x, Neg); }
Matrix exp(const Matrix& x) { return unary(x, Exp); }
Matrix log(const Matrix& x) { return unary(x, Log); }
Matrix sqrt(const Matrix& x) { return unary(x, Sqrt); }
Matrix rsqrt(const Matrix& x) { return unary(x, Rsqrt); }
Matrix reciprocal(const Matrix& x) { return unary(x, Reciprocal); }
Matrix abs(const Matrix& x) { return unary(x, Abs); }
Matrix square(const Matrix& x) { return unary(x, Square); }
Matrix relu(const Matrix& x) { return unary(x, Relu); }
Matrix gelu(const Matrix& x) { return unary(x, Gelu); }
Matrix tanh(const Matrix& x) { return unary(x, Tanh); }
Matrix sigmoid(const Matrix& x) { return unary(x, Sigmoid); }
Matrix clamp(const Matrix& x, float low, float high) {
  if (!(low <= high)) fail(ErrorKind::InvalidArgument, "oa::matrix::clamp: low {} exceeds high {} (x {})", low, high, x.shape());
  return unary(x, Clamp, low, high, {{"low", double(low)}, {"high", double(high)}});
}

}  // namespace oa::matrix
