// The driver of the op test table (ops/op_table.hpp): one test per registered
// (op, case), the check that every contract has cases, and the check that
// every contract is named after a public function.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <utility>
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

// Contracts named after no function declared at namespace scope, with the reason.
const std::map<std::string, std::string>& not_a_function() {
  static const std::map<std::string, std::string> ops = {
      {"oa::matrix::random", "the static factories Matrix::uniform, Matrix::normal and Matrix::arange, one op with the distribution as attribute"},
      {"oa::ml::optim::sgd_step", "the member function SGD::step (one op over every parameter)"},
      {"oa::ml::optim::adamw_step", "the member function AdamW::step (one op over every parameter)"},
      {"oa::ml::amp::unscale_grads", "the member function GradScaler::unscale_ (one op over every gradient)"},
      {"oa::ml::amp::update_scale", "the member function GradScaler::update"},
  };
  return ops;
}

// `text` with comments and string and character literals blanked out.
std::string code_only(const std::string& text) {
  std::string out = text;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out.compare(i, 2, "//") == 0) {
      while (i < out.size() && out[i] != '\n') out[i++] = ' ';
    } else if (out.compare(i, 2, "/*") == 0) {
      const std::size_t end = std::min(out.find("*/", i + 2), out.size() - 2) + 2;
      for (; i < end; ++i)
        if (out[i] != '\n') out[i] = ' ';
    } else if (out[i] == '"' || out[i] == '\'') {
      const char quote = out[i];
      for (out[i++] = ' '; i < out.size() && out[i] != quote; ++i) {
        if (out[i] == '\\') out[i++] = ' ';
        out[i] = ' ';
      }
      if (i < out.size()) out[i] = ' ';
    }
  }
  return out;
}

// The functions declared at namespace scope in the public headers, qualified
// ("oa::ml::conv_2d"). A rough scan: `namespace a::b {` opens a namespace,
// any other brace a class or function body, and a name followed by `(`
// directly inside namespaces is taken for a declaration.
std::set<std::string> public_functions() {
  std::set<std::string> out;
  for (const auto& file : std::filesystem::recursive_directory_iterator(OA_INCLUDE_DIR)) {
    if (file.path().extension() != ".hpp") continue;
    std::ifstream in(file.path());
    const std::string text = code_only(std::string(std::istreambuf_iterator<char>(in), {}));
    std::vector<std::optional<std::string>> scopes;  // per open brace: the namespace it opens, if it does
    std::optional<std::string> opening;               // `namespace x` seen, its brace not yet
    const auto word_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == ':'; };
    for (std::size_t i = 0; i < text.size();) {
      if (!word_char(text[i])) {
        if (text[i] == '{') scopes.push_back(std::exchange(opening, std::nullopt));
        if (text[i] == '}' && !scopes.empty()) scopes.pop_back();
        if (text[i] == ';') opening.reset();
        ++i;
        continue;
      }
      std::size_t end = i;
      while (end < text.size() && word_char(text[end])) ++end;
      const std::string word = text.substr(i, end - i);
      std::size_t next = end;
      while (next < text.size() && std::isspace(static_cast<unsigned char>(text[next]))) ++next;
      if (word == "namespace") {
        opening = "";
      } else if (opening && opening->empty()) {
        opening = word;
      } else if (next < text.size() && text[next] == '(' &&
                 std::all_of(scopes.begin(), scopes.end(), [](const auto& s) { return s.has_value(); })) {
        std::string name;
        for (const auto& s : scopes) name += *s + "::";
        out.insert(name + word);
      }
      i = end;
    }
  }
  return out;
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

TEST(OpTable, EveryContractNamesAPublicFunction) {
  const std::set<std::string> functions = public_functions();
  ASSERT_TRUE(functions.count("oa::ml::conv_2d")) << "the scan of " << OA_INCLUDE_DIR << " finds no oa::ml::conv_2d";
  std::set<std::string> names;
  for (const auto& contract : oa::contracts()) {
    if (contract.name.rfind("oa::", 0) != 0) continue;  // registered by a test of its own
    names.insert(contract.name);
    const bool excepted = not_a_function().count(contract.name) > 0;
    EXPECT_TRUE(functions.count(contract.name) || excepted)
        << contract.name << " names no function declared in the public headers (include/oa)";
    EXPECT_FALSE(functions.count(contract.name) && excepted) << contract.name << " is a public function and listed in not_a_function()";
  }
  for (const auto& [name, reason] : not_a_function()) EXPECT_TRUE(names.count(name)) << name << " is listed in not_a_function() but has no contract";
}

}  // namespace
