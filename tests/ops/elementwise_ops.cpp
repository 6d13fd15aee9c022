// Op table cases of the elementwise ops (oa/matrix/elementwise.hpp).
#include <algorithm>
#include <cmath>
#include <functional>

#include "ops/op_table.hpp"
#include "reference/elementwise.hpp"
#include "reference/indexing.hpp"

namespace oa::test {
namespace {

// f(x) over shapes from one element to several rows of 129 (a ragged last
// workgroup), inputs in [low, high) (kinks and poles outside or at measure zero).
std::vector<OpCase> unary(const std::function<Matrix(const Matrix&)>& f, const std::function<double(double)>& r, double low,
                          double high) {
  std::vector<OpCase> cases;
  std::uint64_t seed = 11;
  for (const Shape& shape : {Shape{1}, Shape{3, 5}, Shape{9, 129}})
    cases.push_back({label("x", shape.numel()), {random_input(shape, seed++, low, high)},
                     [f](const Inputs& x) { return f(x[0]); }, [r](const RefInputs& x) { return ref::map(x[0], r); }});
  return cases;
}

OA_OP_CASES(neg, "oa::matrix::neg") { return unary(oa::matrix::neg, [](double v) { return -v; }, -2, 2); }
OA_OP_CASES(exp, "oa::matrix::exp") { return unary(oa::matrix::exp, [](double v) { return std::exp(v); }, -2, 2); }
OA_OP_CASES(log, "oa::matrix::log") { return unary(oa::matrix::log, [](double v) { return std::log(v); }, 0.5, 2); }
OA_OP_CASES(sqrt, "oa::matrix::sqrt") { return unary(oa::matrix::sqrt, [](double v) { return std::sqrt(v); }, 0.5, 2); }
OA_OP_CASES(rsqrt, "oa::matrix::rsqrt") { return unary(oa::matrix::rsqrt, [](double v) { return 1 / std::sqrt(v); }, 0.5, 2); }
OA_OP_CASES(reciprocal, "oa::matrix::reciprocal") { return unary(oa::matrix::reciprocal, [](double v) { return 1 / v; }, 0.5, 2); }
OA_OP_CASES(abs, "oa::matrix::abs") { return unary(oa::matrix::abs, [](double v) { return std::abs(v); }, -2, 2); }
OA_OP_CASES(square, "oa::matrix::square") { return unary(oa::matrix::square, [](double v) { return v * v; }, -2, 2); }
OA_OP_CASES(relu, "oa::matrix::relu") { return unary(oa::matrix::relu, [](double v) { return v > 0 ? v : 0; }, -2, 2); }
OA_OP_CASES(gelu, "oa::matrix::gelu") { return unary(oa::matrix::gelu, ref::gelu, -3, 3); }
OA_OP_CASES(silu, "oa::matrix::silu") { return unary(oa::matrix::silu, ref::silu, -6, 6); }
OA_OP_CASES(tanh, "oa::matrix::tanh") { return unary(oa::matrix::tanh, [](double v) { return std::tanh(v); }, -2, 2); }
OA_OP_CASES(sigmoid, "oa::matrix::sigmoid") { return unary(oa::matrix::sigmoid, ref::sigmoid, -4, 4); }
OA_OP_CASES(sin, "oa::matrix::sin") { return unary(oa::matrix::sin, [](double v) { return std::sin(v); }, -3, 3); }
OA_OP_CASES(cos, "oa::matrix::cos") { return unary(oa::matrix::cos, [](double v) { return std::cos(v); }, -3, 3); }
OA_OP_CASES(exp2, "oa::matrix::exp2") { return unary(oa::matrix::exp2, [](double v) { return std::exp2(v); }, -3, 3); }
OA_OP_CASES(log1p, "oa::matrix::log1p") { return unary(oa::matrix::log1p, [](double v) { return std::log1p(v); }, -0.5, 2); }
OA_OP_CASES(expm1, "oa::matrix::expm1") { return unary(oa::matrix::expm1, [](double v) { return std::expm1(v); }, -2, 2); }
OA_OP_CASES(erf, "oa::matrix::erf") { return unary(oa::matrix::erf, [](double v) { return std::erf(v); }, -2, 2); }
OA_OP_CASES(softplus, "oa::matrix::softplus") {
  return unary(oa::matrix::softplus, [](double v) { return v > 20 ? v : std::log1p(std::exp(v)); }, -5, 25);
}
OA_OP_CASES(mish, "oa::matrix::mish") {
  return unary(oa::matrix::mish, [](double v) { return v * std::tanh(std::log1p(std::exp(v))); }, -5, 5);
}
OA_OP_CASES(hardswish, "oa::matrix::hardswish") {
  return unary(oa::matrix::hardswish, [](double v) { return v * std::min(std::max(v + 3, 0.0), 6.0) / 6; }, -5, 5);
}
OA_OP_CASES(leaky_relu, "oa::matrix::leaky_relu") {
  return unary([](const Matrix& x) { return oa::matrix::leaky_relu(x, 0.2f); }, [](double v) { return v > 0 ? v : 0.2 * v; }, -2, 2);
}
OA_OP_CASES(elu, "oa::matrix::elu") {
  return unary([](const Matrix& x) { return oa::matrix::elu(x, 1.5f); }, [](double v) { return v > 0 ? v : 1.5 * std::expm1(v); }, -3, 2);
}

// A piecewise-constant op (gradient 0) on values at least 0.2 from its jumps
// (integers and half-integers), so that the finite differences see no step.
std::vector<OpCase> steps(const std::function<Matrix(const Matrix&)>& f, const std::function<double(double)>& r) {
  const std::vector<float> v = {-2.3f, -1.7f, -0.2f, 0.3f, 1.2f, 1.8f, 2.7f, -2.8f, 3.2f, -3.3f};
  return {{"x10", {{{2, 5}, v, true}}, [f](const Inputs& x) { return f(x[0]); },
           [r](const RefInputs& x) { return ref::map(x[0], r); }}};
}

OA_OP_CASES(sign, "oa::matrix::sign") { return steps(oa::matrix::sign, [](double v) { return double((v > 0) - (v < 0)); }); }
OA_OP_CASES(floor, "oa::matrix::floor") { return steps(oa::matrix::floor, [](double v) { return std::floor(v); }); }
OA_OP_CASES(ceil, "oa::matrix::ceil") { return steps(oa::matrix::ceil, [](double v) { return std::ceil(v); }); }
OA_OP_CASES(round, "oa::matrix::round") { return steps(oa::matrix::round, [](double v) { return std::nearbyint(v); }); }

OA_OP_CASES(clamp, "oa::matrix::clamp") {
  return unary([](const Matrix& x) { return oa::matrix::clamp(x, -0.5f, 0.7f); },
               [](double v) { return std::min(std::max(v, -0.5), 0.7); }, -1, 1);
}

// affine(x, alpha, beta) and the scalar forms of the arithmetic operators, which are affine maps.
OA_OP_CASES(affine, "oa::matrix::affine") {
  struct Form {
    const char* label;
    std::function<Matrix(const Matrix&)> f;
    double alpha, beta;
  };
  const std::vector<Form> forms = {
      {"affine", [](const Matrix& x) { return oa::matrix::affine(x, -1.5f, 0.25f); }, -1.5, 0.25},
      {"add_scalar", [](const Matrix& x) { return x + 3.0f; }, 1, 3},
      {"sub_scalar", [](const Matrix& x) { return x - 3.0f; }, 1, -3},
      {"mul_scalar", [](const Matrix& x) { return x * 0.5f; }, 0.5, 0},
      {"div_scalar", [](const Matrix& x) { return x / 4.0f; }, 0.25, 0},
  };
  std::vector<OpCase> cases;
  std::uint64_t seed = 31;
  for (const auto& form : forms) {
    const double alpha = form.alpha, beta = form.beta;
    cases.push_back({form.label, {random_input({3, 5}, seed++, -2, 2)}, [f = form.f](const Inputs& x) { return f(x[0]); },
                     [alpha, beta](const RefInputs& x) { return ref::map(x[0], [&](double v) { return alpha * v + beta; }); }});
  }
  return cases;
}

// f(a, b) with broadcasting: one element, equal shapes, a row vector, b over a run of
// inner axes, a scalar-shaped b, and the general patterns that expand an
// operand first (an outer product of [3, 1] and [1, 4], b [3, 1, 5] against
// [3, 4, 5], a of lower rank than b). `backward_traced`: whether the
// backward records a kernel (add passes the gradient through).
std::vector<OpCase> binary(const std::string& op, const std::function<Matrix(const Matrix&, const Matrix&)>& f,
                           const std::function<double(double, double)>& r, double a_low, double a_high, double b_low, double b_high,
                           bool backward_traced = true) {
  struct Shapes {
    const char* label;
    Shape a, b;
    bool expands = false;
  };
  const std::vector<Shapes> shapes = {{"one", {1}, {1}},
                                      {"same", {17, 65}, {17, 65}},
                                      {"row", {4, 33}, {33}},
                                      {"inner", {2, 3, 4}, {3, 1}},
                                      {"scalar", {2, 7}, {1}},
                                      {"outer", {3, 1}, {1, 4}, true},
                                      {"middle", {3, 4, 5}, {3, 1, 5}, true},
                                      {"rank_up", {4}, {2, 3, 1}, true}};
  std::vector<OpCase> cases;
  std::uint64_t seed = 41;
  for (const auto& s : shapes) {
    std::vector<std::int64_t> out(std::max(s.a.rank(), s.b.rank()));
    for (std::size_t i = 0; i < out.size(); ++i) {
      auto extent = [&](const Shape& x) { return i + x.rank() < out.size() ? std::int64_t{1} : x[i + x.rank() - out.size()]; };
      out[i] = std::max(extent(s.a), extent(s.b));
    }
    const std::vector<std::int64_t> sa = s.a.to_vector(), sb = s.b.to_vector();
    cases.push_back({s.label,
                     {random_input(s.a, seed, a_low, a_high), random_input(s.b, seed + 1, b_low, b_high)},
                     [f](const Inputs& x) { return f(x[0], x[1]); },
                     [r, sa, sb, out](const RefInputs& x) {
                       const std::vector<double> a = oa::reference::expand(x[0], sa, out), b = oa::reference::expand(x[1], sb, out);
                       std::vector<double> y(a.size());
                       for (std::size_t i = 0; i < y.size(); ++i) y[i] = r(a[i], b[i]);
                       return y;
                     },
                     kGradTolerance,
                     s.expands ? std::vector<std::string>{"oa::matrix::expand", op} : std::vector<std::string>{},
                     backward_traced});
    seed += 2;
  }
  return cases;
}

OA_OP_CASES(add, "oa::matrix::add") {
  return binary("oa::matrix::add", [](const Matrix& a, const Matrix& b) { return a + b; }, [](double u, double v) { return u + v; }, -2, 2,
                -2, 2, false);
}
OA_OP_CASES(sub, "oa::matrix::sub") {
  return binary("oa::matrix::sub", [](const Matrix& a, const Matrix& b) { return a - b; }, [](double u, double v) { return u - v; }, -2, 2,
                -2, 2);
}
OA_OP_CASES(mul, "oa::matrix::mul") {
  return binary("oa::matrix::mul", [](const Matrix& a, const Matrix& b) { return a * b; }, [](double u, double v) { return u * v; }, -2, 2,
                -2, 2);
}
OA_OP_CASES(div, "oa::matrix::div") {
  return binary("oa::matrix::div", [](const Matrix& a, const Matrix& b) { return a / b; }, [](double u, double v) { return u / v; }, -2, 2,
                0.5, 2);
}
OA_OP_CASES(maximum, "oa::matrix::maximum") {
  return binary("oa::matrix::maximum", oa::matrix::maximum, [](double u, double v) { return std::max(u, v); }, -2, 2, -2, 2);
}
OA_OP_CASES(minimum, "oa::matrix::minimum") {
  return binary("oa::matrix::minimum", oa::matrix::minimum, [](double u, double v) { return std::min(u, v); }, -2, 2, -2, 2);
}
// pow(a, b) over positive bases (both gradients finite), and the scalar
// exponent form: an integer exponent of negative bases, a square, a
// fractional and a negative exponent of positive bases, and x^0 = 1 (gradient 0).
OA_OP_CASES(pow, "oa::matrix::pow") {
  std::vector<OpCase> cases = binary(
      "oa::matrix::pow", [](const Matrix& a, const Matrix& b) { return oa::matrix::pow(a, b); },
      [](double u, double v) { return std::pow(u, v); }, 0.5, 2, -2, 2);
  struct Exponent {
    const char* label;
    float exponent;
    double low, high;
  };
  const std::vector<Exponent> exponents = {
      {"cube", 3.0f, -2, 2}, {"square", 2.0f, -2, 2}, {"root", 0.5f, 0.5, 2}, {"inverse", -1.5f, 0.5, 2}, {"zero", 0.0f, -2, 2}};
  std::uint64_t seed = 61;
  for (const auto& e : exponents)
    cases.push_back({e.label, {random_input({3, 5}, seed++, e.low, e.high)},
                     [p = e.exponent](const Inputs& x) { return oa::matrix::pow(x[0], p); },
                     [p = double(e.exponent)](const RefInputs& x) { return ref::map(x[0], [p](double v) { return std::pow(v, p); }); }});
  return cases;
}

// floor_divide and remainder of floats on values at least 0.2 from the
// jumps (a / b an integer): divisors of both signs, magnitude 1 and 2;
// remainder's gradients (1 and -floor(a / b)) by finite differences,
// floor_divide without one. Then int32 operands (exact, signs mixed).
std::vector<OpCase> division(const std::function<Matrix(const Matrix&, const Matrix&)>& f, const std::function<double(double, double)>& r,
                             bool gradient) {
  const std::vector<float> a = {-2.3f, -1.7f, -0.2f, 0.3f, 1.2f, 1.8f, 2.7f, -2.8f, 3.2f, -3.3f};
  const std::vector<float> b = {1, -1, 2, 1, -2, 1, 2, -1, 1, 2};
  const std::vector<float> ia = {-7, 7, -7, 7, 0, 13, -13, 5, -1, 16777215}, ib = {2, 2, -2, -2, 3, 5, 5, -3, 4, 2};
  const auto reference = [r](const RefInputs& x) {
    std::vector<double> out(x[0].size());
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = r(x[0][i], x[1][i]);
    return out;
  };
  const auto run = [f](const Inputs& x) { return f(x[0], x[1]); };
  return {{"x10", {{{2, 5}, a, gradient}, {{2, 5}, b, gradient}}, run, reference, kGradTolerance, {}, gradient},
          {"i32", {ints({2, 5}, ia), ints({2, 5}, ib)}, run, reference, kGradTolerance, {}, false}};
}

OA_OP_CASES(floor_divide, "oa::matrix::floor_divide") {
  return division(oa::matrix::floor_divide, [](double u, double v) { return std::floor(u / v); }, false);
}
OA_OP_CASES(remainder, "oa::matrix::remainder") {
  return division(oa::matrix::remainder, [](double u, double v) { return u - v * std::floor(u / v); }, true);
}

// The bitwise ops of int32 (signs mixed, the extremes) and the logical ones of bool; no gradient.
std::vector<OpCase> bitwise(const std::function<Matrix(const Matrix&, const Matrix&)>& f,
                            const std::function<std::int64_t(std::int64_t, std::int64_t)>& r) {
  const std::vector<float> ia = {-7, 7, 0, -1, 12, -2147483648.0f, 16777215, 5}, ib = {3, -3, -1, -1, 10, -1, 1, 0};
  const std::vector<float> ba = {0, 0, 1, 1, 1, 0, 1, 0, 1}, bb = {0, 1, 0, 1, 1, 1, 0, 0, 1};
  const auto reference = [r](const RefInputs& x) {
    std::vector<double> out(x[0].size());
    for (std::size_t i = 0; i < out.size(); ++i)
      out[i] = double(std::int32_t(r(std::int64_t(x[0][i]), std::int64_t(x[1][i]))));
    return out;
  };
  const auto run = [f](const Inputs& x) { return f(x[0], x[1]); };
  return {{"i32", {ints({2, 4}, ia), ints({2, 4}, ib)}, run, reference, kGradTolerance, {}, false},
          {"bool", {bools({9}, ba), bools({9}, bb)}, run, reference, kGradTolerance, {}, false}};
}

OA_OP_CASES(bitwise_and, "oa::matrix::bitwise_and") { return bitwise(oa::matrix::bitwise_and, [](auto u, auto v) { return u & v; }); }
OA_OP_CASES(bitwise_or, "oa::matrix::bitwise_or") { return bitwise(oa::matrix::bitwise_or, [](auto u, auto v) { return u | v; }); }
OA_OP_CASES(bitwise_xor, "oa::matrix::bitwise_xor") { return bitwise(oa::matrix::bitwise_xor, [](auto u, auto v) { return u ^ v; }); }
OA_OP_CASES(bitwise_not, "oa::matrix::bitwise_not") {
  const auto run = [](const Inputs& x) { return oa::matrix::bitwise_not(x[0]); };
  return {{"i32", {ints({5}, {-7, 0, -1, 16777215, 12})}, run,
           [](const RefInputs& x) { return ref::map(x[0], [](double v) { return double(~std::int32_t(v)); }); }, kGradTolerance, {}, false},
          {"bool", {bools({5}, {0, 1, 1, 0, 1})}, run, [](const RefInputs& x) { return ref::map(x[0], [](double v) { return 1 - v; }); },
           kGradTolerance, {}, false}};
}

// A comparison over ties, signed zeros and NaNs: same shapes, a row broadcast
// (expanded first) and the scalar form. No input needs a gradient: the mask has none.
std::vector<OpCase> comparison(const std::string& op, const std::function<Matrix(const Matrix&, const Matrix&)>& tensor,
                               const std::function<Matrix(const Matrix&, float)>& scalar) {
  const std::vector<float> a = {1, -2, 0.5f, -0.0f, NAN, 3, 2, 2}, b = {1, 2, -0.5f, 0.0f, 1, NAN, 2, 1}, row = {1, NAN, 0.5f, 2};
  const std::vector<std::int64_t> s = {2, 4};
  const auto as_doubles = [](const std::vector<std::uint8_t>& m) { return std::vector<double>(m.begin(), m.end()); };
  std::vector<OpCase> cases;
  cases.push_back({"same", {{{2, 4}, a, false}, {{2, 4}, b, false}}, [tensor](const Inputs& x) { return tensor(x[0], x[1]); },
                   [=](const RefInputs& x) { return as_doubles(ref::compare(op, x[0], s, x[1], s, s)); }});
  cases.push_back({"row", {{{2, 4}, a, false}, {{4}, row, false}}, [tensor](const Inputs& x) { return tensor(x[0], x[1]); },
                   [=](const RefInputs& x) { return as_doubles(ref::compare(op, x[0], s, x[1], {4}, s)); },
                   kGradTolerance,
                   {"oa::matrix::expand", "oa::matrix::" + op}});
  cases.push_back({"scalar", {{{2, 4}, a, false}}, [scalar](const Inputs& x) { return scalar(x[0], 0.5f); },
                   [=](const RefInputs& x) { return as_doubles(ref::compare(op, x[0], s, {0.5}, {1}, s)); }});
  return cases;
}

#define OA_COMPARISON_CASES(op)                                                                                    \
  OA_OP_CASES(op, "oa::matrix::" #op) {                                                                            \
    return comparison(                                                                                             \
        #op, [](const Matrix& a, const Matrix& b) { return oa::matrix::op(a, b); },                                \
        [](const Matrix& a, float v) { return oa::matrix::op(a, v); });                                            \
  }
OA_COMPARISON_CASES(eq)
OA_COMPARISON_CASES(ne)
OA_COMPARISON_CASES(lt)
OA_COMPARISON_CASES(le)
OA_COMPARISON_CASES(gt)
OA_COMPARISON_CASES(ge)
#undef OA_COMPARISON_CASES

}  // namespace
}  // namespace oa::test
