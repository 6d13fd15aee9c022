#pragma once
// EngineState: everything an Engine owns on its Vulkan device. Only files under
// src/runtime/vulkan/ see this header.
#include <atomic>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "oa/runtime/engine.hpp"
#include "runtime/vulkan/vk.hpp"

namespace oa::runtime {

struct Block;

struct Chunk {
  Block* block = nullptr;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;  // size class
};

class Allocator;

struct Block {
  Allocator* owner = nullptr;
  vk::Handle<VkDeviceMemory> memory;
  vk::Handle<VkBuffer> buffer;
  std::uint64_t size = 0;
  std::uint64_t used = 0;  // bump pointer
  void* mapped = nullptr;
  std::uint32_t live = 0;  // chunks handed out
  std::vector<std::unique_ptr<Chunk>> chunks;
};

// Sub-allocates storage buffers from large blocks of one memory type, by size
// class, reusing freed chunks of the same class.
class Allocator {
 public:
  Allocator(VkDevice device, std::uint32_t memory_type, bool host_visible, std::uint64_t limit, std::uint64_t max_allocation,
            std::uint64_t alignment);
  ~Allocator();
  Chunk* allocate(std::uint64_t bytes);
  void release(Chunk* chunk);
  MemoryStats stats() const;
  void reset_peak();

 private:
  Block& new_block(std::uint64_t size);
  void trim_locked();  // frees blocks with no live chunk
  static std::uint64_t size_class(std::uint64_t bytes);

  VkDevice device_;
  std::uint32_t memory_type_;
  bool host_visible_;
  std::uint64_t limit_;
  std::uint64_t max_allocation_;
  std::uint64_t alignment_;
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Block>> blocks_;
  std::map<std::uint64_t, std::vector<Chunk*>> free_;
  MemoryStats stats_;
};

struct Pipeline {
  vk::Handle<VkDescriptorSetLayout> set_layout;
  vk::Handle<VkPipelineLayout> layout;
  vk::Handle<VkPipeline> pipeline;
  std::uint32_t bindings = 0;
};

struct TimedOp {
  std::string label;
  std::uint32_t query = 0;
  std::uint32_t dispatches = 0;
};

struct Batch {
  vk::Handle<VkCommandPool> pool;
  VkCommandBuffer cmd = VK_NULL_HANDLE;
  std::vector<vk::Handle<VkDescriptorPool>> descriptor_pools;
  std::size_t descriptor_pool_in_use = 0;
  vk::Handle<VkQueryPool> queries;
  std::uint32_t queries_used = 0;
  std::vector<TimedOp> timed;
  std::vector<std::shared_ptr<Storage>> refs;
  std::uint64_t value = 0;
  std::uint32_t dispatches = 0;
  // Hazard tracking since the last barrier, by storage id.
  std::unordered_map<std::uint64_t, std::uint8_t> touched;  // bit 0 read, bit 1 written
};

struct EngineState : std::enable_shared_from_this<EngineState> {
  EngineOptions options;
  DeviceInfo info;
  std::uint64_t min_storage_offset_alignment = 16;

  vk::Handle<VkInstance> instance;
  vk::Handle<VkDebugUtilsMessengerEXT> messenger;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  vk::Handle<VkDevice> device;
  VkQueue queue = VK_NULL_HANDLE;
  std::uint32_t queue_family = 0;
  vk::Handle<VkSemaphore> timeline;
  vk::Handle<VkPipelineCache> pipeline_cache;
  std::string pipeline_cache_path;
  bool pipeline_cache_dirty = false;

  std::unique_ptr<Allocator> device_memory;
  std::unique_ptr<Allocator> staging_memory;  // host-visible, discrete devices only

  std::recursive_mutex mutex;
  std::unordered_map<std::string, vk::Handle<VkShaderModule>> modules;
  std::map<std::pair<std::string, std::vector<std::uint32_t>>, std::unique_ptr<Pipeline>> pipelines;
  std::unique_ptr<Batch> open;
  std::deque<std::unique_ptr<Batch>> in_flight;
  std::vector<std::unique_ptr<Batch>> spare;
  std::uint64_t next_value = 1;  // value the open batch will signal
  std::uint64_t completed = 0;

  EngineStats stats;
  std::vector<std::vector<SemanticOp>> traces;
  bool profiling = false;
  std::map<std::string, ProfileEntry> profile;

  explicit EngineState(EngineOptions opts);
  ~EngineState();

  // All below expect `mutex` held.
  Batch& batch();
  bool conflicts(const Batch& b, const Storage& s, Access access) const;
  void mark(Batch& b, const std::shared_ptr<Storage>& s, Access access);
  void barrier(Batch& b);
  void submit();
  void wait_for(std::uint64_t value);
  void retire();
  const Pipeline& pipeline(std::string_view kernel, const std::vector<std::uint32_t>& spec, std::uint32_t bindings);
  VkDescriptorSet descriptor_set(Batch& b, const Pipeline& p);
  void save_pipeline_cache();
  // Storage whose memory is mapped, or the staging path for discrete devices.
  std::shared_ptr<Storage> make_storage(Allocator& allocator, std::uint64_t bytes);
};


}  // namespace oa::runtime
