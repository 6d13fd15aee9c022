// Engine on Vulkan: device creation, lazy batched recording with hazard-derived
// barriers (tracked per memory chunk, so reused memory is ordered after its
// previous user), early submission with several batches in flight, and
// timeline-semaphore retirement of command buffers.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <pthread.h>

#include "oa/runtime/tuning.hpp"
#include "runtime/vulkan/context.hpp"
#include "runtime/vulkan/cooperative_matrix.hpp"

namespace oa::detail {
struct EmbeddedShader {
  std::string_view name;
  const std::uint32_t* words;
  std::size_t count;
};
std::span<const EmbeddedShader> embedded_shaders();
}  // namespace oa::detail

namespace oa::runtime {

namespace {
constexpr std::uint32_t kSetsPerPool = 256;
constexpr std::uint32_t kDescriptorsPerPool = 256 * 8;
std::atomic<std::uint64_t> g_storage_ids{1};

std::uint32_t find_memory_type(VkPhysicalDevice pd, VkMemoryPropertyFlags want, VkMemoryPropertyFlags avoid = 0) {
  VkPhysicalDeviceMemoryProperties mem;
  vkGetPhysicalDeviceMemoryProperties(pd, &mem);
  for (std::uint32_t i = 0; i < mem.memoryTypeCount; ++i) {
    const auto f = mem.memoryTypes[i].propertyFlags;
    if ((f & want) == want && (f & avoid) == 0) return i;
  }
  return UINT32_MAX;
}

std::string cache_path(const DeviceInfo& d, const VkPhysicalDeviceProperties& p) {
  const std::filesystem::path dir = cache_folder();
  if (dir.empty()) return {};
  std::string id;
  for (auto b : p.pipelineCacheUUID) id += fmt::format("{:02x}", b);
  (void)d;
  return (dir / fmt::format("pipelines-{:x}-{:x}-{}.bin", p.vendorID, p.deviceID, id)).string();
}

std::vector<char> read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return {};
  return {std::istreambuf_iterator<char>(f), {}};
}
}  // namespace

// ── Storage ──────────────────────────────────────────────────────────────────

Storage::Storage(std::weak_ptr<EngineState> engine, Chunk* chunk, std::uint64_t bytes)
    : engine_(std::move(engine)), chunk_(chunk), bytes_(bytes), id_(g_storage_ids++) {}

Storage::~Storage() {
  if (forked_child()) return;
  if (auto e = engine_.lock()) chunk_->block->owner->release(chunk_);
}

bool Storage::belongs_to(const EngineState& engine) const { return engine_.lock().get() == &engine; }

// ── Fork ────────────────────────────────────────────────────────────────────

namespace {
std::atomic<bool> g_forked_child{false};
}  // namespace

void watch_for_fork() {
  static const int registered = pthread_atfork(nullptr, nullptr, [] { g_forked_child.store(true, std::memory_order_relaxed); });
  (void)registered;
}

bool forked_child() { return g_forked_child.load(std::memory_order_relaxed); }

void require_unforked(const char* op) {
  if (forked_child())
    fail(ErrorKind::FailedPrecondition,
         "{}: this process was forked (os.fork, or multiprocessing's default 'fork' start method) after it had created an "
         "oa engine, and a forked child cannot use the GPU state it inherited. Use the 'spawn' or 'forkserver' start method "
         "(multiprocessing.set_start_method('spawn') or get_context('spawn')), or create oa tensors only in the child "
         "processes",
         op);
}

std::shared_ptr<EngineState> make_engine_state(EngineOptions options) {
  return std::shared_ptr<EngineState>(new EngineState(std::move(options)), [](EngineState* s) {
    if (!forked_child()) delete s;
  });
}

// ── EngineState ──────────────────────────────────────────────────────────────

