#include "oa/core/op.hpp"

#include <algorithm>
#include <functional>
#include <mutex>
#include <unordered_map>

#include "oa/core/error.hpp"

namespace oa {
namespace {

// Hashes names given as std::string or std::string_view alike, so that a
// lookup by view builds no string.
struct NameHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

struct Registry {
  std::mutex mutex;
  std::unordered_map<std::string, OpContract, NameHash, std::equal_to<>> contracts;
};

Registry& registry() {
  static Registry r;
  return r;
}

bool same(const OpContract& a, const OpContract& b) {
  if (a.inputs != b.inputs || a.outputs != b.outputs || a.attributes.size() != b.attributes.size()) return false;
  for (std::size_t i = 0; i < a.attributes.size(); ++i)
    if (a.attributes[i].name != b.attributes[i].name || a.attributes[i].type != b.attributes[i].type) return false;
  return true;
}

AttributeType type_of(const OpAttributeValue& v) { return static_cast<AttributeType>(v.index()); }

}  // namespace

void register_contract(OpContract c) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.contracts.find(c.name);
  if (it != r.contracts.end()) {
    if (!same(it->second, c)) fail(ErrorKind::Internal, "operation contract {} registered twice with different signatures", c.name);
    return;
  }
  std::string name = c.name;
  r.contracts.emplace(std::move(name), std::move(c));
}

const OpContract& contract(std::string_view name) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.contracts.find(name);
  if (it == r.contracts.end()) fail(ErrorKind::Internal, "no operation contract named {}", name);
  return it->second;
}

std::vector<OpContract> contracts() {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  std::vector<OpContract> out;
  for (auto& [_, c] : r.contracts) out.push_back(c);
  std::sort(out.begin(), out.end(), [](const OpContract& a, const OpContract& b) { return a.name < b.name; });
  return out;
}

const OpAttributeValue* SemanticOp::attribute(std::string_view key) const {
  for (auto& a : attributes)
    if (a.name == key) return &a.value;
  return nullptr;
}

void check_against_contract(const SemanticOp& op) {
  const OpContract& c = contract(op.name);
  if (op.backward) return;  // backward ops carry the forward's contract name; their arity differs
  if ((c.inputs >= 0 && static_cast<int>(op.inputs.size()) != c.inputs) ||
      (c.outputs >= 0 && static_cast<int>(op.outputs.size()) != c.outputs))
    fail(ErrorKind::Internal, "{} recorded {} inputs / {} outputs; its contract has {} / {}", op.name, op.inputs.size(),
         op.outputs.size(), c.inputs, c.outputs);
  for (const auto& spec : c.attributes) {
    const OpAttributeValue* v = op.attribute(spec.name);
    if (!v || type_of(*v) != spec.type) fail(ErrorKind::Internal, "{} recorded without a valid attribute {}", op.name, spec.name);
  }
}

}  // namespace oa
