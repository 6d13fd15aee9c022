// The driver of the op test table (ops/op_table.hpp): one test per registered
// (op, case), and the check that every contract has cases.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "ops/op_table.hpp"
#include "support/expect.hpp"

namespace {

using oa::test::OpCase;

// Contracts the table does not run, with the reason.
const std::map<std::string, std::string>& not_in_table() {
  static const std::map<std::string, std::string> ops = {
      {"oa::autograd::accumulate", "internal to backward (sums the gradients of a reused input); every backward case runs it"},
  };
  return ops;
}

struct TableCase {
  std::string op;
  OpCase c;
};

void PrintTo(const TableCase& t, std::ostream* os) { *os << t.op << " " << t.c.label; }

std::vector<TableCase> table_cases() {
  std::vector<TableCase> out;
  for (const auto& entry : oa::test::op_registry())
    for (auto& c : entry.cases()) out.push_back({entry.op, std::move(c)});
  return out;
}

// "oa::ml::conv_2d", "3x5" -> "ml_conv_2d_3x5".
std::string test_name(const TableCase& t) {
  std::string name = t.op.substr(t.op.rfind("oa::", 0) == 0 ? 4 : 0) + "_" + t.c.label;
  std::string out;
  for (std::size_t i = 0; i < name.size(); ++i) {
    if (name.compare(i, 2, "::") == 0) {
      out += '_';
      ++i;
    } else {
      out += name[i];
    }
  }
  return out;
}

class OpCases : public ::testing::TestWithParam<TableCase> {};

TEST_P(OpCases, MatchReference) {
  const TableCase& t = GetParam();
  const OpCase& c = t.c;
  oa::Engine engine = oa::Engine::default_engine();
  std::vector<oa::SemanticOp> forward;
  oa::TraceCapture all(engine);
  oa::test::gradcheck(
      c.inputs,
      [&](const oa::test::Inputs& xs) {
        oa::TraceCapture trace(engine);
        oa::Matrix y = c.run(xs);
        forward = trace.ops();
        return y;
      },
      c.reference, 7, c.tolerance);
  const std::vector<oa::SemanticOp> ops = all.ops();

  std::vector<std::string> labels;
  for (const auto& op : forward) labels.push_back(op.label());
  EXPECT_EQ(labels, c.traced.empty() ? std::vector<std::string>{t.op} : c.traced) << "forward trace";
  EXPECT_GE(oa_test::count_label(forward, t.op), 1u) << "the forward trace lacks " << t.op;
  const bool grads = std::any_of(c.inputs.begin(), c.inputs.end(), [](const auto& in) { return in.requires_grad; });
  if (grads && c.backward_traced) {
    EXPECT_GE(oa_test::count_label(ops, t.op + " backward"), 1u) << "backward trace";
  }
}

INSTANTIATE_TEST_SUITE_P(OpTable, OpCases, ::testing::ValuesIn(table_cases()),
                         [](const ::testing::TestParamInfo<TableCase>& info) { return test_name(info.param); });

TEST(OpTable, EveryContractHasCases) {
  std::set<std::string> registered;
  for (const auto& entry : oa::test::op_registry()) {
    EXPECT_FALSE(entry.cases().empty()) << entry.op << " is registered without cases";
    EXPECT_TRUE(registered.insert(entry.op).second) << entry.op << " is registered twice";
  }
  std::set<std::string> names;
  for (const auto& contract : oa::contracts()) {
    if (contract.name.rfind("oa::", 0) != 0) continue;  // registered by a test of its own
    names.insert(contract.name);
    const bool skipped = not_in_table().count(contract.name) > 0;
    EXPECT_TRUE(registered.count(contract.name) || skipped) << contract.name << " has no cases in the op table (tests/ops/)";
    EXPECT_FALSE(registered.count(contract.name) && skipped) << contract.name << " has cases and is listed in not_in_table()";
  }
  for (const auto& name : registered) EXPECT_TRUE(names.count(name)) << name << " has cases but no contract";
  for (const auto& [name, reason] : not_in_table()) EXPECT_TRUE(names.count(name)) << name << " is listed in not_in_table() but has no contract";
}

}  // namespace