namespace {
std::uint32_t batch_dispatches(std::uint32_t option) {
  if (option) return option;
  if (const char* env = std::getenv("OA_BATCH_DISPATCHES")) {
    char* end = nullptr;
    const unsigned long v = std::strtoul(env, &end, 10);
    if (end == env || *end != '\0' || v == 0 || v > UINT32_MAX)
      fail(ErrorKind::InvalidArgument, "OA_BATCH_DISPATCHES={} is not a positive dispatch count", env);
    return static_cast<std::uint32_t>(v);
  }
  return 64;
}

// A boolean option: `option` where set, else the environment variable `name` (0 or 1), else false.
bool flag_option(std::optional<bool> option, const char* name) {
  if (option) return *option;
  const char* env = std::getenv(name);
  if (!env) return false;
  const std::string v(env);
  if (v != "0" && v != "1") fail(ErrorKind::InvalidArgument, "{}={} is neither 0 nor 1", name, env);
  return v == "1";
}

// Whether `physical` offers VK_KHR_pipeline_executable_properties with its feature.
bool has_pipeline_executable_info(VkPhysicalDevice physical) {
  if (!has_extension(physical, VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME)) return false;
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR pe{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f2.pNext = &pe;
  vkGetPhysicalDeviceFeatures2(physical, &f2);
  return pe.pipelineExecutableInfo == VK_TRUE;
}

// A device object made by `create` from `info`, owned: destroyed with `destroy`.
// Throws Device naming `what` when the call fails.
template <class H, class Info>
vk::Handle<H> create_owned(VkDevice dev, VkResult (*create)(VkDevice, const Info*, const VkAllocationCallbacks*, H*),
                           void (*destroy)(VkDevice, H, const VkAllocationCallbacks*), const Info& info, const char* what) {
  H h;
  vk::check(create(dev, &info, nullptr, &h), what);
  return vk::Handle<H>(h, [dev, destroy](H x) { destroy(dev, x, nullptr); });
}
}  // namespace

EngineState::EngineState(EngineOptions opts) : options(std::move(opts)) {
  require_unforked("oa::Engine");
  watch_for_fork();
  options.max_batch_dispatches = batch_dispatches(options.max_batch_dispatches);
  options.early_submission = flag_option(options.early_submission, "OA_EARLY_SUBMISSION");
  instance = shared_instance(validation_requested(options));
  auto pds = physical_devices(instance->instance);
  std::vector<DeviceInfo> infos;
  for (std::uint32_t i = 0; i < pds.size(); ++i) infos.push_back(describe(*instance, pds[i], i));
  const std::uint32_t chosen = choose_device(infos, options);
  physical = pds[chosen];
  info = infos[chosen];
  tuning = std::make_shared<const Tuning>(Tuning::for_device(info));
  VkPhysicalDeviceProperties props;
  vkGetPhysicalDeviceProperties(physical, &props);
  min_storage_offset_alignment = props.limits.minStorageBufferOffsetAlignment;
  if (info.max_push_constants_bytes < kPushBytes)
    fail(ErrorKind::Unsupported, "device {} offers {} bytes of push constants; oa needs {}", info.name,
         info.max_push_constants_bytes, kPushBytes);

  std::uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> qf(nq);
  vkGetPhysicalDeviceQueueFamilyProperties(physical, &nq, qf.data());
  queue_family = UINT32_MAX;
  for (std::uint32_t i = 0; i < nq; ++i)  // prefer a queue with graphics (the universal queue), then any compute queue
    if ((qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && (queue_family == UINT32_MAX || (qf[i].queueFlags & VK_QUEUE_GRAPHICS_BIT)))
      if (queue_family == UINT32_MAX || !(qf[queue_family].queueFlags & VK_QUEUE_GRAPHICS_BIT)) queue_family = i;
  if (queue_family == UINT32_MAX) fail(ErrorKind::Device, "device {} has no compute queue", info.name);
  if (qf[queue_family].timestampValidBits == 0) info.timestamps = false;

  VkPhysicalDeviceVulkan12Features f12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  VkPhysicalDeviceFeatures2 f2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2};
  f2.pNext = &f12;
  vkGetPhysicalDeviceFeatures2(physical, &f2);
  if (!f12.timelineSemaphore) fail(ErrorKind::Unsupported, "device {} lacks timeline semaphores (Vulkan 1.2)", info.name);
  options.pipeline_statistics =
      flag_option(options.pipeline_statistics, "OA_PIPELINE_STATS") && has_pipeline_executable_info(physical);
  VkPhysicalDeviceVulkan12Features en12{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES};
  en12.timelineSemaphore = VK_TRUE;
  // Cooperative matrices (the tensor-core kernels) where describe() found them,
  // with the features their shaders declare.
  VkPhysicalDeviceCooperativeMatrixFeaturesKHR encm{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR};
  VkPhysicalDeviceVulkan13Features en13{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES};
  if (!info.cooperative_matrix.empty()) {
    en12.shaderFloat16 = VK_TRUE;
    en12.vulkanMemoryModel = VK_TRUE;
    en12.vulkanMemoryModelDeviceScope = VK_TRUE;
    en13.maintenance4 = VK_TRUE;
    encm.cooperativeMatrix = VK_TRUE;
    en12.pNext = &en13;
    en13.pNext = &encm;
  }
  VkPhysicalDeviceShaderBfloat16FeaturesKHR enbf{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_BFLOAT16_FEATURES_KHR};
  if (uses_bfloat16(info.cooperative_matrix)) {
    enbf.shaderBFloat16Type = VK_TRUE;
    enbf.shaderBFloat16CooperativeMatrix = VK_TRUE;
    encm.pNext = &enbf;
  }
  VkPhysicalDeviceCooperativeMatrix2FeaturesNV encm2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_2_FEATURES_NV};
  if (!info.workgroup_cooperative_matrix.empty()) {
    encm2.cooperativeMatrixWorkgroupScope = VK_TRUE;
    encm2.cooperativeMatrixFlexibleDimensions = VK_TRUE;
    encm2.cooperativeMatrixReductions = VK_TRUE;
    encm2.cooperativeMatrixConversions = VK_TRUE;
    encm2.cooperativeMatrixPerElementOperations = VK_TRUE;
    encm2.cooperativeMatrixTensorAddressing = VK_TRUE;
    encm2.pNext = encm.pNext;
    encm.pNext = &encm2;
  }
  VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR enpe{
      VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR};
  if (*options.pipeline_statistics) {
    enpe.pipelineExecutableInfo = VK_TRUE;
    enpe.pNext = en12.pNext;
    en12.pNext = &enpe;
  }
  float priority = 1.0f;
  VkDeviceQueueCreateInfo qci{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
  qci.queueFamilyIndex = queue_family;
  qci.queueCount = 1;
  qci.pQueuePriorities = &priority;
  if (options.descriptor_sets) info.push_descriptors = false;
  std::vector<const char*> enabled;
  if (info.push_descriptors) enabled.push_back(VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
  if (!info.cooperative_matrix.empty()) enabled.push_back(VK_KHR_COOPERATIVE_MATRIX_EXTENSION_NAME);
  if (uses_bfloat16(info.cooperative_matrix)) enabled.push_back(VK_KHR_SHADER_BFLOAT16_EXTENSION_NAME);
  if (!info.workgroup_cooperative_matrix.empty()) enabled.push_back(VK_NV_COOPERATIVE_MATRIX_2_EXTENSION_NAME);
  if (*options.pipeline_statistics) enabled.push_back(VK_KHR_PIPELINE_EXECUTABLE_PROPERTIES_EXTENSION_NAME);
  VkDeviceCreateInfo dci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
  dci.pNext = &en12;
  dci.enabledExtensionCount = static_cast<std::uint32_t>(enabled.size());
  dci.ppEnabledExtensionNames = enabled.data();
  dci.queueCreateInfoCount = 1;
  dci.pQueueCreateInfos = &qci;
  VkDevice dev;
  vk::check(vkCreateDevice(physical, &dci, nullptr, &dev), "vkCreateDevice");
  device = vk::Handle<VkDevice>(dev, [](VkDevice d) { vkDestroyDevice(d, nullptr); });
  vkGetDeviceQueue(dev, queue_family, 0, &queue);
  if (info.push_descriptors) {
    push_descriptor_set = reinterpret_cast<PFN_vkCmdPushDescriptorSetKHR>(vkGetDeviceProcAddr(dev, "vkCmdPushDescriptorSetKHR"));
    VkPhysicalDevicePushDescriptorPropertiesKHR pdp{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PUSH_DESCRIPTOR_PROPERTIES_KHR};
    VkPhysicalDeviceProperties2 p2{VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2};
    p2.pNext = &pdp;
    vkGetPhysicalDeviceProperties2(physical, &p2);
    max_push_descriptors = push_descriptor_set ? pdp.maxPushDescriptors : 0;
    info.push_descriptors = push_descriptor_set != nullptr;
  }
  if (*options.pipeline_statistics) {
    executable_properties = reinterpret_cast<PFN_vkGetPipelineExecutablePropertiesKHR>(
        vkGetDeviceProcAddr(dev, "vkGetPipelineExecutablePropertiesKHR"));
    executable_statistics = reinterpret_cast<PFN_vkGetPipelineExecutableStatisticsKHR>(
        vkGetDeviceProcAddr(dev, "vkGetPipelineExecutableStatisticsKHR"));
    options.pipeline_statistics = executable_properties && executable_statistics;
  }

  VkSemaphoreTypeCreateInfo sti{VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO};
  sti.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  VkSemaphoreCreateInfo sci{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
  sci.pNext = &sti;
  timeline = create_owned(dev, vkCreateSemaphore, vkDestroySemaphore, sci, "vkCreateSemaphore");

  const std::uint64_t limit = options.memory_limit_bytes ? options.memory_limit_bytes : info.device_local_bytes;
  const std::uint64_t max_alloc = info.max_memory_allocation_bytes ? info.max_memory_allocation_bytes : UINT64_MAX;
  if (options.staging_transfers) info.unified_memory = false;
  if (info.unified_memory) {
    std::uint32_t t = find_memory_type(physical, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                                     VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    if (t == UINT32_MAX) info.unified_memory = false;
    else device_memory = std::make_unique<Allocator>(dev, t, true, limit, max_alloc, min_storage_offset_alignment);
  }
  if (!info.unified_memory) {
    std::uint32_t t = find_memory_type(physical, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    std::uint32_t h = find_memory_type(physical, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT |
                                                     VK_MEMORY_PROPERTY_HOST_CACHED_BIT);
    if (h == UINT32_MAX) h = find_memory_type(physical, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    if (t == UINT32_MAX || h == UINT32_MAX) fail(ErrorKind::Device, "device {} lacks device-local or host-visible memory", info.name);
    device_memory = std::make_unique<Allocator>(dev, t, false, limit, max_alloc, min_storage_offset_alignment);
    staging_memory = std::make_unique<Allocator>(dev, h, true, UINT64_MAX, max_alloc, min_storage_offset_alignment);
  }

  pipeline_cache_path = cache_path(info, props);
  std::vector<char> blob = pipeline_cache_path.empty() ? std::vector<char>{} : read_file(pipeline_cache_path);
  VkPipelineCacheCreateInfo pci{VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO};
  pci.initialDataSize = blob.size();
  pci.pInitialData = blob.empty() ? nullptr : blob.data();
  VkPipelineCache pc;
  if (vkCreatePipelineCache(dev, &pci, nullptr, &pc) != VK_SUCCESS) {
    pci.initialDataSize = 0;
    pci.pInitialData = nullptr;
    vk::check(vkCreatePipelineCache(dev, &pci, nullptr, &pc), "vkCreatePipelineCache");
  }
  pipeline_cache = vk::Handle<VkPipelineCache>(pc, [dev](VkPipelineCache c) { vkDestroyPipelineCache(dev, c, nullptr); });
  profiling = options.profiling && info.timestamps;
}

EngineState::~EngineState() {
  try {
    std::lock_guard lock(mutex);
    // Work never submitted is dropped: with the engine gone, nothing can read
    // its results. (Submitting it from the exit handlers, for the default
    // engine, would reach layers whose own state is already torn down.)
    open.reset();
    wait_for(next_value - 1);
    retire();
    save_pipeline_cache();
  } catch (...) {
  }
  if (device) vkDeviceWaitIdle(device);
  open.reset();
  in_flight.clear();
  spare.clear();
  pipelines.clear();
  modules.clear();
}

void EngineState::save_pipeline_cache() {
  if (!pipeline_cache_dirty || pipeline_cache_path.empty()) return;
  std::size_t size = 0;
  if (vkGetPipelineCacheData(device, pipeline_cache, &size, nullptr) != VK_SUCCESS) return;
  std::vector<char> data(size);
  if (vkGetPipelineCacheData(device, pipeline_cache, &size, data.data()) != VK_SUCCESS) return;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(pipeline_cache_path).parent_path(), ec);
  const std::string tmp = pipeline_cache_path + fmt::format(".{}.tmp", ::getpid());
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f.write(data.data(), static_cast<std::streamsize>(size))) return;
  }
  std::filesystem::rename(tmp, pipeline_cache_path, ec);
  pipeline_cache_dirty = false;
}

std::shared_ptr<Storage> EngineState::make_storage(Allocator& allocator, std::uint64_t bytes, bool idle) {
  Chunk* c = allocator.allocate(bytes, completed, idle, hazard_epoch);
  try {
    return std::make_shared<Storage>(weak_from_this(), c, bytes);
  } catch (...) {
    allocator.release(c);
    throw;
  }
}

Batch& EngineState::batch() {
  if (open) return *open;
  retire();
  if (!spare.empty()) {
    open = std::move(spare.back());
    spare.pop_back();
  } else {
    open = std::make_unique<Batch>();
    VkDevice dev = device;
    VkCommandPoolCreateInfo cpi{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    cpi.flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
    cpi.queueFamilyIndex = queue_family;
    open->pool = create_owned(dev, vkCreateCommandPool, vkDestroyCommandPool, cpi, "vkCreateCommandPool");
    VkCommandBufferAllocateInfo cai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    cai.commandPool = open->pool.get();
    cai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    cai.commandBufferCount = 1;
    vk::check(vkAllocateCommandBuffers(dev, &cai, &open->cmd), "vkAllocateCommandBuffers");
    if (info.timestamps) {
      VkQueryPoolCreateInfo qpi{VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO};
      qpi.queryType = VK_QUERY_TYPE_TIMESTAMP;
      qpi.queryCount = kQueriesPerBatch;
      open->queries = create_owned(dev, vkCreateQueryPool, vkDestroyQueryPool, qpi, "vkCreateQueryPool");
    }
  }
  Batch& b = *open;
  b.value = next_value;
  b.bound = VK_NULL_HANDLE;
  VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
  // A captured command buffer is submitted again by every replay, possibly
  // while an earlier replay is still pending.
  bi.flags = capturing ? VK_COMMAND_BUFFER_USAGE_SIMULTANEOUS_USE_BIT : VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  vk::check(vkBeginCommandBuffer(b.cmd, &bi), "vkBeginCommandBuffer");
  if (b.queries) vkCmdResetQueryPool(b.cmd, b.queries, 0, kQueriesPerBatch);
  // Orders this batch after everything submitted earlier on the queue.
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT | VK_ACCESS_HOST_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                     VK_ACCESS_TRANSFER_WRITE_BIT;
  vkCmdPipelineBarrier(b.cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT | VK_PIPELINE_STAGE_HOST_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
  return b;
}

void EngineState::barrier(Batch& b) {
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                     VK_ACCESS_TRANSFER_WRITE_BIT;
  vkCmdPipelineBarrier(b.cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                       VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
  hazard_epoch++;
  stats.barriers++;
}

// True when `access` to the memory of `s` conflicts with an access since the
// last barrier: read-after-write, write-after-read or write-after-write. The
// earlier access may belong to a storage that has since released the memory.
bool EngineState::conflicts(const Storage& s, Access access) const {
  const Chunk& c = *s.chunk();
  const std::uint8_t seen = c.hazard_epoch == hazard_epoch ? c.hazard : 0;
  return (seen & 2) || (access != Access::Read && (seen & 1));
}

void EngineState::mark(Batch& b, const Storage& s, Access access) {
  Chunk& c = *s.chunk();
  if (c.hazard_epoch != hazard_epoch) {
    c.hazard_epoch = hazard_epoch;
    c.hazard = 0;
  }
  c.hazard |= static_cast<std::uint8_t>((access != Access::Write ? 1 : 0) | (access != Access::Read ? 2 : 0));
  if (capturing && c.captured_by != capturing->serial) {
    c.block->owner->pin(&c);
    c.captured_by = capturing->serial;
    capturing->chunks.push_back(&c);
    capturing->last_use_before.push_back(c.last_use);
  }
  c.last_use = b.value;
}

void EngineState::submit() {
  if (!open) return;
  early_check = 0;  // the next batch starts afresh
  Batch& b = *open;
  vk::check(vkEndCommandBuffer(b.cmd), "vkEndCommandBuffer");
  if (capturing) {  // kept for replay, not submitted
    capturing->dispatches += b.dispatches;
    capturing->cmds.push_back(b.cmd);
    capturing->batches.push_back(std::move(open));
    hazard_epoch++;
    return;
  }
  VkTimelineSemaphoreSubmitInfo tsi{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
  tsi.signalSemaphoreValueCount = 1;
  tsi.pSignalSemaphoreValues = &b.value;
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.pNext = &tsi;
  si.commandBufferCount = 1;
  si.pCommandBuffers = &b.cmd;
  si.signalSemaphoreCount = 1;
  VkSemaphore sem = timeline;
  si.pSignalSemaphores = &sem;
  if (in_flight.size() >= kMaxBatchesInFlight) wait_for(in_flight.front()->value);
  vk::check(vkQueueSubmit(queue, 1, &si, VK_NULL_HANDLE), "vkQueueSubmit");
  stats.submits++;
  next_value++;
  hazard_epoch++;  // the next batch begins with a full barrier
  in_flight.push_back(std::move(open));
}

void EngineState::submit_if_due() {
  Batch& b = *open;
  if (b.dispatches >= options.max_batch_dispatches) return submit();
  if (!*options.early_submission || capturing || b.dispatches < std::max(early_dispatches, early_check)) return;
  retire();
  if (in_flight.size() > 1) {  // the GPU has queued work: ask again once the batch has doubled
    early_check = 2 * b.dispatches;
    return;
  }
  // An idle GPU means the host is the slower side: larger batches from now on
  // pay fewer submissions.
  if (in_flight.empty()) early_dispatches = std::min(2 * early_dispatches, options.max_batch_dispatches);
  submit();
}

void EngineState::end_capture() {
  submit();
  device_memory->end_capture();
  for (std::size_t i = 0; i < capturing->chunks.size(); ++i) capturing->chunks[i]->last_use = capturing->last_use_before[i];
  capturing = nullptr;
}

void EngineState::refuse_in_capture(const char* what) const {
  if (capturing)
    fail(ErrorKind::FailedPrecondition,
         "{}: not allowed while a StepGraph is being captured (the captured work has not run yet); do it outside the "
         "step, after replay(). Matrices made from host data inside the step (from_vector, from_i32) must exist before "
         "the capture: run the step once eagerly first", what);
}

void EngineState::wait_for(std::uint64_t value) {
  if (value <= completed) return;
  retire();
  if (value > completed) {
    VkSemaphore sem = timeline;
    VkSemaphoreWaitInfo wi{VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO};
    wi.semaphoreCount = 1;
    wi.pSemaphores = &sem;
    wi.pValues = &value;
    vk::check(vkWaitSemaphores(device, &wi, UINT64_MAX), "vkWaitSemaphores");
    stats.host_waits++;
    retire();
  }
  if (in_flight.empty()) early_dispatches = 1;  // the GPU is idle: the next op goes at once
}

void EngineState::wait_for_use(const Chunk& c) {
  if (open && c.last_use == open->value) submit();
  wait_for(c.last_use);
}

void EngineState::retire() {
  vk::check(vkGetSemaphoreCounterValue(device, timeline, &completed), "vkGetSemaphoreCounterValue");
  while (!in_flight.empty() && in_flight.front()->value <= completed) {
    std::unique_ptr<Batch> b = std::move(in_flight.front());
    in_flight.pop_front();
    early_check = 0;  // fewer batches unfinished: early submission may hand over the open batch at once
    if (b->queries && !b->timed.empty()) {
      std::vector<std::uint64_t> ts(b->queries_used);
      vk::check(vkGetQueryPoolResults(device, b->queries, 0, b->queries_used, ts.size() * 8, ts.data(), 8,
                                      VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
                "vkGetQueryPoolResults");
      for (auto& t : b->timed) {
        auto& e = profile[t.label];
        e.op = t.label;
        e.calls++;
        e.dispatches += t.dispatches;
        e.gpu_ms += static_cast<double>(ts[t.query + 1] - ts[t.query]) * info.timestamp_period_ns * 1e-6;
        profile_first = std::min(profile_first, ts[t.query]);
        profile_last = std::max(profile_last, ts[t.query + 1]);
      }
    }
    recycle(std::move(b));
  }
}

void EngineState::recycle(std::unique_ptr<Batch> b) {
  b->timed.clear();
  b->queries_used = 0;
  b->dispatches = 0;
  for (auto& p : b->descriptor_pools) vkResetDescriptorPool(device, p, 0);
  b->descriptor_pool_in_use = 0;
  vkResetCommandPool(device, b->pool, 0);
  spare.push_back(std::move(b));
}

const Pipeline& EngineState::pipeline(std::string_view kernel, std::span<const std::uint32_t> spec, std::uint32_t bindings,
                                      std::uint32_t push_bytes) {
  std::size_t h = std::hash<const void*>{}(kernel.data()) ^ (spec.size() * 0x9e3779b97f4a7c15ull);
  for (std::uint32_t v : spec) h = h * 31 + v;
  PipelineSlot& slot = pipeline_slots[(h ^ (h >> 17)) % kPipelineSlots];
  if (!slot.key || slot.key->kernel != kernel || !std::equal(spec.begin(), spec.end(), slot.key->spec.begin(), slot.key->spec.end())) {
    auto it = pipelines.find(PipelineKeyView{kernel, spec});
    if (it == pipelines.end()) return create_pipeline(kernel, spec, bindings, push_bytes);
    slot = {&it->first, it->second.get()};
  }
  const Pipeline& p = *slot.pipeline;
  if (p.bindings != bindings || std::max(p.push_bytes, kPushHeaderBytes) != push_bytes)
    fail(ErrorKind::Internal, "kernel {} dispatched with {} bindings and {} push-constant bytes; it declares {} and {}", kernel,
         bindings, push_bytes, p.bindings, p.push_bytes);
  return p;
}

const Pipeline& EngineState::create_pipeline(std::string_view kernel, std::span<const std::uint32_t> spec, std::uint32_t bindings,
                                             std::uint32_t push_bytes) {
  VkDevice dev = device;
  PipelineKey key{std::string(kernel), std::vector<std::uint32_t>(spec.begin(), spec.end())};
  auto mit = modules.find(key.kernel);
  if (mit == modules.end()) {
    const detail::EmbeddedShader* found = nullptr;
    for (auto& s : detail::embedded_shaders())
      if (s.name == kernel) found = &s;
    if (!found) fail(ErrorKind::Internal, "no embedded kernel named {}", kernel);
    VkShaderModuleCreateInfo smi{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    smi.codeSize = found->count * 4;
    smi.pCode = found->words;
    mit = modules
              .emplace(key.kernel, Module{create_owned(dev, vkCreateShaderModule, vkDestroyShaderModule, smi, "vkCreateShaderModule"),
                                          reflect({found->words, found->count})})
              .first;
  }
  const ShaderInterface& declared = mit->second.interface;
  // A shader that reads no push constant (not even the grid header) declares no block.
  const bool push_ok = declared.push_bytes == push_bytes || (declared.push_bytes == 0 && push_bytes == kPushHeaderBytes);
  if (declared.bindings != bindings || !push_ok || spec.size() > declared.spec_ids)
    fail(ErrorKind::Internal,
         "kernel {} dispatched with {} bindings, {} push-constant bytes and {} specialization constants; its SPIR-V declares {}, {} and {}",
         kernel, bindings, push_bytes, spec.size(), declared.bindings, declared.push_bytes, declared.spec_ids);
  auto p = std::make_unique<Pipeline>();
  p->bindings = bindings;
  p->push_bytes = declared.push_bytes;
  p->push_descriptors = push_descriptor_set && bindings <= max_push_descriptors;
  std::vector<VkDescriptorSetLayoutBinding> lb(bindings);
  for (std::uint32_t i = 0; i < bindings; ++i)
    lb[i] = {i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1, VK_SHADER_STAGE_COMPUTE_BIT, nullptr};
  VkDescriptorSetLayoutCreateInfo dli{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
  dli.flags = p->push_descriptors ? VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR : 0;
  dli.bindingCount = bindings;
  dli.pBindings = lb.data();
  p->set_layout = create_owned(dev, vkCreateDescriptorSetLayout, vkDestroyDescriptorSetLayout, dli, "vkCreateDescriptorSetLayout");
  const VkDescriptorSetLayout dsl = p->set_layout.get();
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, kPushBytes};
  VkPipelineLayoutCreateInfo pli{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
  pli.setLayoutCount = 1;
  pli.pSetLayouts = &dsl;
  pli.pushConstantRangeCount = 1;
  pli.pPushConstantRanges = &range;
  p->layout = create_owned(dev, vkCreatePipelineLayout, vkDestroyPipelineLayout, pli, "vkCreatePipelineLayout");
  std::vector<VkSpecializationMapEntry> entries(spec.size());
  for (std::uint32_t i = 0; i < spec.size(); ++i) entries[i] = {i, i * 4, 4};
  VkSpecializationInfo si{static_cast<std::uint32_t>(entries.size()), entries.data(), spec.size() * 4, spec.data()};
  VkComputePipelineCreateInfo cpi{VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO};
  cpi.stage = {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO};
  cpi.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  cpi.stage.module = mit->second.module;
  cpi.stage.pName = "main";
  cpi.stage.pSpecializationInfo = spec.empty() ? nullptr : &si;
  cpi.layout = p->layout.get();
  if (*options.pipeline_statistics) cpi.flags |= VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR;
  VkPipeline pipe;
  vk::check(vkCreateComputePipelines(dev, pipeline_cache, 1, &cpi, nullptr, &pipe), "vkCreateComputePipelines");
  p->pipeline = vk::Handle<VkPipeline>(pipe, [dev](VkPipeline h) { vkDestroyPipeline(dev, h, nullptr); });
  if (*options.pipeline_statistics) p->executables = executable_statistics_of(pipe);
  pipeline_cache_dirty = true;
  stats.pipelines++;
  return *pipelines.emplace(std::move(key), std::move(p)).first->second;
}

std::vector<PipelineExecutable> EngineState::executable_statistics_of(VkPipeline pipe) const {
  VkDevice dev = device;
  VkPipelineInfoKHR pi{VK_STRUCTURE_TYPE_PIPELINE_INFO_KHR};
  pi.pipeline = pipe;
  std::uint32_t n = 0;
  vk::check(executable_properties(dev, &pi, &n, nullptr), "vkGetPipelineExecutablePropertiesKHR");
  std::vector<VkPipelineExecutablePropertiesKHR> props(n, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_PROPERTIES_KHR});
  vk::check(executable_properties(dev, &pi, &n, props.data()), "vkGetPipelineExecutablePropertiesKHR");
  std::vector<PipelineExecutable> out;
  for (std::uint32_t e = 0; e < n; ++e) {
    PipelineExecutable x{props[e].name, props[e].description, props[e].subgroupSize, {}};
    VkPipelineExecutableInfoKHR ei{VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR};
    ei.pipeline = pipe;
    ei.executableIndex = e;
    std::uint32_t m = 0;
    vk::check(executable_statistics(dev, &ei, &m, nullptr), "vkGetPipelineExecutableStatisticsKHR");
    std::vector<VkPipelineExecutableStatisticKHR> st(m, {VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR});
    vk::check(executable_statistics(dev, &ei, &m, st.data()), "vkGetPipelineExecutableStatisticsKHR");
    for (std::uint32_t i = 0; i < m; ++i) {
      double v = 0.0;
      switch (st[i].format) {
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR: v = st[i].value.b32 ? 1.0 : 0.0; break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR: v = static_cast<double>(st[i].value.i64); break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR: v = static_cast<double>(st[i].value.u64); break;
        default: v = st[i].value.f64; break;
      }
      x.statistics.push_back({st[i].name, st[i].description, v});
    }
    out.push_back(std::move(x));
  }
  return out;
}

VkDescriptorSet EngineState::descriptor_set(Batch& b, const Pipeline& p) {
  VkDevice dev = device;
  for (;;) {
    if (b.descriptor_pool_in_use == b.descriptor_pools.size()) {
      VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, kDescriptorsPerPool};
      VkDescriptorPoolCreateInfo dpi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
      dpi.maxSets = kSetsPerPool;
      dpi.poolSizeCount = 1;
      dpi.pPoolSizes = &size;
      b.descriptor_pools.push_back(create_owned(dev, vkCreateDescriptorPool, vkDestroyDescriptorPool, dpi, "vkCreateDescriptorPool"));
    }
    VkDescriptorSetLayout layout = p.set_layout;
    VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    ai.descriptorPool = b.descriptor_pools[b.descriptor_pool_in_use];
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &layout;
    VkDescriptorSet set;
    VkResult r = vkAllocateDescriptorSets(dev, &ai, &set);
    if (r == VK_SUCCESS) return set;
    if (r != VK_ERROR_OUT_OF_POOL_MEMORY && r != VK_ERROR_FRAGMENTED_POOL) vk::check(r, "vkAllocateDescriptorSets");
    b.descriptor_pool_in_use++;
  }
}

}  // namespace oa::runtime
