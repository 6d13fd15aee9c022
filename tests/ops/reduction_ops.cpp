// Op table cases of the reductions (oa/matrix/reduction.hpp).
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include "ops/op_table.hpp"
#include "reference/dtype.hpp"
#include "reference/reduction.hpp"

namespace oa::test {
namespace {

// The axis sets of the reductions' cases: every axis, the last (with
// keepdim), a leading axis, both ends, a middle axis (kept axes on both
// sides, keepdim), the leading block, a rank-0 x and a long last axis
// (several segments a row; no gradient). `moves`: the reduced axes are not
// trailing (x is permuted first); `split`: the kept axes are not one
// contiguous run.
struct Axes {
  const char* label;
  Shape shape;
  std::vector<int> dims;
  bool keepdim, moves, split, grads = true;
};
const std::vector<Axes> kAxes = {
    {"all5", {5}, {}, false, false, false},
    {"last3x7_keepdim", {3, 7}, {-1}, true, false, false},
    {"first4x6", {4, 6}, {0}, false, true, false},
    {"ends2x3x33", {2, 3, 33}, {2, 0}, false, true, false},
    {"middle2x3x4x5_keepdim", {2, 3, 4, 5}, {1}, true, true, true},
    {"lead2x3x4", {2, 3, 4}, {0, -2}, false, true, false},
    {"scalar", {}, {}, false, false, false},
    {"long2x5000", {2, 5000}, {1}, false, false, false, false},
};

using Fold = std::function<double(const std::vector<double>&)>;
using Reduce = std::function<Matrix(const Matrix&, const std::vector<int>&, bool)>;

std::vector<std::int64_t> normal_dims(const Axes& a) {
  return oa::reference::normal_axes(static_cast<std::int64_t>(a.shape.rank()), a.dims);
}

// The cases of reduction `op`, f (reference fold r), over kAxes with inputs
// in [low, high). `kernel_backward`: which cases record "<op> backward" (the
// others differentiate through public ops); `include`: which of kAxes to run.
// The trailing, moved and split axes cases run on f16 and bf16 x too: f32
// leaves cast to the dtype, reduced, and cast back (half_variant; the gradient
// reaches the 16-bit reduction's backward through the casts).
std::vector<OpCase> over_axes(const char* op, const Reduce& f, const Fold& r, double low, double high,
                              const std::function<bool(const Axes&)>& kernel_backward,
                              const std::function<bool(const Axes&)>& include = [](const Axes&) { return true; }) {
  std::vector<OpCase> cases;
  std::uint64_t seed = 51;
  for (const Axes& a : kAxes) {
    if (!include(a)) continue;
    const std::vector<int> dims = a.dims;
    const bool keepdim = a.keepdim;
    const ReferenceForward ref = [r, xs = a.shape.to_vector(), nd = normal_dims(a)](const RefInputs& x) {
      return oa::reference::reduce_axes(x[0], xs, nd, r);
    };
    cases.push_back({a.label, {random_input(a.shape, seed++, low, high, a.grads)},
                     [f, dims, keepdim](const Inputs& x) { return f(x[0], dims, keepdim); }, ref, kGradTolerance, {}, kernel_backward(a)});
    if (a.shape.rank() < 2 || !a.grads || a.label == std::string("lead2x3x4")) continue;
    OpCase c = cases.back();
    for (DType dtype : {DType::F16, DType::BF16}) {
      c.inputs = {random_input(a.shape, seed++, low, high)};
      cases.push_back(half_variant(op, c, dtype));
    }
  }
  return cases;
}

double fold_sum(const std::vector<double>& v) {
  double s = 0;
  for (double e : v) s += e;
  return s;
}
double fold_mean(const std::vector<double>& v) { return fold_sum(v) / static_cast<double>(v.size()); }
double fold_max(const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); }
double fold_min(const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); }
double fold_prod(const std::vector<double>& v) {
  double p = 1;
  for (double e : v) p *= e;
  return p;
}
Fold fold_var(double correction) {
  return [correction](const std::vector<double>& v) {
    const double m = fold_mean(v);
    double s = 0;
    for (double e : v) s += (e - m) * (e - m);
    return s / std::max(0.0, static_cast<double>(v.size()) - correction);
  };
}
double fold_logsumexp(const std::vector<double>& v) {
  const double m = fold_max(v);
  double s = 0;
  for (double e : v) s += std::exp(e - m);
  return m + std::log(s);
}
Fold fold_norm(double p) {
  return [p](const std::vector<double>& v) {
    double s = 0;
    for (double e : v) s = std::isinf(p) ? std::max(s, std::abs(e)) : s + std::pow(std::abs(e), p);
    return std::isinf(p) ? s : std::pow(s, 1 / p);
  };
}

