// Instance and device discovery: Engine::devices(), device choice, validation layers.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>
#include <optional>

#include "runtime/vulkan/context.hpp"
#include "runtime/vulkan/cooperative_matrix.hpp"

namespace oa::runtime {

namespace {
std::atomic<std::uint64_t> g_validation_messages{0};

VKAPI_ATTR VkBool32 VKAPI_CALL on_validation(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                             VkDebugUtilsMessageTypeFlagsEXT, const VkDebugUtilsMessengerCallbackDataEXT* data,
                                             void*) {
  if (severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT) {
    g_validation_messages++;
    std::cerr << "oa: Vulkan validation: " << (data && data->pMessage ? data->pMessage : "(no message)") << "\n";
  }
  return VK_FALSE;
}

const char* kNoDeviceHint =
    "install a Vulkan driver; on a machine without a GPU: apt-get install mesa-vulkan-drivers (lavapipe)";

// The spec version of an installed instance layer, or nullopt.
std::optional<std::uint32_t> layer_version(const char* name) {
  std::uint32_t n = 0;
  vkEnumerateInstanceLayerProperties(&n, nullptr);
  std::vector<VkLayerProperties> layers(n);
  vkEnumerateInstanceLayerProperties(&n, layers.data());
  for (const auto& l : layers)
    if (std::strcmp(l.layerName, name) == 0) return l.specVersion;
  return std::nullopt;
}

// The first Vulkan headers (and validation layers) that know VK_KHR_shader_bfloat16.
constexpr std::uint32_t kBfloat16HeaderVersion = VK_MAKE_API_VERSION(0, 1, 4, 311);

DeviceType device_type(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return DeviceType::Discrete;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return DeviceType::Integrated;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return DeviceType::Virtual;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return DeviceType::Cpu;
    default: return DeviceType::Other;
  }
}

int preference(DeviceType t) {
  switch (t) {
    case DeviceType::Discrete: return 0;
    case DeviceType::Integrated: return 1;
    case DeviceType::Virtual: return 2;
    case DeviceType::Cpu: return 3;
    default: return 4;
  }
}

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}
}  // namespace

std::uint64_t validation_messages() { return g_validation_messages.load(); }

bool validation_requested(const EngineOptions& options) {
  if (options.validation) return *options.validation;
  const char* env = std::getenv("OA_VALIDATION");
  return env && std::string(env) == "1";
}

