// Op table cases of the indexing ops (oa/matrix/indexing.hpp).
#include <limits>

#include "ops/op_table.hpp"
#include "reference/indexing.hpp"

namespace oa::test {
namespace {

// Repeated indices (their gradients add up); indices outside [0, N) raise
// (matrix/indexing_test.cpp).
OA_OP_CASES(index_select, "oa::matrix::index_select") {
  struct Case {
    const char* label;
    Shape x;
    int dim;
    std::vector<float> index;
  };
  const std::vector<Case> cs = {{"rows", {4, 5}, 0, {3, 0, 3}}, {"last", {2, 3, 5}, -1, {4, 0, 1, 2, 1}}, {"middle", {2, 3, 4}, 1, {2}}};
  std::vector<OpCase> cases;
  std::uint64_t seed = 121;
  for (const auto& c : cs) {
    const std::vector<std::int64_t> xs = c.x.to_vector();
    const std::size_t dim = c.dim < 0 ? xs.size() - 1 : static_cast<std::size_t>(c.dim);
    cases.push_back({c.label, {random_input(c.x, seed++), ints({static_cast<std::int64_t>(c.index.size())}, c.index)},
                     [dim = c.dim](const Inputs& x) { return oa::matrix::index_select(x[0], dim, x[1]); },
                     [xs, dim](const RefInputs& x) { return oa::reference::index_select(x[0], xs, dim, as_ints(x[1])); }});
  }
  return with_dtypes("oa::matrix::index_select", cases);
}

OA_OP_CASES(gather, "oa::matrix::gather") {
  std::vector<OpCase> cases;
  const std::vector<std::int64_t> xs = {3, 4};
  cases.push_back({"last", {random_input({3, 4}, 131), ints({3, 4}, {3, 0, 0, 1, 2, 2, 2, 2, 1, 3, 0, 3})},
                   [](const Inputs& x) { return oa::matrix::gather(x[0], 1, x[1]); },
                   [xs](const RefInputs& x) { return oa::reference::gather(x[0], xs, 1, as_ints(x[1]), {3, 4}); }});
  cases.push_back({"rows", {random_input({3, 4}, 132), ints({2, 4}, {2, 0, 1, 1, 0, 0, 2, 1})},
                   [](const Inputs& x) { return oa::matrix::gather(x[0], 0, x[1]); },
                   [xs](const RefInputs& x) { return oa::reference::gather(x[0], xs, 0, as_ints(x[1]), {2, 4}); }});
  // An index smaller than x outside dim cuts x first.
  cases.push_back({"smaller", {random_input({3, 4}, 133), ints({2, 2}, {1, 3, 0, 0})},
                   [](const Inputs& x) { return oa::matrix::gather(x[0], 1, x[1]); },
                   [](const RefInputs& x) {
                     std::vector<double> cut(x[0].begin(), x[0].begin() + 8);
                     return oa::reference::gather(cut, {2, 4}, 1, as_ints(x[1]), {2, 2});
                   },
                   kGradTolerance,
                   {"oa::matrix::slice", "oa::matrix::gather"}});
  return with_dtypes("oa::matrix::gather", cases);
}

OA_OP_CASES(scatter_add, "oa::matrix::scatter_add") {
  std::vector<OpCase> cases;
  cases.push_back({"rows", {random_input({3, 4}, 141), ints({2, 4}, {2, 0, 2, 1, 2, 2, 0, 1}), random_input({2, 4}, 142)},
                   [](const Inputs& x) { return oa::matrix::scatter_add(x[0], 0, x[1], x[2]); },
                   [](const RefInputs& x) { return oa::reference::scatter_add(x[0], {3, 4}, 0, as_ints(x[1]), {2, 4}, x[2], {2, 4}); }});
  cases.push_back({"last", {random_input({2, 5}, 143), ints({2, 3}, {4, 4, 0, 1, 3, 1}), random_input({2, 3}, 144)},
                   [](const Inputs& x) { return oa::matrix::scatter_add(x[0], -1, x[1], x[2]); },
                   [](const RefInputs& x) { return oa::reference::scatter_add(x[0], {2, 5}, 1, as_ints(x[1]), {2, 3}, x[2], {2, 3}); }});
  // A larger src is cut to index's shape first.
  cases.push_back({"larger_src", {random_input({3, 4}, 145), ints({2, 4}, {1, 1, 0, 2, 0, 2, 2, 1}), random_input({3, 5}, 146)},
                   [](const Inputs& x) { return oa::matrix::scatter_add(x[0], 0, x[1], x[2]); },
                   [](const RefInputs& x) { return oa::reference::scatter_add(x[0], {3, 4}, 0, as_ints(x[1]), {2, 4}, x[2], {3, 5}); },
                   kGradTolerance,
                   {"oa::matrix::slice", "oa::matrix::slice", "oa::matrix::scatter_add"}});
  for (std::size_t i = 0; i < 2; ++i)
    for (DType dtype : {DType::F16, DType::BF16}) cases.push_back(half_variant("oa::matrix::scatter_add", cases[i], dtype));
  // int32 x and src (no gradient), compared through float32.
  cases.push_back({"int32",
                   {ints({3, 2}, {16777216, -5, 0, 7, 1, 2}), ints({2, 2}, {2, 0, 0, 0}), ints({2, 2}, {3, 1, -9, 40000000})},
                   [](const Inputs& x) { return oa::matrix::cast(oa::matrix::scatter_add(x[0], 0, x[1], x[2]), DType::F32); },
                   [](const RefInputs& x) {
                     return oa::reference::scatter_add(x[0], {3, 2}, 0, as_ints(x[1]), {2, 2}, x[2], {2, 2});
                   },
                   kGradTolerance,
                   {"oa::matrix::scatter_add", "oa::matrix::cast"}});
  return cases;
}

OA_OP_CASES(where, "oa::matrix::where") {
  std::vector<OpCase> cases;
  cases.push_back({"same", {bools({2, 3}, {1, 0, 0, 1, 1, 0}), random_input({2, 3}, 151), random_input({2, 3}, 152)},
                   [](const Inputs& x) { return oa::matrix::where(x[0], x[1], x[2]); },
                   [](const RefInputs& x) { return oa::reference::where(as_bytes(x[0]), {2, 3}, x[1], {2, 3}, x[2], {2, 3}, {2, 3}); }});
  // A [3, 1] condition and a [4] y broadcast to x's [3, 4]: y is expanded first.
  cases.push_back({"broadcast", {bools({3, 1}, {1, 0, 1}), random_input({3, 4}, 153), random_input({4}, 154)},
                   [](const Inputs& x) { return oa::matrix::where(x[0], x[1], x[2]); },
                   [](const RefInputs& x) { return oa::reference::where(as_bytes(x[0]), {3, 1}, x[1], {3, 4}, x[2], {4}, {3, 4}); },
                   kGradTolerance,
                   {"oa::matrix::expand", "oa::matrix::where"}});
  // 15 elements: the last 32-bit word of a 16-bit result holds one.
  cases.push_back({"odd", {bools({3, 5}, {1, 0, 0, 1, 1, 0, 1, 1, 1, 0, 0, 0, 1, 0, 1}), random_input({3, 5}, 155), random_input({3, 5}, 156)},
                   [](const Inputs& x) { return oa::matrix::where(x[0], x[1], x[2]); },
                   [](const RefInputs& x) { return oa::reference::where(as_bytes(x[0]), {3, 5}, x[1], {3, 5}, x[2], {3, 5}, {3, 5}); }});
  const std::size_t n = cases.size();
  for (std::size_t i = 0; i < n; ++i)
    for (DType dtype : {DType::F16, DType::BF16}) cases.push_back(half_variant("oa::matrix::where", cases[i], dtype));
  // Bool x and y (no gradient), four to a word: 7 elements (a partial last word), then a [5, 1] condition and a
  // [3] y broadcast to x's [5, 3] (15 elements; y expanded first).
  cases.push_back({"bool_odd", {bools({7}, {1, 0, 0, 1, 1, 0, 1}), bools({7}, {1, 1, 0, 0, 1, 0, 1}), bools({7}, {0, 1, 1, 0, 0, 1, 1})},
                   [](const Inputs& x) { return oa::matrix::where(x[0], x[1], x[2]); },
                   [](const RefInputs& x) { return oa::reference::where(as_bytes(x[0]), {7}, x[1], {7}, x[2], {7}, {7}); }});
  cases.push_back({"bool_broadcast",
                   {bools({5, 1}, {1, 0, 1, 1, 0}), bools({5, 3}, {1, 0, 0, 1, 1, 0, 0, 0, 1, 1, 1, 1, 0, 1, 0}), bools({3}, {1, 0, 1})},
                   [](const Inputs& x) { return oa::matrix::where(x[0], x[1], x[2]); },
                   [](const RefInputs& x) { return oa::reference::where(as_bytes(x[0]), {5, 1}, x[1], {5, 3}, x[2], {3}, {5, 3}); },
                   kGradTolerance,
                   {"oa::matrix::expand", "oa::matrix::where"}});
  return cases;
}

OA_OP_CASES(masked_fill, "oa::matrix::masked_fill") {
  std::vector<OpCase> cases;
  cases.push_back({"same", {random_input({2, 3}, 161), bools({2, 3}, {0, 1, 0, 0, 1, 1})},
                   [](const Inputs& x) { return oa::matrix::masked_fill(x[0], x[1], -2.5f); },
                   [](const RefInputs& x) { return oa::reference::where(as_bytes(x[1]), {2, 3}, {}, {2, 3}, x[0], {2, 3}, {2, 3}, -2.5); }});
  cases.push_back({"broadcast_mask", {random_input({3, 4}, 162), bools({4}, {1, 0, 0, 1})},
                   [](const Inputs& x) { return oa::matrix::masked_fill(x[0], x[1], 7.0f); },
                   [](const RefInputs& x) { return oa::reference::where(as_bytes(x[1]), {4}, {}, {4}, x[0], {3, 4}, {3, 4}, 7.0); }});
  // 5 elements and a value that 16-bit dtypes round.
  cases.push_back({"odd", {random_input({5}, 163), bools({5}, {1, 0, 1, 1, 0})},
                   [](const Inputs& x) { return oa::matrix::masked_fill(x[0], x[1], 0.1f); },
                   [](const RefInputs& x) { return oa::reference::where(as_bytes(x[1]), {5}, {}, {5}, x[0], {5}, {5}, 0.1); }});
  const std::size_t n = cases.size();
  for (std::size_t i = 0; i < n; ++i)
    for (DType dtype : {DType::F16, DType::BF16}) cases.push_back(half_variant("oa::matrix::masked_fill", cases[i], dtype));
  // i32 x (no gradient): the value truncated toward zero, as torch converts it.
  cases.push_back({"i32", {ints({2, 3}, {4, -7, 0, 12, -1, 3}), bools({2, 3}, {0, 1, 0, 0, 1, 1})},
                   [](const Inputs& x) { return oa::matrix::masked_fill(x[0], x[1], -2.5f); },
                   [](const RefInputs& x) { return oa::reference::where(as_bytes(x[1]), {2, 3}, {}, {2, 3}, x[0], {2, 3}, {2, 3}, -2.0); }});
  cases.push_back({"i32_broadcast_mask", {ints({3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}), bools({4}, {1, 0, 0, 1})},
                   [](const Inputs& x) { return oa::matrix::masked_fill(x[0], x[1], 50257.0f); },
                   [](const RefInputs& x) { return oa::reference::where(as_bytes(x[1]), {4}, {}, {4}, x[0], {3, 4}, {3, 4}, 50257.0); }});
  // Bool x (no gradient): any nonzero value fills true, as torch converts; 5 and 9 elements (partial last words),
  // the second with a broadcast [3] mask filling false.
  cases.push_back({"bool_odd", {bools({5}, {0, 1, 0, 0, 1}), bools({5}, {1, 1, 0, 1, 0})},
                   [](const Inputs& x) { return oa::matrix::masked_fill(x[0], x[1], -0.25); },
                   [](const RefInputs& x) { return oa::reference::where(as_bytes(x[1]), {5}, {}, {5}, x[0], {5}, {5}, 1.0); }});
  cases.push_back({"bool_broadcast_mask", {bools({3, 3}, {1, 1, 0, 0, 1, 1, 1, 0, 1}), bools({3}, {1, 0, 1})},
                   [](const Inputs& x) { return oa::matrix::masked_fill(x[0], x[1], 0.0); },
                   [](const RefInputs& x) { return oa::reference::where(as_bytes(x[1]), {3}, {}, {3}, x[0], {3, 3}, {3, 3}, 0.0); }});
  return cases;
}

// nonzero counts the true elements (oa::matrix::sum, read back), then finds their coordinates; a non-bool x is
// compared with zero first (oa::matrix::ne, after a cast to f32 unless f32). No gradient.
OA_OP_CASES(nonzero, "oa::matrix::nonzero") {
  std::vector<OpCase> cases;
  cases.push_back({"bool_2d", {bools({3, 5}, {0, 1, 0, 0, 1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 1})},
                   [](const Inputs& x) { return oa::matrix::nonzero(x[0]); },
                   [](const RefInputs& x) { return oa::reference::nonzero(x[0], {3, 5}); },
                   kGradTolerance,
                   {"oa::matrix::sum", "oa::matrix::nonzero"}});
  // f32 x: -0 is zero, NaN nonzero.
  cases.push_back({"f32", {GradInput{{2, 4}, {0.0f, -0.0f, 1.5f, std::numeric_limits<float>::quiet_NaN(), 0.0f, -3.0f, 0.0f, 1e-30f}, false}},
                   [](const Inputs& x) { return oa::matrix::nonzero(x[0]); },
                   [](const RefInputs& x) { return oa::reference::nonzero(x[0], {2, 4}); },
                   kGradTolerance,
                   {"oa::matrix::ne", "oa::matrix::sum", "oa::matrix::nonzero"}});
  cases.push_back({"i32", {ints({7}, {0, 3, -2, 0, 0, 9, 1})}, [](const Inputs& x) { return oa::matrix::nonzero(x[0]); },
                   [](const RefInputs& x) { return oa::reference::nonzero(x[0], {7}); },
                   kGradTolerance,
                   {"oa::matrix::cast", "oa::matrix::ne", "oa::matrix::sum", "oa::matrix::nonzero"}});
  return cases;
}

// Lower and upper triangles of a batch of 3 x 4 matrices, on, above and below the diagonal.
std::vector<OpCase> triangle(bool upper) {
  std::vector<OpCase> cases;
  std::uint64_t seed = 161;
  for (const std::int64_t diagonal : {0, 1, -2})
    cases.push_back({label(diagonal < 0 ? "below" : "diagonal", diagonal < 0 ? -diagonal : diagonal), {random_input({2, 3, 4}, seed++)},
                     [=](const Inputs& x) { return upper ? oa::matrix::triu(x[0], diagonal) : oa::matrix::tril(x[0], diagonal); },
                     [=](const RefInputs& x) { return oa::reference::triangle(x[0], {2, 3, 4}, diagonal, upper); }});
  return cases;
}

OA_OP_CASES(tril, "oa::matrix::tril") { return with_dtypes("oa::matrix::tril", triangle(false)); }
OA_OP_CASES(triu, "oa::matrix::triu") { return with_dtypes("oa::matrix::triu", triangle(true)); }

// Indices outside [0, classes) raise (matrix/indexing_test.cpp).
OA_OP_CASES(one_hot, "oa::matrix::one_hot") {
  return {{"rows",
           {ints({2, 3}, {0, 2, 3, 0, 1, 3})},
           [](const Inputs& x) { return oa::matrix::one_hot(x[0], 4); },
           [](const RefInputs& x) { return oa::reference::one_hot(as_ints(x[0]), 4); }},
          {"int32",
           {ints({5}, {1, 0, 2, 2, 0})},
           [](const Inputs& x) { return oa::matrix::cast(oa::matrix::one_hot(x[0], 3, DType::I32), DType::F32); },
           [](const RefInputs& x) { return oa::reference::one_hot(as_ints(x[0]), 3); },
           kGradTolerance,
           {"oa::matrix::one_hot", "oa::matrix::cast"}}};
}

// Repeated indices along either axis (their gradients add up).
OA_OP_CASES(take_along_axis, "oa::matrix::take_along_axis") {
  std::vector<OpCase> cases;
  cases.push_back({"last", {random_input({3, 4}, 171), ints({3, 2}, {3, 3, 0, 1, 2, 0})},
                   [](const Inputs& x) { return oa::matrix::take_along_axis(x[0], x[1], -1); },
                   [](const RefInputs& x) { return oa::reference::take_along_axis(x[0], {3, 4}, as_ints(x[1]), {3, 2}, 1); }});
  cases.push_back({"rows", {random_input({3, 4}, 172), ints({2, 4}, {2, 0, 1, 1, 2, 2, 0, 1})},
                   [](const Inputs& x) { return oa::matrix::take_along_axis(x[0], x[1], 0); },
                   [](const RefInputs& x) { return oa::reference::take_along_axis(x[0], {3, 4}, as_ints(x[1]), {2, 4}, 0); }});
  return with_dtypes("oa::matrix::take_along_axis", cases);
}

// The k largest or smallest along either axis, sorted (distinct values: the
// gradient flows to the chosen positions).
OA_OP_CASES(topk, "oa::matrix::topk") {
  std::vector<OpCase> cases;
  std::uint64_t seed = 181;
  for (const bool largest : {true, false})
    for (const int axis : {-1, 0})
      cases.push_back({std::string(largest ? "largest" : "smallest") + (axis < 0 ? "_last" : "_rows"), {random_input({3, 5}, seed++)},
                       [=](const Inputs& x) { return oa::matrix::topk(x[0], 2, axis, largest).values; },
                       [=](const RefInputs& x) {
                         return oa::reference::topk(x[0], {3, 5}, axis < 0 ? 1 : 0, 2, largest);
                       }});
  return with_dtypes("oa::matrix::topk", cases, {DType::I32});
}

}  // namespace
}  // namespace oa::test
