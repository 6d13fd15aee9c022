#pragma once
// VK_KHR_cooperative_matrix: the declarations Debian 12's Vulkan headers
// (1.3.239) lack, from the Vulkan registry (vk.xml), and the query of a
// device's subgroup-scope configurations.
#include <string_view>
#include <vector>

#include "oa/runtime/engine.hpp"
#include "runtime/vulkan/vk.hpp"

#ifndef VK_KHR_cooperative_matrix
#define VK_KHR_cooperative_matrix 1
#define VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME "VK_KHR_cooperative_matrix"
inline constexpr VkStructureType VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR =
    static_cast<VkStructureType>(1000506000);
inline constexpr VkStructureType VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR = static_cast<VkStructureType>(1000506001);
enum VkComponentTypeKHR : std::uint32_t {
  VK_COMPONENT_TYPE_FLOAT16_KHR = 0,
  VK_COMPONENT_TYPE_FLOAT32_KHR = 1,
};
enum VkScopeKHR : std::uint32_t { VK_SCOPE_SUBGROUP_KHR = 3 };
struct VkCooperativeMatrixPropertiesKHR {
  VkStructureType sType;
  void* pNext;
  std::uint32_t MSize, NSize, KSize;
  VkComponentTypeKHR AType, BType, CType, ResultType;
  VkBool32 saturatingAccumulation;
  VkScopeKHR scope;
};
struct VkPhysicalDeviceCooperativeMatrixFeaturesKHR {
  VkStructureType sType;
  void* pNext;
  VkBool32 cooperativeMatrix;
  VkBool32 cooperativeMatrixRobustBufferAccess;
};
typedef VkResult(VKAPI_PTR* PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)(VkPhysicalDevice, std::uint32_t*,
                                                                                   VkCooperativeMatrixPropertiesKHR*);
#endif
#ifndef VK_KHR_shader_bfloat16
#define VK_KHR_shader_bfloat16 1
#define VK_KHR_SHADER_BFLOAT16_EXTENSION_NAME "VK_KHR_shader_bfloat16"
inline constexpr VkStructureType VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR =
    static_cast<VkStructureType>(1000141000);
struct VkPhysicalDeviceShaderBfloat16FeaturesKHR {
  VkStructureType sType;
  void* pNext;
  VkBool32 shaderBFloat16Type;
  VkBool32 shaderBFloat16DotProduct;
  VkBool32 shaderBFloat16CooperativeMatrix;
};
#endif
#ifndef VK_NV_cooperative_matrix2
#define VK_NV_cooperative_matrix2 1
#define VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME "VK_NV_cooperative_matrix2"
inline constexpr VkStructureType VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV =
    static_cast<VkStructureType>(1000593000);
inline constexpr VkStructureType VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_FLEXIBLE_DIMENSIONS_PROPERTIES_NV =
    static_cast<VkStructureType>(1000593001);
inline constexpr VkStructureType VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_PROPERTIES_NV =
    static_cast<VkStructureType>(1000593002);
struct VkPhysicalDeviceCooperativeMatrix2FeaturesNV {
  VkStructureType sType;
  void* pNext;
  VkBool32 cooperativeMatrixWorkgroupScope;
  VkBool32 cooperativeMatrixFlexibleDimensions;
  VkBool32 cooperativeMatrixReductions;
  VkBool32 cooperativeMatrixConversions;
  VkBool32 cooperativeMatrixPerElementOperations;
  VkBool32 cooperativeMatrixTensorAddressing;
  VkBool32 cooperativeMatrixBlockLoads;
};
struct VkPhysicalDeviceCooperativeMatrix2PropertiesNV {
  VkStructureType sType;
  void* pNext;
  std::uint32_t cooperativeMatrixWorkgroupScopeMaxWorkgroupSize;
  std::uint32_t cooperativeMatrixFlexibleDimensionsMaxDimension;
  std::uint32_t cooperativeMatrixWorkgroupScopeReservedSharedMemory;
};
struct VkCooperativeMatrixFlexibleDimensionsPropertiesNV {
  VkStructureType sType;
  void* pNext;
  std::uint32_t MGranularity, NGranularity, KGranularity;
  VkComponentTypeKHR AType, BType, CType, ResultType;
  VkBool32 saturatingAccumulation;
  VkScopeKHR scope;
  std::uint32_t workgroupInvocations;
};
typedef VkResult(VKAPI_PTR* PFN_vkGetPhysicalDeviceCooperativeMatrixFlexibleDimensionsPropertiesNV)(
    VkPhysicalDevice, std::uint32_t*, VkCooperativeMatrixFlexibleDimensionsPropertiesNV*);
#endif
inline constexpr std::uint32_t kScopeWorkgroup = 2;  // VK_SCOPE_WORKGROUP_KHR
// VK_KHR_shader_bfloat16's component type (the KHR list names bf16 with it).
inline constexpr std::uint32_t kComponentTypeBfloat16 = 1000141000;

namespace oa::runtime {

// Whether the device offers extension `name`.
bool has_extension(VkPhysicalDevice device, std::string_view name);

// The subgroup-scope F16 / BF16 / F32 configurations the device lists (those
// with BF16 only where `bfloat16` allows and VK_KHR_shader_bfloat16 offers shaderBFloat16Type and
// shaderBFloat16CooperativeMatrix), or none
// when it lacks the extension, its cooperativeMatrix feature or a feature that
// the kernels' SPIR-V declares: shaderFloat16, vulkanMemoryModel and its device scope (which
// GL_KHR_cooperative_matrix implies) and maintenance4 (LocalSizeId, glslang's
// workgroup size from a specialization constant under Vulkan 1.3).
std::vector<CooperativeMatrixShape> cooperative_matrix_shapes(VkInstance instance, VkPhysicalDevice device, bool bfloat16);

// VK_NV_cooperative_matrix2's workgroup-scope F16 x F16 -> F32 or F16 configurations
// and their largest dimension, into d; none without the extension or one of
// the features its kernels use (DeviceInfo::workgroup_cooperative_matrix).
// Called only where d already lists subgroup-scope cooperative matrices.
void query_workgroup_cooperative_matrix(VkInstance instance, VkPhysicalDevice device, DeviceInfo& d);

// Whether `shapes` hold a BF16 configuration (the engine then enables VK_KHR_shader_bfloat16).
bool uses_bfloat16(const std::vector<CooperativeMatrixShape>& shapes);

}  // namespace oa::runtime
