#include "runtime/vulkan/spirv_interface.hpp"

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "oa/core/error.hpp"

namespace oa::runtime {

namespace {

// Opcodes, decorations and storage classes used (SPIR-V specification, 3.x).
enum : std::uint32_t {
  kOpTypeBool = 20, kOpTypeInt = 21, kOpTypeFloat = 22, kOpTypeVector = 23, kOpTypeArray = 28, kOpTypeStruct = 30,
  kOpTypePointer = 32, kOpConstant = 43, kOpVariable = 59, kOpDecorate = 71, kOpMemberDecorate = 72,
};
enum : std::uint32_t { kSpecId = 1, kArrayStride = 6, kOffset = 35, kBinding = 33, kDescriptorSet = 34 };
enum : std::uint32_t { kPushConstant = 9 };

struct Type {
  std::uint32_t op = 0;
  std::vector<std::uint32_t> operands;  // after the result id
};

}  // namespace

ShaderInterface reflect(std::span<const std::uint32_t> words) {
  if (words.size() < 5 || words[0] != 0x07230203u) fail(ErrorKind::Internal, "reflect: not a SPIR-V module");
  std::unordered_map<std::uint32_t, Type> types;
  std::unordered_map<std::uint32_t, std::uint32_t> constants, array_strides, bindings, sets;
  std::unordered_map<std::uint64_t, std::uint32_t> member_offsets;  // struct id << 32 | member
  std::vector<std::uint32_t> push_pointers, variables;
  ShaderInterface out;
  for (std::size_t i = 5; i < words.size();) {
    const std::uint32_t count = words[i] >> 16, op = words[i] & 0xffffu;
    if (count == 0 || i + count > words.size()) fail(ErrorKind::Internal, "reflect: a truncated instruction");
    const std::span<const std::uint32_t> w = words.subspan(i + 1, count - 1);
    switch (op) {
      case kOpTypeBool: case kOpTypeInt: case kOpTypeFloat: case kOpTypeVector: case kOpTypeArray: case kOpTypeStruct: case kOpTypePointer:
        types[w[0]] = Type{op, {w.begin() + 1, w.end()}};
        break;
      case kOpConstant:
        if (w.size() >= 3) constants[w[1]] = w[2];
        break;
      case kOpVariable:
        variables.push_back(w[1]);
        if (w[2] == kPushConstant) push_pointers.push_back(w[0]);
        break;
      case kOpDecorate:
        if (w.size() >= 3 && w[1] == kArrayStride) array_strides[w[0]] = w[2];
        if (w.size() >= 3 && w[1] == kBinding) bindings[w[0]] = w[2];
        if (w.size() >= 3 && w[1] == kDescriptorSet) sets[w[0]] = w[2];
        if (w.size() >= 3 && w[1] == kSpecId) out.spec_ids = std::max(out.spec_ids, w[2] + 1);
        break;
      case kOpMemberDecorate:
        if (w.size() >= 4 && w[2] == kOffset) member_offsets[std::uint64_t{w[0]} << 32 | w[1]] = w[3];
        break;
      default: break;
    }
    i += count;
  }
  // The size of a type as laid out in a block (explicit offsets and strides).
  auto size_of = [&](auto&& self, std::uint32_t id) -> std::uint32_t {
    const auto it = types.find(id);
    if (it == types.end()) fail(ErrorKind::Internal, "reflect: an unknown type in the push-constant block");
    const Type& t = it->second;
    switch (t.op) {
      case kOpTypeBool: return 4;
      case kOpTypeInt: case kOpTypeFloat: return t.operands[0] / 8;
      case kOpTypeVector: return self(self, t.operands[0]) * t.operands[1];
      case kOpTypeArray: {
        const auto len = constants.find(t.operands[1]);
        const auto stride = array_strides.find(id);
        if (len == constants.end() || stride == array_strides.end()) fail(ErrorKind::Internal, "reflect: an array of unknown size");
        return len->second * stride->second;
      }
      case kOpTypeStruct: {
        std::uint32_t end = 0;
        for (std::uint32_t m = 0; m < t.operands.size(); ++m) {
          const auto off = member_offsets.find(std::uint64_t{id} << 32 | m);
          if (off == member_offsets.end()) fail(ErrorKind::Internal, "reflect: a block member without an offset");
          end = std::max(end, off->second + self(self, t.operands[m]));
        }
        return end;
      }
      default: fail(ErrorKind::Internal, "reflect: an unexpected type in the push-constant block");
    }
  };
  for (std::uint32_t p : push_pointers) {
    const auto it = types.find(p);
    if (it == types.end() || it->second.op != kOpTypePointer) fail(ErrorKind::Internal, "reflect: a push constant without a pointer type");
    out.push_bytes = std::max(out.push_bytes, size_of(size_of, it->second.operands[1]));
  }
  for (std::uint32_t v : variables) {
    const auto b = bindings.find(v);
    if (b == bindings.end()) continue;
    const auto s = sets.find(v);
    if (s == sets.end() || s->second == 0) out.bindings = std::max(out.bindings, b->second + 1);
  }
  return out;
}

}  // namespace oa::runtime
