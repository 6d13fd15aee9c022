#pragma once
// Helpers shared by every op family's lowering (internal to the library).
#include <initializer_list>
#include <vector>

#include "oa/matrix/matrix.hpp"

namespace oa::detail {

// Narrows a validated extent to the 32-bit shader ABI; throws InvalidArgument
// naming `op` and `what` past UINT32_MAX.
std::uint32_t shader_u32(std::int64_t value, const char* what, const char* op);

// Workgroups for `items` work items at `per_group` items per workgroup.
inline std::uint64_t groups_for(std::int64_t items, std::int64_t per_group) {
  return static_cast<std::uint64_t>((items + per_group - 1) / per_group);
}

// Pieces of a flat element range such that each piece's binding stays within
// the device's maxStorageBufferRange. Elementwise ops record one dispatch per piece.
struct ElementChunk {
  std::int64_t begin = 0;
  std::int64_t count = 0;
};
std::vector<ElementChunk> element_chunks(const Engine& engine, std::int64_t count);

// A SemanticOp with the shapes of `inputs` and `outputs`.
SemanticOp semantic(const char* name, std::initializer_list<const Matrix*> inputs, std::initializer_list<const Matrix*> outputs,
                    std::vector<OpAttribute> attributes = {}, bool backward = false);

// Registers a contract at static-initialisation time: static const ContractRegistration r{{...}};
struct ContractRegistration {
  explicit ContractRegistration(OpContract c) { register_contract(std::move(c)); }
};

}  // namespace oa::detail
