#pragma once
#include <memory>
#include <vector>

#include "runtime/vulkan/engine_state.hpp"

namespace oa::runtime {

struct Instance {
  vk::Handle<VkInstance> instance;
  vk::Handle<VkDebugUtilsMessengerEXT> messenger;
  // False under a validation layer older than VK_KHR_shader_bfloat16, which
  // reports the extension as unknown: BF16 then runs the portable kernels.
  bool bfloat16 = true;
};

bool validation_requested(const EngineOptions& options);
// The process's instance with or without the validation layers, created on
// first use and kept until exit: engines share it rather than each creating
// and destroying its own (NVIDIA's driver refuses vkCreateInstance after a few
// dozen create/destroy cycles in one process).
std::shared_ptr<const Instance> shared_instance(bool validation);
std::vector<VkPhysicalDevice> physical_devices(VkInstance instance);
DeviceInfo describe(const Instance& instance, VkPhysicalDevice device, std::uint32_t index);
std::uint32_t choose_device(const std::vector<DeviceInfo>& devices, const EngineOptions& options);
std::uint64_t validation_messages();

// A process forked after it created an engine inherits the engines' memory but
// not the driver's threads, so waiting on the GPU there never returns. Engines
// therefore refuse all work in such a child: require_unforked throws
// FailedPrecondition naming `op` and the fix; forked_child() makes destructors
// leak rather than wait. Each EngineState constructor calls watch_for_fork().
void watch_for_fork();
bool forked_child();
void require_unforked(const char* op);
// A new EngineState, never destroyed in a forked child.
std::shared_ptr<EngineState> make_engine_state(EngineOptions options);

}  // namespace oa::runtime
