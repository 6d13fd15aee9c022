// Op table cases of the layout ops (oa/matrix/layout.hpp) and of
// concatenation and splitting (oa/matrix/concat.hpp).
#include <optional>

#include "ops/op_table.hpp"
#include "reference/concat.hpp"
#include "reference/indexing.hpp"
#include "reference/layout.hpp"

namespace oa::test {
namespace {

// Ranks 1 to 8, negative axes, and transpose(x, dim0, dim1), a permute.
OA_OP_CASES(permute, "oa::matrix::permute") {
  struct Case {
    const char* label;
    Shape x;
    std::vector<std::int64_t> dims;
  };
  const std::vector<Case> cs = {{"rank1", {5}, {0}},
                                {"swap", {3, 4}, {1, 0}},
                                {"rotate", {2, 3, 4}, {2, 0, 1}},
                                {"middle", {2, 3, 4, 5}, {0, 2, 1, 3}},
                                {"reverse", {2, 1, 3, 2, 2}, {4, 3, 2, 1, 0}},
                                {"rank8", {1, 2, 1, 2, 1, 2, 1, 2}, {7, 0, 6, 1, 5, 2, 4, 3}},
                                {"negative", {2, 3, 4, 2}, {0, -1, 1, 2}}};
  std::vector<OpCase> cases;
  std::uint64_t seed = 171;
  for (const auto& c : cs) {
    std::vector<std::int64_t> dims = c.dims;
    for (auto& d : dims) d = d < 0 ? d + static_cast<std::int64_t>(c.x.rank()) : d;
    cases.push_back({c.label, {random_input(c.x, seed++)}, [d = c.dims](const Inputs& x) { return oa::matrix::permute(x[0], d); },
                     [xs = c.x.to_vector(), dims](const RefInputs& x) { return reference::permute(x[0], xs, dims); }});
  }
  cases.push_back({"transpose", {random_input({2, 3, 4, 5}, seed)}, [](const Inputs& x) { return oa::matrix::transpose(x[0], 1, -1); },
                   [](const RefInputs& x) { return reference::permute(x[0], {2, 3, 4, 5}, {0, 3, 2, 1}); }});
  return with_dtypes("oa::matrix::permute", cases);
}

// Python slicing: negative and clamped bounds, steps, an empty range, and
// narrow (a slice of a given length; start may count from the end).
OA_OP_CASES(slice, "oa::matrix::slice") {
  struct Case {
    const char* label;
    Shape x;
    int axis;
    std::optional<std::int64_t> start, stop;
    std::int64_t step;
    std::int64_t b, e;  // the normalised range
  };
  const std::vector<Case> cs = {{"range", {10}, 0, 2, 8, 1, 2, 8},
                                {"from_end", {10}, 0, -3, {}, 1, 7, 10},
                                {"step", {10}, -1, {}, {}, 3, 0, 10},
                                {"both_ends", {4, 9}, 1, 1, -1, 2, 1, 8},
                                {"empty", {4, 9}, 0, 5, 2, 1, 4, 4},
                                {"clamped", {3, 4, 5}, 1, -100, 100, 2, 0, 4},
                                {"inner", {2, 3, 4, 5}, 2, 3, {}, 1, 3, 4},
                                {"first", {2, 3, 4, 5}, 0, 1, 2, 1, 1, 2}};
  std::vector<OpCase> cases;
  std::uint64_t seed = 181;
  for (const auto& c : cs) {
    const std::size_t axis = static_cast<std::size_t>(c.axis < 0 ? c.axis + static_cast<int>(c.x.rank()) : c.axis);
    cases.push_back({c.label, {random_input(c.x, seed++)},
                     [c](const Inputs& x) { return oa::matrix::slice(x[0], c.axis, c.start, c.stop, c.step); },
                     [c, axis](const RefInputs& x) { return reference::slice(x[0], c.x.to_vector(), axis, c.b, c.e, c.step); }});
  }
  cases.push_back({"narrow", {random_input({3, 8}, seed)}, [](const Inputs& x) { return oa::matrix::narrow(x[0], 1, -5, 3); },
                   [](const RefInputs& x) { return reference::slice(x[0], {3, 8}, 1, 3, 6, 1); }});
  return with_dtypes("oa::matrix::slice", cases);
}

OA_OP_CASES(expand, "oa::matrix::expand") {
  struct Case {
    const char* label;
    Shape x;
    std::vector<std::int64_t> shape, out;
  };
  // Broadcast axes trailing (the gradient is one sum) and leading or inner
  // (the gradient permutes them last first): a backward of other ops.
  const std::vector<Case> cs = {{"columns", {3, 1}, {3, 4}, {3, 4}},
                                {"new_axes", {4}, {2, 3, 4}, {2, 3, 4}},
                                {"mixed", {1, 3, 1}, {2, -1, 5}, {2, 3, 5}}};
  std::vector<OpCase> cases;
  std::uint64_t seed = 191;
  for (const auto& c : cs) {
    cases.push_back({c.label, {random_input(c.x, seed++)}, [s = c.shape](const Inputs& x) { return oa::matrix::expand(x[0], s); },
                     [xs = c.x.to_vector(), out = c.out](const RefInputs& x) { return oa::reference::expand(x[0], xs, out); },
                     kGradTolerance, {}, false});
  }
  // Bool x (a where's operands), four bytes to a word: 15 results.
  cases.push_back({"bool", {integers({3, 1}, seed, DType::Bool)}, [](const Inputs& x) { return oa::matrix::expand(x[0], {3, 5}); },
                   [](const RefInputs& x) { return oa::reference::expand(x[0], {3, 1}, {3, 5}); }});
  return cases;
}

// concat of two or three operands on the first, a middle and the last axis,
// and stack (a concat of the operands each given a unit axis).
OA_OP_CASES(concat, "oa::matrix::concat") {
  struct Case {
    const char* label;
    std::vector<Shape> xs;
    int axis;
  };
  const std::vector<Case> cs = {{"first", {{2, 3}, {1, 3}}, 0}, {"middle", {{2, 1, 3}, {2, 4, 3}, {2, 2, 3}}, 1}, {"last", {{3, 2}, {3, 5}}, -1}};
  std::vector<OpCase> cases;
  std::uint64_t seed = 201;
  for (const auto& c : cs) {
    std::vector<GradInput> inputs;
    std::vector<std::vector<std::int64_t>> shapes;
    for (const auto& s : c.xs) {
      inputs.push_back(random_input(s, seed++));
      shapes.push_back(s.to_vector());
    }
    const std::size_t axis = c.axis < 0 ? shapes[0].size() - 1 : static_cast<std::size_t>(c.axis);
    cases.push_back({c.label, inputs, [axis = c.axis](const Inputs& x) { return oa::matrix::concat(x, axis); },
                     [shapes, axis](const RefInputs& x) { return oa::reference::concat(x, shapes, axis); }});
  }
  // An operand that needs no gradient.
  cases.push_back({"one_without_grad",
                   {random_input({2, 3, 4}, seed), random_input({2, 1, 4}, seed + 1), random_input({2, 2, 4}, seed + 2, -1, 1, false)},
                   [](const Inputs& x) { return oa::matrix::concat(x, 1); },
                   [](const RefInputs& x) { return reference::concat(x, {{2, 3, 4}, {2, 1, 4}, {2, 2, 4}}, 1); }});
  seed += 3;
  cases.push_back({"stack", {random_input({2, 3}, seed), random_input({2, 3}, seed + 1)},
                   [](const Inputs& x) { return oa::matrix::stack(x, 1); },
                   [](const RefInputs& x) { return oa::reference::concat(x, {{2, 1, 3}, {2, 1, 3}}, 1); }});
  return with_dtypes("oa::matrix::concat", cases);
}

// One part of a chunk or split: the gradient of x is zero outside it.
OA_OP_CASES(chunk, "oa::matrix::chunk") {
  std::vector<OpCase> cases;
  cases.push_back({"last_of_3", {random_input({2, 6}, 211)}, [](const Inputs& x) { return oa::matrix::chunk(x[0], 3)[2]; },
                   [](const RefInputs& x) { return oa::reference::slice(x[0], {2, 6}, 1, 4, 6, 1); }});
  cases.push_back({"rows", {random_input({4, 3}, 212)}, [](const Inputs& x) { return oa::matrix::chunk(x[0], 2, 0)[0]; },
                   [](const RefInputs& x) { return oa::reference::slice(x[0], {4, 3}, 0, 0, 2, 1); }});
  cases.push_back({"odd", {random_input({3, 5}, 213)}, [](const Inputs& x) { return oa::matrix::chunk(x[0], 2, 1)[1]; },
                   [](const RefInputs& x) { return oa::reference::slice(x[0], {3, 5}, 1, 3, 5, 1); }});
  return with_dtypes("oa::matrix::chunk", cases);
}

OA_OP_CASES(split, "oa::matrix::split") {
  std::vector<OpCase> cases;
  cases.push_back({"sizes", {random_input({2, 7}, 221)},
                   [](const Inputs& x) { return oa::matrix::split(x[0], std::vector<std::int64_t>{2, 4, 1})[1]; },
                   [](const RefInputs& x) { return oa::reference::slice(x[0], {2, 7}, 1, 2, 6, 1); }});
  cases.push_back({"size", {random_input({5, 2, 3}, 222)}, [](const Inputs& x) { return oa::matrix::split(x[0], 2, 0)[2]; },
                   [](const RefInputs& x) { return oa::reference::slice(x[0], {5, 2, 3}, 0, 4, 5, 1); }});
  return with_dtypes("oa::matrix::split", cases);
}

}  // namespace
}  // namespace oa::test
