#pragma once
// Operation contracts and semantic ops. A contract names a public operation
// (for example "oa::ml::conv_1d"), its input and output arity and its
// typed attributes. Every public op call records exactly one SemanticOp, however
// many compute dispatches it lowers to; traces and profiles are kept per
// SemanticOp.
#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "oa/core/shape.hpp"

namespace oa {

using OpAttributeValue = std::variant<std::int64_t, double, bool, std::string, std::vector<std::int64_t>>;

enum class AttributeType { Int, Float, Bool, String, Ints };

struct OpAttribute {
  std::string name;
  OpAttributeValue value;
};

struct AttributeSpec {
  std::string name;
  AttributeType type;
};

struct OpContract {
  std::string name;          // fully qualified, e.g. "oa::matrix::matmul_nt"
  int inputs = 0;            // arity; -1 means variadic
  int outputs = 0;
  std::vector<AttributeSpec> attributes;
};

// Registry of contracts. register_contract is idempotent for an identical
// contract and throws Internal for a conflicting one; contract() throws
// Internal for an unknown name.
void register_contract(OpContract contract);
const OpContract& contract(std::string_view name);
std::vector<OpContract> contracts();

// One recorded semantic op. `backward` marks the reverse-mode lowering of the
// named forward op (trace shows "<name> backward").
struct SemanticOp {
  std::string name;
  bool backward = false;
  std::vector<Shape> inputs;
  std::vector<Shape> outputs;
  std::vector<OpAttribute> attributes;
  std::uint32_t dispatches = 0;  // filled by the engine when recorded

  std::string label() const { return backward ? name + " backward" : name; }
  const OpAttributeValue* attribute(std::string_view key) const;
};

// Checks `op` against its registered contract (arity, attribute names and
// types); throws Internal on disagreement.
void check_against_contract(const SemanticOp& op);

}  // namespace oa