bool never(const Axes&) { return false; }
bool short_rows(const Axes& a) { return a.grads; }
// Groups of more than one element (n - 1 > 0).
bool several(const Axes& a) { return a.shape.rank() > 0; }
bool kept_contiguous(const Axes& a) { return !a.split; }
bool trailing(const Axes& a) { return !a.moves; }

Reduce with_correction(Matrix (*f)(const Matrix&, const std::vector<int>&, float, bool), float correction) {
  return [f, correction](const Matrix& x, const std::vector<int>& dims, bool keepdim) { return f(x, dims, correction, keepdim); };
}
Reduce with_order(float p) {
  return [p](const Matrix& x, const std::vector<int>& dims, bool keepdim) { return oa::matrix::norm(x, p, dims, keepdim); };
}

// Cases of one op over two variants (var's corrections, norm's orders), labelled by suffix.
std::vector<OpCase> variants(std::vector<std::pair<std::string, std::vector<OpCase>>> parts) {
  std::vector<OpCase> out;
  for (auto& [suffix, cases] : parts)
    for (auto& c : cases) {
      c.label += suffix;
      out.push_back(std::move(c));
    }
  return out;
}

Matrix sum_dims(const Matrix& x, const std::vector<int>& d, bool k) { return oa::matrix::sum(x, d, k); }
Matrix mean_dims(const Matrix& x, const std::vector<int>& d, bool k) { return oa::matrix::mean(x, d, k); }
Matrix max_dims(const Matrix& x, const std::vector<int>& d, bool k) { return oa::matrix::max(x, d, k); }

// Cases of reduction f (reference fold r) on int32 x (integers in [-2e5,
// 2e5): exact int32 sums, no overflow) and bool x (read as 1 and 0 by the
// kernel) over kAxes; no gradient. Max and min of an empty kAxes entry have
// none. The result's dtype is f's (i32, or bool for max and min of bool).
std::vector<OpCase> integer_cases(const Reduce& f, const Fold& r) {
  std::vector<OpCase> cases;
  std::uint64_t seed = 91;
  for (const Axes& a : kAxes)
    for (DType dtype : {DType::I32, DType::Bool}) {
      const bool ints = dtype == DType::I32;
      GradInput x = random_input(a.shape, seed++, ints ? -2e5 : 0, ints ? 2e5 : 2, false);
      for (float& v : x.values) v = std::floor(v);
      x.dtype = dtype;
      cases.push_back({std::string(a.label) + "_" + std::string(to_string(dtype)),
                       {x},
                       [f, dims = a.dims, keepdim = a.keepdim](const Inputs& in) { return f(in[0], dims, keepdim); },
                       [r, xs = a.shape.to_vector(), nd = normal_dims(a)](const RefInputs& in) {
                         return oa::reference::reduce_axes(in[0], xs, nd, r);
                       },
                       kGradTolerance,
                       {},
                       false});
    }
  return cases;
}

