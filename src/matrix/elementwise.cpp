#include "oa/matrix/elementwise.hpp"

#include "matrix/cast_lowering.hpp"
#include "matrix/op_def.hpp"
#include "oa/matrix/autograd.hpp"
#include "oa/matrix/layout.hpp"
#include "oa/matrix/reduction.hpp"

namespace oa::matrix {

namespace {

using namespace detail::op_def;

// Op codes of matrix/unary.comp and matrix/unary_backward.comp.
#define OA_UNARY_CODE(name, value) name = value,
#define OA_BINARY_CODE(name, value)
#define OA_COMPARE_CODE(name, value)
enum UnaryCode : std::uint32_t {
#include "common/elementwise_codes.h"
};
#undef OA_UNARY_CODE
#undef OA_BINARY_CODE
#undef OA_COMPARE_CODE
// Op codes of matrix/binary.comp and matrix/binary_backward.comp.
#define OA_UNARY_CODE(name, value)
#define OA_BINARY_CODE(name, value) name = value,
#define OA_COMPARE_CODE(name, value)
enum BinaryCode : std::uint32_t {
#include "common/elementwise_codes.h"
};
#undef OA_UNARY_CODE
#undef OA_BINARY_CODE
#undef OA_COMPARE_CODE
// Op codes of matrix/compare.comp.
#define OA_UNARY_CODE(name, value)
#define OA_BINARY_CODE(name, value)
#define OA_COMPARE_CODE(name, value) name = value,
enum CompareCode : std::uint32_t {
#include "common/elementwise_codes.h"
};
#undef OA_UNARY_CODE
#undef OA_BINARY_CODE
#undef OA_COMPARE_CODE

struct ClampAttributes {
  float low = 0, high = 0;
  static constexpr auto fields = std::tuple{field("low", &ClampAttributes::low), field("high", &ClampAttributes::high)};
};
struct AffineAttributes {
  float alpha = 1, beta = 0;
  static constexpr auto fields = std::tuple{field("alpha", &AffineAttributes::alpha), field("beta", &AffineAttributes::beta)};
};

struct SlopeAttributes {
  float negative_slope = 0.01f;
  static constexpr auto fields = std::tuple{field("negative_slope", &SlopeAttributes::negative_slope)};
};
struct AlphaAttributes {
  float alpha = 1;
  static constexpr auto fields = std::tuple{field("alpha", &AlphaAttributes::alpha)};
};
struct ExponentAttributes {
  float exponent = 1;
  static constexpr auto fields = std::tuple{field("exponent", &ExponentAttributes::exponent)};
};

// The parameters (a, b) of the unary kernels: clamp's bounds, affine's a * x
// + b, leaky_relu's negative slope, elu's alpha.
std::pair<float, float> unary_parameters(const NoAttributes&) { return {0.0f, 0.0f}; }
std::pair<float, float> unary_parameters(const SlopeAttributes& c) { return {c.negative_slope, 0.0f}; }
std::pair<float, float> unary_parameters(const AlphaAttributes& c) { return {c.alpha, 0.0f}; }
std::pair<float, float> unary_parameters(const ExponentAttributes& c) { return {c.exponent, 0.0f}; }
std::pair<float, float> unary_parameters(const ClampAttributes& c) { return {c.low, c.high}; }
std::pair<float, float> unary_parameters(const AffineAttributes& c) { return {c.alpha, c.beta}; }

// Appends out = kernel(x [, s]) over flat element chunks of x: the forward
// (matrix/unary) or backward (matrix/unary_backward, reading gy and saved s),
// all in x's dtype (unary_dtypes).
void unary_dispatches(std::string_view kernel, UnaryCode code, const Matrix& x, const Matrix* saved, const Matrix& y,
                      std::pair<float, float> parameters, std::vector<ComputeDispatch>& ds) {
  for (auto c : detail::element_chunks(x.engine(), x.numel())) {
    const auto [off, bytes] = detail::chunk_window(x.dtype(), c);
    ComputeDispatch d;
    d.kernel = kernel;
    d.specialization = {code, detail::dtype_code(x.dtype())};
    d.bindings = {BufferBinding::read(x.storage(), off, bytes)};
    if (saved) d.bindings.push_back(BufferBinding::read(saved->storage(), off, bytes));
    d.bindings.push_back(BufferBinding::write(y.storage(), off, bytes));
    d.push.set(push::matrix_unary{.n = static_cast<std::uint32_t>(c.count), .a = parameters.first, .b = parameters.second});
    d.groups = {detail::elementwise_groups(x.dtype(), c.count), 1, 1};
    ds.push_back(std::move(d));
  }
}

// gx = gy * f'(s) for unary op `code`, recorded as the backward of c's op.
template <class A>
Matrix unary_gradient(const BackwardCall<A>& c, UnaryCode code, const Matrix& gy, const Matrix& saved, std::pair<float, float> parameters) {
  Matrix gx = detail::allocate(gy.engine(), gy.shape(), gy.dtype());
  std::vector<ComputeDispatch> ds;
  unary_dispatches(kernels::matrix_unary_backward, code, gy, &saved, gx, parameters, ds);
  c.record(ds, {&gy, &saved}, {&gx});
  return gx;
}

// What the backward of a unary op reads: its input, its output, or nothing
// (then gy stands in for the saved binding).
enum class Reads { Nothing, Input, Output };

// The dtypes of unary op `code` (matrix/unary.comp): f32, f16 and bf16 (f32
// arithmetic), and i32 too for neg, abs and sign (int32 arithmetic);
// bitwise_not takes i32 and bool alone.
std::vector<DType> unary_dtypes(UnaryCode code) {
  if (code == BitwiseNot) return {DType::I32, DType::Bool};
  if (code == Neg || code == Abs || code == Sign) return {DType::F32, DType::F16, DType::BF16, DType::I32};
  return {DType::F32, DType::F16, DType::BF16};
}

// A unary op y = f(x) of matrix/unary.comp, x and y of one of
// unary_dtypes(code); `check` validates its attributes.
template <class A = NoAttributes>
Op<A> unary_op(const char* name, UnaryCode code, Reads reads, std::function<void(const OpCall<A>&)> check = {}) {
  const detail::Lowering<A> lowering = [code](const OpCall<A>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
    unary_dispatches(kernels::matrix_unary, code, c.inputs[0], nullptr, out[0], unary_parameters(c.attributes), ds);
  };
  std::vector<std::pair<DType, detail::Lowering<A>>> lowerings;
  for (DType d : unary_dtypes(code)) lowerings.emplace_back(d, lowering);
  return Op<A>({.name = name,
                .inputs = {"x"},
                .infer = [check](const OpCall<A>& c) {
                  if (check) check(c);
                  return std::vector<OutputSpec>{{c.inputs[0].shape(), c.inputs[0].dtype()}};
                },
                .lower = std::move(lowerings),
                .saves = [reads](const OpCall<A>&, const std::vector<bool>&) {
                  return reads == Reads::Input ? Saves{{true}, {}} : reads == Reads::Output ? Saves{{}, {true}} : Saves{};
                },
                .backward = [code, reads](const BackwardCall<A>& c) {
                  const Matrix& gy = c.grad_outputs[0];
                  const Matrix& s = reads == Reads::Input ? c.inputs[0] : reads == Reads::Output ? c.outputs[0] : gy;
                  return std::vector<Matrix>{unary_gradient(c, code, gy, s, unary_parameters(c.attributes))};
                }});
}

// The ops of one form as lists of X(name, code[, reads]): the op
// oa::matrix::<name> (its function declared in oa/matrix/elementwise.hpp),
// its code in the kernels (shaders/common/elementwise_codes.h) and, for the
// unary ops without attributes, what its backward reads. Each list expands
// into the ops' OpDefs here and their functions' definitions below.
#define OA_BINARY_OPS(X)                                                                                                          \
  X(add, Add) X(sub, Sub) X(mul, Mul) X(div, Div) X(maximum, Max) X(minimum, Min) X(floor_divide, FloorDivide) X(remainder, Remainder) \
  X(bitwise_and, BitwiseAnd) X(bitwise_or, BitwiseOr) X(bitwise_xor, BitwiseXor)
#define OA_COMPARISONS(X) X(eq, Eq) X(ne, Ne) X(lt, Lt) X(le, Le) X(gt, Gt) X(ge, Ge)
#define OA_UNARY_OPS(X)             \
  X(neg, Neg, Nothing)              \
  X(exp, Exp, Output)               \
  X(log, Log, Input)                \
  X(sqrt, Sqrt, Output)             \
  X(rsqrt, Rsqrt, Output)           \
  X(reciprocal, Reciprocal, Output) \
  X(abs, Abs, Input)                \
  X(square, Square, Input)          \
  X(relu, Relu, Input)              \
  X(gelu, Gelu, Input)              \
  X(silu, Silu, Input)              \
  X(tanh, Tanh, Output)             \
  X(sigmoid, Sigmoid, Output)       \
  X(sin, Sin, Input)                \
  X(cos, Cos, Input)                \
  X(exp2, Exp2, Output)             \
  X(log1p, Log1p, Input)            \
  X(expm1, Expm1, Output)           \
  X(erf, Erf, Input)                \
  X(softplus, Softplus, Input)      \
  X(mish, Mish, Input)              \
  X(hardswish, Hardswish, Input)    \
  X(sign, Sign, Nothing)            \
  X(floor, Floor, Nothing)          \
  X(ceil, Ceil, Nothing)            \
  X(round, Round, Nothing)          \
  X(bitwise_not, BitwiseNot, Nothing)
#define OA_UNARY_OP(name, code, reads) const auto k_##name = unary_op("oa::matrix::" #name, code, Reads::reads);
OA_UNARY_OPS(OA_UNARY_OP)
#undef OA_UNARY_OP

const auto kLeakyRelu = unary_op<SlopeAttributes>("oa::matrix::leaky_relu", LeakyRelu, Reads::Input);
const auto kElu = unary_op<AlphaAttributes>("oa::matrix::elu", Elu, Reads::Input);
const auto kClamp = unary_op<ClampAttributes>("oa::matrix::clamp", Clamp, Reads::Input, [](const OpCall<ClampAttributes>& c) {
  if (!(c.attributes.low <= c.attributes.high))
    fail(ErrorKind::InvalidArgument, "{}: low {} exceeds high {} (x {})", c.name, c.attributes.low, c.attributes.high,
         c.inputs[0].shape());
});
const auto kAffine = unary_op<AffineAttributes>("oa::matrix::affine", Affine, Reads::Nothing);

// How the operands of a binary op meet: mode 0 same shape, 1 b broadcast,
// 2 a broadcast, with the broadcast operand indexed by (i / inner) % channels.
struct Broadcast {
  std::uint32_t mode = 0;
  std::int64_t channels = 1, inner = 1;
  Shape out;
};

Broadcast resolve_broadcast(const Shape& a, const Shape& b, const char* name) {
  Broadcast r;
  r.out = a;
  if (a == b) return r;
  if (detail::broadcast_layout(a, b, r.channels, r.inner)) {
    r.mode = 1;
  } else if (detail::broadcast_layout(b, a, r.channels, r.inner)) {
    r.mode = 2;
    r.out = b;
  } else {
    fail(ErrorKind::InvalidArgument,
         "{}: shapes {} and {} do not broadcast (one operand must match the other's shape, be a scalar, or span one "
         "contiguous run of its axes)",
         name, a, b);
  }
  return r;
}

// Records one dispatch per element chunk of the output: the forward
// (matrix/binary: a, b -> out) or a backward (matrix/binary_backward: gy, a, b
// -> the gradient of one operand at the output's shape).
void binary_dispatches(std::string_view kernel, std::initializer_list<std::uint32_t> specialization, const Matrix* gy, const Matrix& a,
                       const Matrix& b, const Matrix& out, const Broadcast& bc, const char* name, std::vector<ComputeDispatch>& ds) {
  for (auto c : detail::element_chunks(out.engine(), out.numel())) {
    const std::pair<std::uint64_t, std::uint64_t> window = detail::chunk_window(out.dtype(), c);
    const std::uint64_t off = window.first, bytes = window.second;
    ComputeDispatch d;
    d.kernel = kernel;
    d.specialization = specialization;
    d.specialization.push_back(detail::dtype_code(out.dtype()));
    auto bind = [&](const Matrix& m, bool broadcast) {
      return broadcast ? BufferBinding::read(m.storage()) : BufferBinding::read(m.storage(), off, bytes);
    };
    if (gy) d.bindings.push_back(bind(*gy, false));
    d.bindings.push_back(bind(a, bc.mode == 2));
    d.bindings.push_back(bind(b, bc.mode == 1));
    d.bindings.push_back(BufferBinding::write(out.storage(), off, bytes));
    d.push.set(push::matrix_binary{.n = static_cast<std::uint32_t>(c.count),
                                   .base = detail::shader_u32(c.begin, "element index", name),
                                   .channels = detail::shader_u32(bc.channels, "broadcast extent", name),
                                   .inner = detail::shader_u32(bc.inner, "broadcast stride", name)});
    d.groups = {detail::elementwise_groups(out.dtype(), c.count), 1, 1};
    ds.push_back(std::move(d));
  }
}

// The backward of binary op `code`: gradients of a and b from gy (of the
// output's shape), each summed back to its operand's shape where it was
// broadcast. a and b are the saved operands, undefined where no needed
// gradient reads them (see binary_op's saves).
template <class A>
std::vector<Matrix> binary_backward(BinaryCode code, const BackwardCall<A>& c) {
  const Matrix& gy = c.grad_outputs[0];
  const Matrix &a = c.inputs[0], &b = c.inputs[1];
  const Broadcast bc = resolve_broadcast(c.input_shapes[0], c.input_shapes[1], c.name);
  std::vector<Matrix> g(2);
  if (code == Add || code == Sub) {  // d/da = 1, d/db = +-1: no kernel unless negating
    if (c.needs[0]) g[0] = gy;
    if (c.needs[1]) g[1] = code == Add ? gy : unary_gradient(c, Neg, gy, gy, {0.0f, 0.0f});
  } else {
    // An operand that was not saved is not read: gy stands in for its binding.
    const Matrix& bound_a = a.defined() ? a : gy;
    const Matrix& bound_b = b.defined() ? b : gy;
    std::vector<ComputeDispatch> ds;
    for (std::uint32_t which = 0; which < 2; ++which) {
      if (!c.needs[which]) continue;
      g[which] = detail::allocate(gy.engine(), gy.shape(), gy.dtype());
      binary_dispatches(kernels::matrix_binary_backward, {code, bc.mode, which}, &gy, bound_a, bound_b, g[which], bc, c.name, ds);
    }
    c.record(ds, {gy, a, b}, g);
  }
  for (int i = 0; i < 2; ++i)
    if (c.needs[i] && !(c.input_shapes[i] == gy.shape())) g[i] = sum_to(g[i], c.input_shapes[i]);
  return g;
}

// The dtypes of binary op `code` (matrix/binary.comp; both operands and the
// result of one): f32, f16 and bf16 (f32 arithmetic) but for the bitwise ops;
// i32 (int32 arithmetic) but for div; bool for add, mul, maximum and minimum
// (logical or, and, or, and) and the bitwise ops.
std::vector<DType> binary_dtypes(BinaryCode code) {
  const bool bitwise = code == BitwiseAnd || code == BitwiseOr || code == BitwiseXor;
  std::vector<DType> dtypes;
  if (!bitwise) dtypes = {DType::F32, DType::F16, DType::BF16};
  if (code != Div) dtypes.push_back(DType::I32);
  if (bitwise || code == Add || code == Mul || code == Max || code == Min) dtypes.push_back(DType::Bool);
  return dtypes;
}

// A binary op z = f(a, b) of matrix/binary.comp, broadcasting as documented
// in oa/matrix/elementwise.hpp, a, b and z of one of binary_dtypes(code).
// Differentiable for the float dtypes but floor_divide (piecewise constant,
// no gradient; the bitwise ops take no float).
Op<NoAttributes> binary_op(const char* name, BinaryCode code) {
  const detail::Lowering<NoAttributes> lowering = [code](const OpCall<NoAttributes>& c, const std::vector<Matrix>& out,
                                                         std::vector<ComputeDispatch>& ds) {
    const Matrix &a = c.inputs[0], &b = c.inputs[1];
    const Broadcast bc = resolve_broadcast(a.shape(), b.shape(), c.name);
    binary_dispatches(kernels::matrix_binary, {code, bc.mode}, nullptr, a, b, out[0], bc, c.name, ds);
  };
  std::vector<std::pair<DType, detail::Lowering<NoAttributes>>> lowerings;
  for (DType d : binary_dtypes(code)) lowerings.emplace_back(d, lowering);
  detail::OpDef<NoAttributes> def{
      .name = name,
      .inputs = {"a", "b"},
      .infer = [](const OpCall<NoAttributes>& c) {
        detail::require_same_dtype(c.inputs[0], "a", c.inputs[1], "b", c.name);
        return std::vector<OutputSpec>{{resolve_broadcast(c.inputs[0].shape(), c.inputs[1].shape(), c.name).out, c.inputs[0].dtype()}};
      },
      .lower = std::move(lowerings),
      // Add and sub read nothing; mul's ga reads b and gb reads a; div's ga
      // reads b and gb both; maximum and minimum both; remainder's gb both.
      .saves = [code](const OpCall<NoAttributes>&, const std::vector<bool>& needs) {
        const bool save_a = code == Max || code == Min || ((code == Mul || code == Div || code == Remainder) && needs[1]);
        const bool save_b = code == Max || code == Min || code == Div || (code == Mul && needs[0]) || (code == Remainder && needs[1]);
        return Saves{{save_a, save_b}, {}};
      }};
  if (code != FloorDivide) def.backward = [code](const BackwardCall<NoAttributes>& c) { return binary_backward(code, c); };
  return Op<NoAttributes>(std::move(def));
}

#define OA_BINARY_OP(name, code) const auto k_##name = binary_op("oa::matrix::" #name, code);
OA_BINARY_OPS(OA_BINARY_OP)
#undef OA_BINARY_OP

// pow(a, b) with b a Matrix (broadcast as the binary ops) or, when b is
// absent, the scalar `exponent` (matrix/unary's PowScalar). Both forms read
// their inputs in the backward.
const detail::Lowering<ExponentAttributes> kPowLowering = [](const OpCall<ExponentAttributes>& c, const std::vector<Matrix>& out,
                                                             std::vector<ComputeDispatch>& ds) {
  const Matrix &a = c.inputs[0], &b = c.inputs[1];
  if (!b.defined()) {
    unary_dispatches(kernels::matrix_unary, PowScalar, a, nullptr, out[0], unary_parameters(c.attributes), ds);
    return;
  }
  const Broadcast bc = resolve_broadcast(a.shape(), b.shape(), c.name);
  binary_dispatches(kernels::matrix_binary, {Pow, bc.mode}, nullptr, a, b, out[0], bc, c.name, ds);
};
const Op<ExponentAttributes> kPow{
    {.name = "oa::matrix::pow",
     .inputs = {"a", {"b", true}},
     .infer = [](const OpCall<ExponentAttributes>& c) {
       const Matrix &a = c.inputs[0], &b = c.inputs[1];
       if (!b.defined()) {
         if (a.dtype() == DType::I32)
           fail(ErrorKind::InvalidArgument, "{}: a host exponent takes a float a; found {} {} (give an i32 exponent as a Matrix)", c.name,
                to_string(a.dtype()), a.shape());
         return std::vector<OutputSpec>{{a.shape(), a.dtype()}};
       }
       detail::require_same_dtype(a, "a", b, "b", c.name);
       return std::vector<OutputSpec>{{resolve_broadcast(a.shape(), b.shape(), c.name).out, a.dtype()}};
     },
     .lower = {{DType::F32, kPowLowering}, {DType::F16, kPowLowering}, {DType::BF16, kPowLowering}, {DType::I32, kPowLowering}},
     .saves = [](const OpCall<ExponentAttributes>& c, const std::vector<bool>&) { return Saves{{true, c.inputs[1].defined()}, {}}; },
     .backward = [](const BackwardCall<ExponentAttributes>& c) {
       if (c.inputs[1].defined()) return binary_backward(Pow, c);
       return std::vector<Matrix>{unary_gradient(c, PowScalar, c.grad_outputs[0], c.inputs[0], unary_parameters(c.attributes)), Matrix()};
     }}};

// a (op) b broadcast by NumPy's rules. Operands that the kernel's broadcast
// covers (the same shape, or one operand spanning a contiguous run of the
// other's axes) go to it as they are; otherwise an operand of another shape
// than the result is first expanded to it (a recorded oa::matrix::expand,
// whose backward sums the gradient back), and the other keeps its shape
// where the kernel can broadcast it.
template <class A>
Matrix binary(const Op<A>& op, const Matrix& a, const Matrix& b) {
  const char* name = op.def.name;
  detail::require_defined(a, name, "a");
  detail::require_defined(b, name, "b");
  detail::require_same_engine(a, "a", b, "b", name);
  // The dtypes are apply()'s to check (after autocast's casts): a's by the
  // lowering, b's by infer.
  std::int64_t channels = 1, inner = 1;
  const Shape &sa = a.shape(), &sb = b.shape();
  if (sa == sb || detail::broadcast_layout(sa, sb, channels, inner) || detail::broadcast_layout(sb, sa, channels, inner))
    return apply(op, {a, b})[0];
  const Shape out = detail::broadcast_shapes(name, {{"a", sa}, {"b", sb}});
  detail::shader_u32(out.numel(), "result elements", name);
  // apply() would refuse these dtypes only after the expansions below were
  // recorded: refuse them first (autocast widens mixed floating operands to
  // one the op lowers, f32 at least).
  const bool autocast_widens = detail::autocast_active() && is_floating_point(a.dtype()) && is_floating_point(b.dtype()) &&
                               (op.lowered_dtypes & (1u << static_cast<unsigned>(DType::F32)));
  if (!autocast_widens) {
    detail::require_same_dtype(a, "a", b, "b", name);
    (void)detail::lowering_for(op.def, a, "a");
  }
  const bool expand_a = !(sa == out) && (!(sb == out) || !detail::broadcast_layout(out, sa, channels, inner));
  const Matrix a2 = expand_a ? expand(a, out.to_vector()) : a;
  const bool expand_b = !(sb == out) && (!(a2.shape() == out) || !detail::broadcast_layout(out, sb, channels, inner));
  return apply(op, {a2, expand_b ? expand(b, out.to_vector()) : b})[0];
}

// ── Comparisons ─────────────────────────────────────────────────────────────

// The scalar b of a comparison's scalar form (which has no b operand); 0 when b is given.
struct CompareAttributes {
  float value = 0;
  static constexpr auto fields = std::tuple{field("value", &CompareAttributes::value)};
};

// Appends one dispatch per element chunk of a (and of b, when given; else
// the scalar `value`) writing the mask's Bool bytes into out.
void compare_dispatches(CompareCode code, const Matrix& a, const Matrix& b, float value, const Matrix& out, std::vector<ComputeDispatch>& ds) {
  for (auto chunk : detail::element_chunks(a.engine(), a.numel())) {
    const auto [in_offset, in_bytes] = detail::chunk_window(a.dtype(), chunk);
    const auto [out_offset, out_bytes] = detail::chunk_window(DType::Bool, chunk);
    ComputeDispatch d;
    d.kernel = kernels::matrix_compare;
    d.specialization = {code, a.dtype() == DType::I32 ? 1u : 0u, b.defined() ? 0u : 1u};
    d.bindings = {BufferBinding::read(a.storage(), in_offset, in_bytes),
                  BufferBinding::read((b.defined() ? b : a).storage(), in_offset, in_bytes),
                  BufferBinding::write(out.storage(), out_offset, out_bytes)};
    d.push.set(push::matrix_compare{.n = static_cast<std::uint32_t>(chunk.count), .value = value});
    d.groups = {detail::groups_for((chunk.count + 3) / 4, 256), 1, 1};
    ds.push_back(std::move(d));
  }
}

detail::Lowering<CompareAttributes> compare_lowering(CompareCode code) {
  return [code](const OpCall<CompareAttributes>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
    compare_dispatches(code, c.inputs[0], c.inputs[1], c.attributes.value, out[0], ds);
  };
}

// A comparison mask = a (op) b of matrix/compare.comp: a and b of one shape
// and dtype (the public functions broadcast them), or b absent (the scalar
// form, f32 a). Not differentiable: no backward, so apply() records no node.
Op<CompareAttributes> compare_op(const char* name, CompareCode code) {
  return Op<CompareAttributes>(
      {.name = name,
       .inputs = {"a", {"b", true}},
       .infer = [](const OpCall<CompareAttributes>& c) {
         const Matrix &a = c.inputs[0], &b = c.inputs[1];
         if (!b.defined()) detail::require_f32(a, c.name, "a");
         else if (!(a.shape() == b.shape()) || a.dtype() != b.dtype())
           fail(ErrorKind::Internal, "{}: a {} and b {} reach the kernel unbroadcast or of two dtypes", c.name, a.shape(), b.shape());
         detail::shader_u32(a.numel(), "element count", c.name);
         return std::vector<OutputSpec>{{a.shape(), DType::Bool}};
       },
       .lower = {{DType::F32, compare_lowering(code)}, {DType::I32, compare_lowering(code)}}});
}

#define OA_COMPARE_OP(name, code) const auto k_##name = compare_op("oa::matrix::" #name, code);
OA_COMPARISONS(OA_COMPARE_OP)
#undef OA_COMPARE_OP

// a (op) b broadcast by NumPy's rules: each operand of another shape than the
// result is first expanded (a recorded oa::matrix::expand).
Matrix compare(const Op<CompareAttributes>& op, const Matrix& a, const Matrix& b) {
  const char* name = op.def.name;
  detail::require_defined(a, name, "a");
  detail::require_defined(b, name, "b");
  detail::require_same_engine(a, "a", b, "b", name);
  if (a.dtype() != DType::F32 && a.dtype() != DType::I32)
    fail(ErrorKind::InvalidArgument, "{}: a must be f32 or i32; found {} {}", name, to_string(a.dtype()), a.shape());
  detail::require_same_dtype(a, "a", b, "b", name);
  const Shape out = detail::broadcast_shapes(name, {{"a", a.shape()}, {"b", b.shape()}});
  detail::shader_u32(out.numel(), "result elements", name);
  NoGradGuard no_grad;  // the result is not differentiable: the expands need no history either
  return apply(op, {expand(a, out.to_vector()), expand(b, out.to_vector())})[0];
}

Matrix compare(const Op<CompareAttributes>& op, const Matrix& a, float s) { return apply(op, {a, Matrix()}, {s})[0]; }

template <class A>
Matrix call(const Op<A>& op, std::initializer_list<Matrix> inputs, const A& attributes = {}) {
  return apply(op, inputs, attributes)[0];
}

}  // namespace

#define OA_DEFINE(name, code) \
  Matrix name(const Matrix& a, const Matrix& b) { return binary(k_##name, a, b); }
OA_BINARY_OPS(OA_DEFINE)
#undef OA_DEFINE

Matrix affine(const Matrix& x, float alpha, float beta) { return call(kAffine, {x}, {alpha, beta}); }
Matrix add(const Matrix& a, float s) { return affine(a, 1.0f, s); }
Matrix sub(const Matrix& a, float s) { return affine(a, 1.0f, -s); }
Matrix mul(const Matrix& a, float s) { return affine(a, s, 0.0f); }
Matrix div(const Matrix& a, float s) { return affine(a, 1.0f / s, 0.0f); }

#define OA_DEFINE(name, code, reads) \
  Matrix name(const Matrix& x) { return call(k_##name, {x}); }
OA_UNARY_OPS(OA_DEFINE)
#undef OA_DEFINE
Matrix clamp(const Matrix& x, float low, float high) { return call(kClamp, {x}, {low, high}); }
Matrix leaky_relu(const Matrix& x, float negative_slope) { return call(kLeakyRelu, {x}, {negative_slope}); }
Matrix elu(const Matrix& x, float alpha) { return call(kElu, {x}, {alpha}); }
Matrix pow(const Matrix& a, const Matrix& b) { return binary(kPow, a, b); }
Matrix pow(const Matrix& x, float exponent) { return call(kPow, {x, Matrix()}, {exponent}); }

#define OA_DEFINE(name, code)                                                       \
  Matrix name(const Matrix& a, const Matrix& b) { return compare(k_##name, a, b); } \
  Matrix name(const Matrix& a, float s) { return compare(k_##name, a, s); }
OA_COMPARISONS(OA_DEFINE)
#undef OA_DEFINE

}  // namespace oa::matrix

namespace oa::detail {

void nonzero_into(const Matrix& x, const Matrix& mask, std::vector<runtime::ComputeDispatch>& dispatches) {
  matrix::compare_dispatches(matrix::Ne, x, Matrix(), 0.0f, mask, dispatches);
}

}  // namespace oa::detail
