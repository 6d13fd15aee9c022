#include "oa/matrix/elementwise.hpp"

#include "matrix/lowering.hpp"
#include "oa/matrix/autograd.hpp"
#include "oa/matrix/reduction.hpp"

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

// What the backward of each unary op reads: its input, its output, or nothing.
enum class Saves { Nothing, Input, Output };
constexpr Saves kUnarySaves[] = {Saves::Nothing, Saves::Output, Saves::Input,  Saves::Output, Saves::Input,
                                 Saves::Input,   Saves::Output, Saves::Output, Saves::Input,  Saves::Nothing,
                                 Saves::Input,   Saves::Input,  Saves::Output, Saves::Output};

// Records out = kernel(x [, s]) over flat element chunks of x: the forward
// (matrix/unary) or backward (matrix/unary_backward, reading gy and saved s).
Matrix unary_lowering(const char* name, std::string_view kernel, UnaryOp op, const Matrix& x, const Matrix* saved, float a,
                      float b, std::vector<OpAttribute> attrs, bool backward) {
  Matrix y = detail::allocate(x.engine(), x.shape());
  std::vector<ComputeDispatch> ds;
  for (auto c : detail::element_chunks(x.engine(), x.numel())) {
    const auto off = static_cast<std::uint64_t>(c.begin) * 4, bytes = static_cast<std::uint64_t>(c.count) * 4;
    ComputeDispatch d;
    d.kernel = kernel;
    d.specialization = {op};
    d.bindings = {BufferBinding::read(x.storage(), off, bytes)};
    if (saved) d.bindings.push_back(BufferBinding::read(saved->storage(), off, bytes));
    d.bindings.push_back(BufferBinding::write(y.storage(), off, bytes));
    d.push.u32(static_cast<std::uint32_t>(c.count)).f32(a).f32(b);
    d.groups = {detail::groups_for(c.count, 1024), 1, 1};
    ds.push_back(std::move(d));
  }
  if (saved) x.engine().record(detail::semantic(name, {&x, saved}, {&y}, std::move(attrs), backward), ds);
  else x.engine().record(detail::semantic(name, {&x}, {&y}, std::move(attrs), backward), ds);
  return y;
}

// gx = gy * f'(.) for unary op `op`, recorded as the backward of `name`;
// `saved` is what kUnarySaves names (gy itself where nothing is saved).
Matrix unary_backward(const char* name, UnaryOp op, const Matrix& gy, const Matrix& saved, float a, float b) {
  return unary_lowering(name, "matrix/unary_backward", op, gy, &saved, a, b, {}, true);
}

Matrix unary(const Matrix& x, UnaryOp op, float a = 0, float b = 0, std::vector<OpAttribute> attrs = {}) {
  const char* name = kUnaryNames[op];
  detail::require_f32(x, name, "x");
  Matrix y = unary_lowering(name, "matrix/unary", op, x, nullptr, a, b, std::move(attrs), false);
  if (autograd::needs_record({&x})) {
    const Saves saves = kUnarySaves[op];
    autograd::SavedValue saved = saves == Saves::Input ? autograd::SavedValue(x)
                                 : saves == Saves::Output ? autograd::SavedValue(y)
                                                          : autograd::SavedValue();
    autograd::record(name, {x}, {y}, [name, op, a, b, saved](const std::vector<Matrix>& gy, const std::vector<bool>&) {
      const Matrix& s = saved.get();
      return std::vector<Matrix>{unary_backward(name, op, gy[0], s.defined() ? s : gy[0], a, b)};
    });
  }
  return y;
}

// How the operands of a binary op meet: mode 0 same shape, 1 b broadcast,
// 2 a broadcast, with the broadcast operand indexed by (i / inner) % channels.
struct Broadcast {
  std::uint32_t mode = 0;
  std::int64_t channels = 1, inner = 1;
  Shape out;
};

Broadcast resolve_broadcast(const Matrix& a, const Matrix& b, const char* name) {
  Broadcast r;
  r.out = a.shape();
  if (a.shape() == b.shape()) return r;
  if (detail::broadcast_layout(a.shape(), b.shape(), r.channels, r.inner)) {
    r.mode = 1;
  } else if (detail::broadcast_layout(b.shape(), a.shape(), r.channels, r.inner)) {
    r.mode = 2;
    r.out = b.shape();
  } else {
    fail(ErrorKind::InvalidArgument,
         "{}: shapes {} and {} do not broadcast (one operand must match the other's shape, be a scalar, or span one "
         "contiguous run of its axes)",
         name, a.shape(), b.shape());
  }
  return r;
}

