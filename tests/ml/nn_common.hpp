#pragma once
// Helpers shared by the nn op tests (tests/ml/nn_*_test.cpp).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "oa/ml/nn_ops.hpp"
#include "oa/oa.hpp"
#include "support/expect.hpp"
#include "reference/nn.hpp"
#include "support/gradcheck.hpp"

namespace oa::nn_test {

// The names every nn op test uses; `using namespace oa::nn_test` brings them in.
using oa::Matrix;
using oa::Shape;
namespace ml = oa::ml;
namespace ref = oa::reference;
using oa::test::gradcheck;
using oa::test::random_input;
using oa::test::test_values;

inline std::vector<double> f64(const std::vector<float>& v) { return {v.begin(), v.end()}; }

// The semantic ops `f` records on the default engine.
inline std::vector<SemanticOp> traced(const std::function<void()>& f) {
  TraceCapture trace(Engine::default_engine());
  f();
  return trace.ops();
}

// Expects exactly the labelled ops with the given dispatch counts, in order.
inline void expect_trace(const std::vector<SemanticOp>& ops, const std::vector<std::pair<std::string, std::uint32_t>>& want) {
  ASSERT_EQ(ops.size(), want.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    EXPECT_EQ(ops[i].label(), want[i].first) << "op " << i;
    EXPECT_EQ(ops[i].dispatches, want[i].second) << "op " << i << " " << ops[i].label();
  }
}

// Expects `f` to throw InvalidArgument naming `op` (and every fragment) and to record nothing.
inline void expect_invalid(const std::function<void()>& f, const char* op, std::initializer_list<const char*> fragments = {}) {
  const Engine engine = Engine::default_engine();
  engine.synchronize();  // storages of finished work return before counting
  TraceCapture trace(engine);
  const auto before = engine.memory_stats().live_storages;
  EXPECT_TRUE(oa_test::throws(f, ErrorKind::InvalidArgument, {op}));
  if (fragments.size()) {
    EXPECT_TRUE(oa_test::throws(f, ErrorKind::InvalidArgument, fragments));
  }
  EXPECT_TRUE(trace.ops().empty()) << "a failed call recorded work";
  engine.synchronize();
  EXPECT_EQ(engine.memory_stats().live_storages, before) << "a failed call left storage behind";
}

}  // namespace oa::nn_test