OA_OP_CASES(sum, "oa::matrix::sum") {
  return variants({{"", over_axes("oa::matrix::sum", sum_dims, fold_sum, -2, 2, kept_contiguous)}, {"", integer_cases(sum_dims, fold_sum)}});
}
OA_OP_CASES(mean, "oa::matrix::mean") { return over_axes("oa::matrix::mean", mean_dims, fold_mean, -2, 2, kept_contiguous); }
OA_OP_CASES(max, "oa::matrix::max") {
  return variants({{"", over_axes("oa::matrix::max", max_dims, fold_max, -2, 2, trailing)}, {"", integer_cases(max_dims, fold_max)}});
}
OA_OP_CASES(min, "oa::matrix::min") {
  return variants({{"", over_axes("oa::matrix::min", oa::matrix::min, fold_min, -2, 2, trailing)},
                   {"", integer_cases(oa::matrix::min, fold_min)}});
}
OA_OP_CASES(prod, "oa::matrix::prod") {
  std::vector<OpCase> cases = over_axes("oa::matrix::prod", oa::matrix::prod, fold_prod, 0.6, 1.5, never, short_rows);
  // Groups of a [3, 4] x holding no zero, one zero and two zeros (torch.prod's three gradient cases).
  cases.push_back({"zeros3x4",
                   {{{3, 4}, {0.5f, -1.5f, 2.0f, 1.25f, 0.0f, 0.75f, -2.0f, 1.5f, 0.0f, 1.5f, 0.0f, -0.5f}, true}},
                   [](const Inputs& x) { return oa::matrix::prod(x[0], {1}); },
                   [](const RefInputs& x) { return oa::reference::reduce_axes(x[0], {3, 4}, {1}, fold_prod); },
                   kGradTolerance,
                   {},
                   false});
  return cases;
}
OA_OP_CASES(var, "oa::matrix::var") {
  return variants({{"", over_axes("oa::matrix::var", with_correction(oa::matrix::var, 1.0f), fold_var(1), -2, 2, never, several)},
                   {"_c0", over_axes("oa::matrix::var", with_correction(oa::matrix::var, 0.0f), fold_var(0), -2, 2, never, short_rows)}});
}
OA_OP_CASES(std, "oa::matrix::std") {
  return variants({{"", over_axes("oa::matrix::std", with_correction(oa::matrix::std, 1.0f),
                                  [](const std::vector<double>& v) { return std::sqrt(fold_var(1)(v)); },
                                  -2, 2, never, several)},
                   {"_c0", over_axes("oa::matrix::std", with_correction(oa::matrix::std, 0.0f),
                                     [](const std::vector<double>& v) { return std::sqrt(fold_var(0)(v)); }, -2, 2, never,
                                     [](const Axes& a) { return a.grads && a.shape.rank() > 0; })}});
}
OA_OP_CASES(logsumexp, "oa::matrix::logsumexp") {
  return over_axes("oa::matrix::logsumexp", oa::matrix::logsumexp, fold_logsumexp, -3, 3, never);
}
OA_OP_CASES(norm, "oa::matrix::norm") {
  const double inf = std::numeric_limits<double>::infinity();
  return variants({{"_p2", over_axes("oa::matrix::norm", with_order(2.0f), fold_norm(2), -2, 2, never)},
                   {"_p1", over_axes("oa::matrix::norm", with_order(1.0f), fold_norm(1), -2, 2, never, short_rows)},
                   {"_pinf", over_axes("oa::matrix::norm", with_order(std::numeric_limits<float>::infinity()), fold_norm(inf), -2, 2,
                                       never, short_rows)}});
}