namespace {
Instance create_instance(bool validation) {
  VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
  app.pApplicationName = "oa";
  app.pEngineName = "oa";
  // 1.3 at most: the cooperative-matrix kernels are SPIR-V 1.6 modules.
  app.apiVersion = VK_API_VERSION_1_3;
  std::uint32_t loader_version = 0;
  if (vkEnumerateInstanceVersion(&loader_version) != VK_SUCCESS || loader_version < VK_API_VERSION_1_2)
    fail(ErrorKind::Device, "the Vulkan loader is missing or older than 1.2; {}", kNoDeviceHint);

  std::vector<const char*> layers, extensions;
  VkValidationFeaturesEXT features{VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT};
  VkValidationFeatureEnableEXT enables[] = {VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT};
  VkDebugUtilsMessengerCreateInfoEXT mci{VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT};
  mci.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  mci.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                    VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT;
  mci.pfnUserCallback = on_validation;
  VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
  ci.pApplicationInfo = &app;
  const std::optional<std::uint32_t> validation_layer = validation ? layer_version("VK_LAYER_KHRONOS_validation") : std::nullopt;
  if (validation) {
    if (!validation_layer)
      fail(ErrorKind::Unsupported, "validation was requested but VK_LAYER_KHRONOS_validation is not installed "
                                   "(apt-get install vulkan-validationlayers)");
    layers.push_back("VK_LAYER_KHRONOS_validation");
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    extensions.push_back(VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
    features.enabledValidationFeatureCount = 1;
    features.pEnabledValidationFeatures = enables;
    features.pNext = &mci;
    ci.pNext = &features;
  }
  ci.enabledLayerCount = static_cast<std::uint32_t>(layers.size());
  ci.ppEnabledLayerNames = layers.data();
  ci.enabledExtensionCount = static_cast<std::uint32_t>(extensions.size());
  ci.ppEnabledExtensionNames = extensions.data();
  VkInstance instance;
  VkResult r = vkCreateInstance(&ci, nullptr, &instance);
  if (r != VK_SUCCESS) fail(ErrorKind::Device, "vkCreateInstance failed ({}); {}", vk::result_name(r), kNoDeviceHint);
  Instance out;
  out.bfloat16 = !validation || *validation_layer >= kBfloat16HeaderVersion;
  out.instance = vk::Handle<VkInstance>(instance, [](VkInstance i) { vkDestroyInstance(i, nullptr); });
  if (validation) {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
    auto destroy = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
    VkDebugUtilsMessengerEXT m;
    vk::check(create(instance, &mci, nullptr, &m), "vkCreateDebugUtilsMessengerEXT");
    out.messenger = vk::Handle<VkDebugUtilsMessengerEXT>(m, [instance, destroy](VkDebugUtilsMessengerEXT h) { destroy(instance, h, nullptr); });
  }
  return out;
}
}  // namespace

namespace {
std::mutex g_instance_mutex;
std::shared_ptr<const Instance> g_instances[2];  // without, with validation
}  // namespace

std::shared_ptr<const Instance> shared_instance(bool validation) {
  std::lock_guard lock(g_instance_mutex);
  auto& slot = g_instances[validation ? 1 : 0];
  if (!slot) {
    slot = std::make_shared<const Instance>(create_instance(validation));
    // Registered after the driver's own exit handlers (the driver is loaded by
    // the first instance), so the process's reference is dropped before they
    // run; an engine alive at exit keeps its own.
    static const bool registered = [] {
      std::atexit([] {
        if (forked_child()) return;  // the driver's state belongs to the parent: leave it
        std::lock_guard lock(g_instance_mutex);
        for (auto& i : g_instances) i.reset();
      });
      return true;
    }();
    (void)registered;
  }
  return slot;
}

std::vector<VkPhysicalDevice> physical_devices(VkInstance instance) {
  std::uint32_t n = 0;
  vkEnumeratePhysicalDevices(instance, &n, nullptr);
  std::vector<VkPhysicalDevice> out(n);
  vkEnumeratePhysicalDevices(instance, &n, out.data());
  return out;
}

DeviceInfo describe(const Instance& instance, VkPhysicalDevice pd, std::uint32_t index) {
  VkPhysicalDeviceSubgroupProperties subgroup{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES};
  VkPhysicalDeviceDriverProperties driver{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES};
  driver.pNext = &subgroup;
  VkPhysicalDeviceProperties2 props{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props.pNext = &driver;
  vkGetPhysicalDeviceProperties2(pd, &props);
  VkPhysicalDeviceMaintenance3Properties m3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES};
  VkPhysicalDeviceProperties2 props3{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
  props3.pNext = &m3;
  vkGetPhysicalDeviceProperties2(pd, &props3);
  const auto& p = props.properties;
  const auto& l = p.limits;
  DeviceInfo d;
  d.index = index;
  d.name = p.deviceName;
  d.type = device_type(p.deviceType);
  d.driver_name = driver.driverName;
  d.driver_info = driver.driverInfo;
  d.api_version = fmt::format("{}.{}.{}", VK_API_VERSION_MAJOR(p.apiVersion), VK_API_VERSION_MINOR(p.apiVersion),
                              VK_API_VERSION_PATCH(p.apiVersion));
  d.subgroup_size = subgroup.subgroupSize;
  d.max_shared_memory_bytes = l.maxComputeSharedMemorySize;
  for (int i = 0; i < 3; ++i) {
    d.max_workgroup_count[i] = l.maxComputeWorkGroupCount[i];
    d.max_workgroup_size[i] = l.maxComputeWorkGroupSize[i];
  }
  d.max_workgroup_invocations = l.maxComputeWorkGroupInvocations;
  d.max_push_constants_bytes = l.maxPushConstantsSize;
  d.max_storage_buffer_range = l.maxStorageBufferRange;
  d.max_memory_allocation_bytes = m3.maxMemoryAllocationSize;
  VkPhysicalDeviceMemoryProperties mem;
  vkGetPhysicalDeviceMemoryProperties(pd, &mem);
  for (std::uint32_t h = 0; h < mem.memoryHeapCount; ++h)
    if (mem.memoryHeaps[h].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
      d.device_local_bytes = std::max<std::uint64_t>(d.device_local_bytes, mem.memoryHeaps[h].size);
  std::uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> qf(nq);
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, qf.data());
  for (auto& q : qf)
    if ((q.queueFlags & VK_QUEUE_COMPUTE_BIT) && q.timestampValidBits > 0) d.timestamps = true;
  d.timestamp_period_ns = l.timestampPeriod;
  d.unified_memory = d.type == DeviceType::Cpu || d.type == DeviceType::Integrated;
  d.push_descriptors = has_extension(pd, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
  // The cooperative-matrix kernels are SPIR-V 1.6, which needs Vulkan 1.3.
  if (p.apiVersion >= VK_API_VERSION_1_3) d.cooperative_matrix = cooperative_matrix_shapes(instance.instance, pd, instance.bfloat16);
  if (!d.cooperative_matrix.empty()) query_workgroup_cooperative_matrix(instance.instance, pd, d);
  return d;
}

std::uint32_t choose_device(const std::vector<DeviceInfo>& devices, const EngineOptions& options) {
  if (devices.empty()) fail(ErrorKind::Device, "no Vulkan device found; {}", kNoDeviceHint);
  std::string want;
  if (options.device) want = *options.device;
  else if (const char* env = std::getenv("OA_DEVICE")) want = env;
  if (!want.empty()) {
    if (std::all_of(want.begin(), want.end(), ::isdigit)) {
      const auto idx = want.size() > 9 ? devices.size() : std::stoul(want);
      if (idx >= devices.size())
        fail(ErrorKind::InvalidArgument, "device index {} is out of range: {} Vulkan device(s) present", want, devices.size());
      return static_cast<std::uint32_t>(idx);
    }
    for (auto& d : devices)
      if (lower(d.name).find(lower(want)) != std::string::npos) return d.index;
    std::string names;
    for (auto& d : devices) names += (names.empty() ? "" : ", ") + d.name;
    fail(ErrorKind::InvalidArgument, "no Vulkan device matches \"{}\"; present: {}", want, names);
  }
  auto best = std::min_element(devices.begin(), devices.end(),
                               [](auto& a, auto& b) { return preference(a.type) < preference(b.type); });
  std::vector<std::uint32_t> same;  // the devices of the preferred type, in index order
  for (auto& d : devices)
    if (d.type == best->type) same.push_back(d.index);
  return same[options.local_rank % same.size()];
}

}  // namespace oa::runtime
