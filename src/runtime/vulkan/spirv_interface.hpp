#pragma once
// What a compute shader's SPIR-V declares as its interface with the host: the
// size of its push-constant block, the storage-buffer bindings of descriptor
// set 0 and its specialization constants. The engine checks every dispatch
// against it, so a push-constant field or a binding that C++ forgot (which the
// shader would read as 0 or as an unbound buffer) fails at once, naming the kernel.
#include <cstddef>
#include <cstdint>
#include <span>

namespace oa::runtime {

struct ShaderInterface {
  std::uint32_t push_bytes = 0;  // end of the push-constant block's last member; 0 when there is none
  std::uint32_t bindings = 0;    // highest binding of set 0, plus one
  std::uint32_t spec_ids = 0;    // highest SpecId, plus one
};

// Reads the interface from SPIR-V words (specification 1.6, section 2.16:
// Decoration Offset/ArrayStride/Binding/DescriptorSet/SpecId, OpTypeStruct,
// OpTypeArray, OpVariable). Throws Internal on a malformed module.
ShaderInterface reflect(std::span<const std::uint32_t> words);

}  // namespace oa::runtime
