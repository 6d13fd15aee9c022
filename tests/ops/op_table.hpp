#pragma once
// The op test table (as ggml's test-backend-ops): every public op registers
// its cases once, by its contract name (oa/core/op.hpp), and one driver
// (op_table_test.cpp) runs each case: the GPU output against the f64
// reference, every gradient against central finite differences of that
// reference (support/gradcheck.hpp) and the trace, which must record the op
// under its contract name as one semantic op (and its backward as
// "<name> backward" when a gradient is checked). OpTable.EveryContractHasCases
// fails for a contract without cases.
//
//   OA_OP_CASES(exp, "oa::matrix::exp") {
//     return {{"3x5", {random_input({3, 5}, 1)}, [](const Inputs& x) { return oa::matrix::exp(x[0]); },
//              [](const RefInputs& x) { return ref::map(x[0], [](double v) { return std::exp(v); }); }}};
//   }
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "oa/oa.hpp"
#include "reference/dtype.hpp"
#include "support/gradcheck.hpp"

namespace oa::test {

using Inputs = std::vector<Matrix>;
using RefInputs = std::vector<std::vector<double>>;

// One case of an op. `label` tells the op's cases apart ([A-Za-z0-9_] only:
// it is part of the test's name). Inputs that require grad get their gradient
// checked; an op without a backward gives inputs that do not. `traced` is how
// the forward trace must read: empty means the op alone, once; a case whose
// callable records more (a composite such as the materialised attention path,
// an optimizer's steps with the backward that makes their gradients) lists
// every label it records, in order, the op's own among them.
struct OpCase {
  std::string label;
  std::vector<GradInput> inputs;
  GpuForward run;
  ReferenceForward reference;
  GradTolerance tolerance = kGradTolerance;
  std::vector<std::string> traced = {};
  // Whether the backward records "<name> backward" (false for an op whose
  // backward rule applies other public ops).
  bool backward_traced = true;
};

// prefix followed by n ("x" and 15 give "x15"), for case labels.
inline std::string label(const char* prefix, std::int64_t n) {
  std::string s = prefix;
  s += std::to_string(n);
  return s;
}

// Tolerances of a result (and gradient) rounded once to the 16-bit `dtype`,
// from f32 leaves that the dtype holds exactly and a rounded output gradient.
inline GradTolerance reduced_tolerance(DType dtype) {
  GradTolerance t;
  const double e = dtype == DType::F16 ? 2e-3 : 1.6e-2;
  t.forward_rtol = t.forward_atol = e;
  t.grad_rtol = t.grad_atol = 2 * e;
  return t;
}

// Case `c` of op `op` on 16-bit operands: its f32 inputs (the first `count`
// of them, every one by default) rounded to `dtype` (their leaves stay f32),
// cast to `dtype` before the call and its result cast back to f32, so the
// trace reads a cast per such input, c's own labels (or `op`), a cast;
// tolerances as reduced_tolerance. The label gains "_<dtype>" (and "_x" with
// a count: a 16-bit x with f32 weights).
inline OpCase half_variant(const char* op, const OpCase& c, DType dtype, std::size_t count = SIZE_MAX) {
  OpCase h = c;
  h.label.append("_").append(to_string(dtype));
  if (count != SIZE_MAX) h.label.append("_x");
  std::vector<std::string> traced;
  std::size_t narrowed = 0;
  for (GradInput& in : h.inputs) {
    if (in.dtype != DType::F32 || narrowed++ >= count) continue;
    in.values = oa::reference::rounded(dtype == DType::F16 ? oa::reference::kF16 : oa::reference::kBF16, in.values);
    traced.push_back("oa::matrix::cast");
  }
  if (c.traced.empty()) traced.push_back(op);
  traced.insert(traced.end(), c.traced.begin(), c.traced.end());
  traced.push_back("oa::matrix::cast");
  h.traced = traced;
  h.tolerance = reduced_tolerance(dtype);
  h.run = [run = c.run, dtype, count](const Inputs& x) {
    Inputs narrow;
    std::size_t narrowed = 0;
    for (const Matrix& m : x) narrow.push_back(m.dtype() == DType::F32 && narrowed++ < count ? oa::matrix::cast(m, dtype) : m);
    return oa::matrix::cast(run(narrow), DType::F32);
  };
  return h;
}

// Index (I32) and mask (Bool) inputs, given as floats; their references'
// values back as integers.
inline GradInput ints(const Shape& shape, std::vector<float> values) { return {shape, std::move(values), false, DType::I32}; }
inline GradInput bools(const Shape& shape, std::vector<float> values) { return {shape, std::move(values), false, DType::Bool}; }
inline std::vector<std::int32_t> as_ints(const std::vector<double>& x) { return {x.begin(), x.end()}; }
inline std::vector<std::uint8_t> as_bytes(const std::vector<double>& x) { return {x.begin(), x.end()}; }

// x of exact small integers as `dtype` (i32, or bool 0 and 1), needing no gradient.
inline GradInput integers(const Shape& s, std::uint64_t seed, DType dtype) {
  GradInput x = random_input(s, seed, dtype == DType::Bool ? 0 : -50, dtype == DType::Bool ? 2 : 50, false);
  for (float& v : x.values) v = std::floor(v);
  x.dtype = dtype;
  return x;
}

// Each case also on f16 and bf16 operands (half_variant: gradients too) and
// on the `integral` dtypes (no gradient; their f32 inputs, not the indices or
// masks, become integers), whose odd extents split words.
inline std::vector<OpCase> with_dtypes(const char* op, std::vector<OpCase> cases,
                                       std::initializer_list<DType> integral = {DType::I32, DType::Bool}) {
  const std::size_t n = cases.size();
  std::uint64_t seed = 231;
  for (std::size_t i = 0; i < n; ++i) {
    for (DType dtype : {DType::F16, DType::BF16}) cases.push_back(half_variant(op, cases[i], dtype));
    for (DType dtype : integral) {
      OpCase c = cases[i];
      c.label.append("_").append(to_string(dtype));
      for (GradInput& in : c.inputs)
        if (in.dtype == DType::F32) in = integers(in.shape, seed++, dtype);
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

struct OpEntry {
  std::string op;  // the contract name
  std::function<std::vector<OpCase>()> cases;
};

inline std::vector<OpEntry>& op_registry() {
  static std::vector<OpEntry> entries;
  return entries;
}

// Registers the cases of `op` (made when the tests are listed, after static
// initialisation). Returns true, for a static initialiser.
inline bool register_op(std::string op, std::function<std::vector<OpCase>()> cases) {
  op_registry().push_back({std::move(op), std::move(cases)});
  return true;
}

// Defines and registers the case list of contract `name`; `id` names the
// function (unique in its file).
#define OA_OP_CASES(id, name)                                                                        \
  std::vector<::oa::test::OpCase> id##_op_cases();                                                   \
  [[maybe_unused]] const bool id##_op_registered = ::oa::test::register_op(name, &id##_op_cases); \
  std::vector<::oa::test::OpCase> id##_op_cases()

}  // namespace oa::test
