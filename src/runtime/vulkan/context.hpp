#pragma once
#include <vector>

#include "runtime/vulkan/engine_state.hpp"

namespace oa::runtime {

struct Instance {
  vk::Handle<VkInstance> instance;
  vk::Handle<VkDebugUtilsMessengerEXT> messenger;
};

bool validation_requested(const EngineOptions& options);
Instance create_instance(bool validation);
std::vector<VkPhysicalDevice> physical_devices(VkInstance instance);
DeviceInfo describe(VkPhysicalDevice device, std::uint32_t index);
std::uint32_t choose_device(const std::vector<DeviceInfo>& devices, const EngineOptions& options);
std::uint64_t validation_messages();

}  // namespace oa::runtime
