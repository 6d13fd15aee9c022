// Op table cases of the reductions (oa/matrix/reduction.hpp).
#include <algorithm>
#include <functional>

#include "ops/op_table.hpp"
#include "reference/reduction.hpp"

namespace oa::test {
namespace {

// A last-axis reduction over short, odd and long rows (several workgroups a
// row), with and without keepdim; `grads`: whether the op has a backward.
std::vector<OpCase> last_axis(const std::function<Matrix(const Matrix&, bool)>& f,
                              const std::function<std::vector<double>(const std::vector<double>&, std::int64_t, std::int64_t)>& r,
                              bool grads = true) {
  std::vector<OpCase> cases;
  std::uint64_t seed = 51;
  for (const Shape& shape : {Shape{5}, Shape{3, 7}, Shape{2, 3, 33}, Shape{2, 3, 1030}})
    for (bool keepdim : {false, true}) {
      const std::int64_t L = shape.cols(), rows = shape.numel() / L;
      cases.push_back({label("x", shape.numel()) + (keepdim ? "_keepdim" : ""),
                       {random_input(shape, seed++, -2, 2, grads)},
                       [f, keepdim](const Inputs& x) { return f(x[0], keepdim); },
                       [r, rows, L](const RefInputs& x) { return r(x[0], rows, L); }});
    }
  return cases;
}

std::vector<double> sums(const std::vector<double>& x, std::int64_t rows, std::int64_t L) {
  return oa::reference::row_sums(x, rows, L);
}
std::vector<double> means(const std::vector<double>& x, std::int64_t rows, std::int64_t L) {
  std::vector<double> s = sums(x, rows, L);
  for (auto& v : s) v /= static_cast<double>(L);
  return s;
}
std::vector<double> maxima(const std::vector<double>& x, std::int64_t rows, std::int64_t L) {
  return oa::reference::row_max(x, rows, L);
}
std::vector<double> argmaxima(const std::vector<double>& x, std::int64_t rows, std::int64_t L) {
  std::vector<std::int32_t> index;
  oa::reference::row_max(x, rows, L, &index);
  return {index.begin(), index.end()};
}

OA_OP_CASES(sum, "oa::matrix::sum") { return last_axis(oa::matrix::sum, sums); }
OA_OP_CASES(mean, "oa::matrix::mean") { return last_axis(oa::matrix::mean, means); }
OA_OP_CASES(max, "oa::matrix::max") { return last_axis(oa::matrix::max, maxima); }
OA_OP_CASES(argmax, "oa::matrix::argmax") { return last_axis(oa::matrix::argmax, argmaxima, false); }

// A reduction of all elements, over one element, a matrix and more than one workgroup.
std::vector<OpCase> all(const std::function<Matrix(const Matrix&)>& f,
                        const std::function<std::vector<double>(const std::vector<double>&, std::int64_t, std::int64_t)>& r) {
  std::vector<OpCase> cases;
  std::uint64_t seed = 61;
  for (const Shape& shape : {Shape{1}, Shape{4, 5}, Shape{3, 700}})
    cases.push_back({label("x", shape.numel()), {random_input(shape, seed++, -2, 2)}, [f](const Inputs& x) { return f(x[0]); },
                     [r, n = shape.numel()](const RefInputs& x) { return r(x[0], 1, n); }});
  return cases;
}

OA_OP_CASES(sum_all, "oa::matrix::sum_all") { return all(oa::matrix::sum_all, sums); }
OA_OP_CASES(mean_all, "oa::matrix::mean_all") { return all(oa::matrix::mean_all, means); }
OA_OP_CASES(max_all, "oa::matrix::max_all") { return all(oa::matrix::max_all, maxima); }

OA_OP_CASES(sum_to, "oa::matrix::sum_to") {
  struct Target {
    const char* label;
    Shape x, target;
  };
  const std::vector<Target> targets = {{"scalar", {3, 5}, {}},          {"rows", {4, 6}, {6}},
                                       {"channels", {2, 3, 2, 2}, {1, 3, 1, 1}}, {"leading", {2, 3, 4}, {3, 4}}};
  std::vector<OpCase> cases;
  std::uint64_t seed = 71;
  for (const auto& t : targets)
    cases.push_back({t.label, {random_input(t.x, seed++)}, [target = t.target](const Inputs& x) { return oa::matrix::sum_to(x[0], target); },
                     [xs = t.x.to_vector(), target = t.target.to_vector()](const RefInputs& x) {
                       return oa::reference::sum_to(x[0], xs, target);
                     }});
  return cases;
}

std::vector<double> argminima(const std::vector<double>& x, std::int64_t rows, std::int64_t L) {
  std::vector<double> negated(x.size());
  std::transform(x.begin(), x.end(), negated.begin(), [](double v) { return -v; });
  return argmaxima(negated, rows, L);
}

OA_OP_CASES(argmin, "oa::matrix::argmin") { return last_axis(oa::matrix::argmin, argminima, false); }

}  // namespace
}  // namespace oa::test