// Records one dispatch per element chunk of the output: the forward
// (matrix/binary: a, b -> out) or a backward (matrix/binary_backward: gy, a, b
// -> the gradient of one operand at the output's shape).
std::vector<ComputeDispatch> binary_dispatches(std::string_view kernel, std::vector<std::uint32_t> specialization,
                                               const Matrix* gy, const Matrix& a, const Matrix& b, const Matrix& out,
                                               const Broadcast& bc, const char* name) {
  std::vector<ComputeDispatch> ds;
  for (auto c : detail::element_chunks(out.engine(), out.numel())) {
    const auto off = static_cast<std::uint64_t>(c.begin) * 4, bytes = static_cast<std::uint64_t>(c.count) * 4;
    ComputeDispatch d;
    d.kernel = kernel;
    d.specialization = specialization;
    auto bind = [&](const Matrix& m, bool broadcast) {
      return broadcast ? BufferBinding::read(m.storage()) : BufferBinding::read(m.storage(), off, bytes);
    };
    if (gy) d.bindings.push_back(bind(*gy, false));
    d.bindings.push_back(bind(a, bc.mode == 2));
    d.bindings.push_back(bind(b, bc.mode == 1));
    d.bindings.push_back(BufferBinding::write(out.storage(), off, bytes));
    d.push.u32(static_cast<std::uint32_t>(c.count))
        .u32(detail::shader_u32(c.begin, "element index", name))
        .u32(detail::shader_u32(bc.channels, "broadcast extent", name))
        .u32(detail::shader_u32(bc.inner, "broadcast stride", name));
    d.groups = {detail::groups_for(c.count, 1024), 1, 1};
    ds.push_back(std::move(d));
  }
  return ds;
}

// The backward of binary op `op`: gradients of a and b (of shapes `shape_a`,
// `shape_b`) from gy (of the output's shape), each summed back to its
// operand's shape where it was broadcast. a and b are the saved operands,
// undefined where no needed gradient reads them (see binary()).
std::vector<Matrix> binary_backward(BinaryOp op, const Matrix& gy, const Matrix& a, const Matrix& b, const Shape& shape_a,
                                    const Shape& shape_b, const Broadcast& bc, const std::vector<bool>& needs) {
  const char* name = kBinaryNames[op];
  std::vector<Matrix> g(2);
  if (op == Add || op == Sub) {  // d/da = 1, d/db = +-1: no kernel unless negating
    if (needs[0]) g[0] = gy;
    if (needs[1]) g[1] = op == Add ? gy : unary_backward(name, Neg, gy, gy, 0, 0);
  } else {
    // An operand that was not saved is not read: gy stands in for its binding.
    const Matrix& bound_a = a.defined() ? a : gy;
    const Matrix& bound_b = b.defined() ? b : gy;
    std::vector<ComputeDispatch> ds;
    for (std::uint32_t which = 0; which < 2; ++which) {
      if (!needs[which]) continue;
      g[which] = detail::allocate(gy.engine(), gy.shape());
      auto part = binary_dispatches("matrix/binary_backward", {op, bc.mode, which}, &gy, bound_a, bound_b, g[which], bc, name);
      ds.insert(ds.end(), part.begin(), part.end());
    }
    SemanticOp sem = detail::semantic(name, {&gy}, {}, {}, true);
    for (const Matrix* m : {&a, &b})
      if (m->defined()) sem.inputs.push_back(m->shape());
    for (const Matrix& m : g)
      if (m.defined()) sem.outputs.push_back(m.shape());
    gy.engine().record(std::move(sem), ds);
  }
  if (needs[0] && !(shape_a == gy.shape())) g[0] = sum_to(g[0], shape_a);
  if (needs[1] && !(shape_b == gy.shape())) g[1] = sum_to(g[1], shape_b);
  return g;
}

Matrix binary(const Matrix& a, const Matrix& b, BinaryOp op) {
  const char* name = kBinaryNames[op];
  detail::require_f32(a, name, "a");
  detail::require_f32(b, name, "b");
  detail::require_same_engine(a, b, name);
  const Broadcast bc = resolve_broadcast(a, b, name);
  Matrix z = detail::allocate(a.engine(), bc.out);
  a.engine().record(detail::semantic(name, {&a, &b}, {&z}),
                    binary_dispatches("matrix/binary", {op, bc.mode}, nullptr, a, b, z, bc, name));
  if (autograd::needs_record({&a, &b})) {
    // Save what the needed gradients read: add and sub nothing; mul's ga reads
    // b and gb reads a; div's ga reads b and gb both; maximum and minimum both.
    const bool ga = requires_grad(a), gb = requires_grad(b);
    const bool save_a = op == Max || op == Min || ((op == Mul || op == Div) && gb);
    const bool save_b = op == Max || op == Min || op == Div || (op == Mul && ga);
    autograd::SavedValue sa = save_a ? autograd::SavedValue(a) : autograd::SavedValue();
    autograd::SavedValue sb = save_b ? autograd::SavedValue(b) : autograd::SavedValue();
    autograd::record(name, {a, b}, {z},
                     [op, bc, sa, sb, shape_a = a.shape(), shape_b = b.shape()](const std::vector<Matrix>& gy,
                                                                                const std::vector<bool>& needs) {
                       return binary_backward(op, gy[0], sa.get(), sb.get(), shape_a, shape_b, bc, needs);
                     });
  }
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