// argmax or argmin along one axis: the last (the row kernel on x itself),
// others (x permuted first), negative ones, keepdim, a row past one segment;
// f16 and bf16 x along one axis of each kind; i32 x (integers in [-8, 8]:
// ties, the first index wins) along each.
std::vector<OpCase> along_axis(Matrix (*f)(const Matrix&, int, bool), const Fold& pick) {
  struct Along {
    Shape shape;
    int dim;
    bool keepdim;
  };
  const std::vector<Along> along = {{{5}, 0, false},        {{3, 7}, -1, true},     {{3, 7}, 0, false},     {{2, 3, 33}, 1, true},
                                    {{2, 3, 33}, -3, false}, {{2, 1030, 3}, 1, false}, {{2, 3, 1030}, 2, false}};
  std::vector<OpCase> cases;
  std::uint64_t seed = 51;
  for (DType dtype : {DType::F32, DType::F16, DType::BF16, DType::I32})
    for (const Along& a : along) {
      if ((dtype == DType::F16 || dtype == DType::BF16) && a.shape.rank() != 2) continue;
      GradInput x = random_input(a.shape, seed++, -2, 2, false);
      if (dtype == DType::I32)
        for (float& v : x.values) v = std::round(4 * v);
      x.dtype = dtype;
      const auto rank = static_cast<int>(a.shape.rank());
      const std::int64_t axis = a.dim < 0 ? a.dim + rank : a.dim;
      cases.push_back({label("x", a.shape.numel()) + label("_dim", axis) + (a.keepdim ? "_keepdim_" : "_") + std::string(to_string(dtype)),
                       {x},
                       [f, a](const Inputs& in) { return f(in[0], a.dim, a.keepdim); },
                       [pick, xs = a.shape.to_vector(), axis](const RefInputs& in) {
                         return oa::reference::reduce_axes(in[0], xs, {axis}, pick);
                       }});
    }
  return cases;
}

// The first index of the largest (fold_argmax) or smallest value.
double fold_argmax(const std::vector<double>& v) { return static_cast<double>(std::max_element(v.begin(), v.end()) - v.begin()); }
double fold_argmin(const std::vector<double>& v) { return static_cast<double>(std::min_element(v.begin(), v.end()) - v.begin()); }

OA_OP_CASES(argmax, "oa::matrix::argmax") { return along_axis(oa::matrix::argmax, fold_argmax); }
OA_OP_CASES(argmin, "oa::matrix::argmin") { return along_axis(oa::matrix::argmin, fold_argmin); }

OA_OP_CASES(cumsum, "oa::matrix::cumsum") {
  struct Scan {
    const char* label;
    Shape shape;
    int dim;
  };
  const std::vector<Scan> scans = {{"x7", {7}, 0},           {"rows3x5", {3, 5}, 1},  {"cols3x5", {3, 5}, 0},
                                   {"middle2x3x4", {2, 3, 4}, -2}, {"long2x600", {2, 600}, -1}, {"scalar", {}, 0}};
  std::vector<OpCase> cases;
  std::uint64_t seed = 81;
  for (const auto& s : scans) {
    const auto rank = static_cast<int>(s.shape.rank());
    const auto axis = static_cast<std::size_t>(s.dim < 0 ? s.dim + rank : s.dim);
    cases.push_back({s.label, {random_input(s.shape, seed++, -2, 2)}, [dim = s.dim](const Inputs& x) { return oa::matrix::cumsum(x[0], dim); },
                     [xs = s.shape.to_vector(), axis](const RefInputs& x) { return oa::reference::cumsum(x[0], xs, axis); }});
  }
  return cases;
}

OA_OP_CASES(sum_to, "oa::matrix::sum_to") {
  struct Target {
    const char* label;
    Shape x, target;
  };
  const std::vector<Target> targets = {{"scalar", {3, 5}, {}},          {"rows", {4, 6}, {6}},
                                       {"channels", {2, 3, 2, 2}, {1, 3, 1, 1}}, {"leading", {2, 3, 4}, {3, 4}},
                                       {"split", {2, 3, 4}, {2, 1, 4}},           {"split_rank", {2, 3, 5, 4}, {3, 1, 4}}};
  std::vector<OpCase> cases;
  std::uint64_t seed = 71;
  for (const auto& t : targets)
    cases.push_back({t.label, {random_input(t.x, seed++)}, [target = t.target](const Inputs& x) { return oa::matrix::sum_to(x[0], target); },
                     [xs = t.x.to_vector(), target = t.target.to_vector()](const RefInputs& x) {
                       return oa::reference::sum_to(x[0], xs, target);
                     },
                     kGradTolerance,
                     {},
                     std::string(t.label).rfind("split", 0) != 0});  // split targets differentiate through oa::matrix::expand
  return cases;
}

}  // namespace
}  // namespace oa::test
