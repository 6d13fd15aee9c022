#include "runtime/vulkan/cooperative_matrix.hpp"

#include <algorithm>
#include <optional>
#include <string_view>

namespace oa::runtime {

namespace {
std::optional<DType> component(std::uint32_t t) {
  if (t == VK_COMPONENT_TYPE_FLOAT16_KHR) return DType::F16;
  if (t == VK_COMPONENT_TYPE_FLOAT32_KHR) return DType::F32;
  if (t == kComponentTypeBfloat16) return DType::BF16;
  return std::nullopt;
}
}  // namespace

bool has_extension(VkPhysicalDevice device, std::string_view name) {
  std::uint32_t n = 0;
  vk::check(vkEnumerateDeviceExtensionProperties(device, nullptr, &n, nullptr), "vkEnumerateDeviceExtensionProperties");
  std::vector<VkExtensionProperties> exts(n);
  vk::check(vkEnumerateDeviceExtensionProperties(device, nullptr, &n, exts.data()), "vkEnumerateDeviceExtensionProperties");
  return std::any_of(exts.begin(), exts.end(), [&](auto& e) { return std::string_view(e.extensionName) == name; });
}

std::vector<CooperativeMatrixShape> cooperative_matrix_shapes(VkInstance instance, VkPhysicalDevice device, bool bfloat16) {
  if (!has_extension(device, VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME)) return {};
  VkPhysicalDeviceShaderBfloat16FeaturesKHR bf{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR};
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR cm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
  const bool bf16_ext = bfloat16 && has_extension(device, VK_KHR_SHADER_BFLOAT16_EXTENSION_NAME);
  if (bf16_ext) cm.pNext = &bf;
  VkPhysicalDeviceVulkan13Features f13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  f13.pNext = &cm;
  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  f12.pNext = &f13;
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f2.pNext = &f12;
  vkGetPhysicalDeviceFeatures2(device, &f2);
  if (!cm.cooperativeMatrix || !f12.shaderFloat16 || !f12.vulkanMemoryModel || !f12.vulkanMemoryModelDeviceScope || !f13.maintenance4) return {};
  auto query = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR>(
      vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR"));
  if (!query) return {};
  std::uint32_t count = 0;
  vk::check(query(device, &count, nullptr), "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
  std::vector<VkCooperativeMatrixPropertiesKHR> props(count, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR});
  vk::check(query(device, &count, props.data()), "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
  const bool bf16 = bf16_ext && bf.shaderBFloat16Type && bf.shaderBFloat16CooperativeMatrix;
  std::vector<CooperativeMatrixShape> out;
  for (const auto& p : props) {
    const auto a = component(p.AType), b = component(p.BType), c = component(p.CType), r = component(p.ResultType);
    if (p.scope != VK_SCOPE_SUBGROUP_KHR || p.saturatingAccumulation || !a || !b || !c || !r) continue;
    const CooperativeMatrixShape s{*a, *b, *c, *r, p.MSize, p.NSize, p.KSize};
    if (!bf16 && (s.a == DType::BF16 || s.b == DType::BF16 || s.c == DType::BF16 || s.result == DType::BF16)) continue;
    if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  }
  return out;
}

void query_workgroup_cooperative_matrix(VkInstance instance, VkPhysicalDevice device, DeviceInfo& d) {
  if (!has_extension(device, VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME)) return;
  VkPhysicalDeviceCooperativeMatrix2FeaturesNV f{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV};
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f2.pNext = &f;
  vkGetPhysicalDeviceFeatures2(device, &f2);
  if (!f.cooperativeMatrixWorkgroupScope || !f.cooperativeMatrixFlexibleDimensions || !f.cooperativeMatrixReductions ||
      !f.cooperativeMatrixConversions || !f.cooperativeMatrixPerElementOperations || !f.cooperativeMatrixTensorAddressing)
    return;
  VkPhysicalDeviceCooperativeMatrix2PropertiesNV props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_PROPERTIES_NV};
  VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  p2.pNext = &props;
  vkGetPhysicalDeviceProperties2(device, &p2);
  auto query = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV>(
      vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV"));
  if (!query) return;
  std::uint32_t count = 0;
  vk::check(query(device, &count, nullptr), "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV");
  std::vector<VkCooperativeMatrixFlexibleDimensionsPropertiesNV> list(count, {VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV});
  vk::check(query(device, &count, list.data()), "vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV");
  for (const auto& e : list) {
    const auto a = component(e.AType), b = component(e.BType), c = component(e.CType), r = component(e.ResultType);
    if (e.scope != kScopeWorkgroup || e.saturatingAccumulation || a != DType::F16 || b != DType::F16 || c != r ||
        (c != DType::F32 && c != DType::F16) || e.MGranularity == 0 || e.NGranularity == 0 || e.KGranularity == 0 ||
        e.workgroupInvocations == 0)
      continue;
    const WorkgroupCooperativeMatrix w{*a, *b, *c, *r, e.MGranularity, e.NGranularity, e.KGranularity, e.workgroupInvocations};
    if (std::find(d.workgroup_cooperative_matrix.begin(), d.workgroup_cooperative_matrix.end(), w) == d.workgroup_cooperative_matrix.end())
      d.workgroup_cooperative_matrix.push_back(w);
  }
  if (!d.workgroup_cooperative_matrix.empty())
    d.workgroup_cooperative_matrix_max_dimension = props.cooperativeMatrixFlexibleDimensionsMaxDimension;
}

bool uses_bfloat16(const std::vector<CooperativeMatrixShape>& shapes) {
  return std::any_of(shapes.begin(), shapes.end(), [](const CooperativeMatrixShape& s) {
    return s.a == DType::BF16 || s.b == DType::BF16 || s.c == DType::BF16 || s.result == DType::BF16;
  });
}

}  // namespace oa::runtime
