#pragma once
// EngineState: everything an Engine owns on its Vulkan device. Only files under
// src/runtime/vulkan/ see this header.
#include <algorithm>
#include <array>
#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "oa/runtime/engine.hpp"
#include "oa/runtime/tuning.hpp"
#include "runtime/vulkan/spirv_interface.hpp"
#include "runtime/vulkan/vk.hpp"

namespace oa::runtime {

struct Block;

// A range of a block, handed to one Storage at a time. Hazards and GPU use are
// tracked on the chunk (the memory itself), not on the Storage, so a new
// Storage on reused memory is ordered after the old one's work.
// Every push-constant block begins with a header the engine writes: uvec4
// base (the workgroup offset of a split grid), uvec4 grid (shaders/common/oa.glsl).
inline constexpr std::uint32_t kPushHeaderBytes = 32;
inline constexpr std::uint32_t kPushBytes = kPushHeaderBytes + PushConstants::kMaxPushBytes;

struct Chunk {
  Block* block = nullptr;
  std::uint64_t offset = 0;
  std::uint64_t size = 0;      // size class (or what is left of a split chunk)
  std::uint64_t last_use = 0;  // timeline value of the last batch that used the range
  // Accesses since the last barrier: valid while hazard_epoch equals
  // EngineState::hazard_epoch. Bit 0 read, bit 1 written.
  std::uint64_t hazard_epoch = 0;
  std::uint8_t hazard = 0;
  // Held by captured step graphs: a released chunk returns to the free lists
  // only when the last graph using it is gone (see Allocator::pin).
  std::uint32_t pins = 0;
  bool released = false;
  std::uint64_t captured_by = 0;  // serial of the last graph that pinned it
};

class Allocator;

struct Block {
  Allocator* owner = nullptr;
  vk::Handle<VkDeviceMemory> memory;
  vk::Handle<VkBuffer> buffer;
  std::uint64_t size = 0;
  std::uint64_t used = 0;  // bump pointer
  void* mapped = nullptr;
  bool shared = false;     // sub-allocated by many size classes (not a dedicated block)
  std::uint32_t live = 0;  // chunks handed out
  std::uint64_t last_use = 0;  // latest last_use of its released chunks
  std::vector<std::unique_ptr<Chunk>> chunks;
};

// Sub-allocates storage buffers from large blocks of one memory type, by size
// class, reusing freed chunks of the same class at once (stream order: the
// engine's hazard tracking orders the new user after the old one). A freed
// chunk that an access since the last barrier touched would cost a barrier;
// room left in a held shared block is taken instead (never a new driver
// allocation), up to 64 MiB between two barriers.
//
// Blocks: 64 MiB shared blocks for requests below 16 MiB, a dedicated block
// for larger ones. Under a limit smaller than a shared block, a new block takes
// what is left of the limit (at least the request).
//
// Release policy: a block with no live chunk is returned to the driver by
// trim(), which frees only blocks the GPU has finished with (`completed` is the
// timeline value known complete). trim() runs when a new block would pass the
// limit and when vkAllocateMemory fails; if no block can be made, a free chunk
// of a larger class is split. Engine::allocate then waits for the GPU and tries
// again before it reports ResourceExhausted.
class Allocator {
 public:
  Allocator(VkDevice device, std::uint32_t memory_type, bool host_visible, std::uint64_t limit, std::uint64_t max_allocation,
            std::uint64_t alignment);
  ~Allocator();
  // `idle`: only memory whose last GPU use has completed (for host access).
  // `epoch`: the engine's hazard epoch (bumped by every barrier).
  Chunk* allocate(std::uint64_t bytes, std::uint64_t completed, bool idle, std::uint64_t epoch);
  void release(Chunk* chunk);
  // A pinned chunk stays out of the free lists: released while pinned, it is
  // returned by the last unpin.
  void pin(Chunk* chunk);
  void unpin(Chunk* chunk);
  // While graph `serial` captures, a chunk that only it pins and that is
  // released goes to a free list of the capture's own: later allocations of
  // the same capture reuse it (in stream order, as eager work does), so a
  // captured step holds about the memory of one eager step. end_capture()
  // leaves those chunks to the graph (returned by its unpin).
  void begin_capture(std::uint64_t serial);
  void end_capture();
  // Frees the blocks with no live chunk whose GPU work has completed.
  void trim(std::uint64_t completed);
  MemoryStats stats() const;
  void reset_peak();

 private:
  // A new block with room for `cls`, or null when it would pass the limit.
  Block* new_block(std::uint64_t request, std::uint64_t cls, std::uint64_t completed);
  // A free chunk of a larger class, cut down to `cls`, or null.
  Chunk* split_free(std::uint64_t cls, std::uint64_t completed, bool idle);
  void trim_locked(std::uint64_t completed);
  void release_locked(Chunk* chunk);
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
  std::uint64_t capture_serial_ = 0;  // the capturing graph, 0 when none
  std::map<std::uint64_t, std::vector<Chunk*>> capture_free_;
  std::uint64_t fresh_epoch_ = 0, fresh_bytes_ = 0;  // fresh memory taken since the last barrier
  MemoryStats stats_;
};

struct Pipeline {
  vk::Handle<VkDescriptorSetLayout> set_layout;
  vk::Handle<VkPipelineLayout> layout;
  vk::Handle<VkPipeline> pipeline;
  std::uint32_t bindings = 0;
  std::uint32_t push_bytes = 0;  // the shader's push-constant block, header included; 0: it reads none
  bool push_descriptors = false;  // bindings are pushed (vkCmdPushDescriptorSetKHR), no descriptor set
  std::vector<PipelineExecutable> executables;  // the driver's statistics, where captured
  mutable std::uint64_t dispatches = 0;          // recorded with this pipeline (Engine::pipelines)
};

// Pipelines are keyed by kernel name and specialization constants; lookups
// take views, so finding a pipeline copies nothing.
struct PipelineKey {
  std::string kernel;
  std::vector<std::uint32_t> spec;
};
struct PipelineKeyView {
  std::string_view kernel;
  std::span<const std::uint32_t> spec;
};
struct PipelineKeyLess {
  using is_transparent = void;
  static PipelineKeyView view(const PipelineKey& k) { return {k.kernel, k.spec}; }
  static PipelineKeyView view(const PipelineKeyView& v) { return v; }
  template <typename A, typename B>
  bool operator()(const A& a, const B& b) const {
    const PipelineKeyView x = view(a), y = view(b);
    if (x.kernel != y.kernel) return x.kernel < y.kernel;
    return std::lexicographical_compare(x.spec.begin(), x.spec.end(), y.spec.begin(), y.spec.end());
  }
};

constexpr std::uint32_t kQueriesPerBatch = 8192;  // timestamp queries per batch

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
  std::uint64_t value = 0;
  std::uint32_t dispatches = 0;
  VkPipeline bound = VK_NULL_HANDLE;  // the pipeline last bound in `cmd`, so that a repeat is not bound again
};

struct EngineState;

// A captured step (oa::StepGraph): reusable command buffers and the memory
// they touch, pinned until the graph is destroyed.
struct Graph {
  std::shared_ptr<EngineState> engine;
  std::uint64_t serial = 0;
  std::vector<std::unique_ptr<Batch>> batches;
  std::vector<VkCommandBuffer> cmds;
  std::vector<Chunk*> chunks;
  std::vector<std::uint64_t> last_use_before;  // chunks[i].last_use when the capture first touched it
  std::uint64_t last_replay = 0;               // timeline value of the latest replay
  std::uint32_t dispatches = 0;
  std::vector<std::function<void()>> replay_hooks;  // Engine::on_replay, in registration order
  std::vector<std::uint32_t> device_checks;          // ids registered during the capture (Engine::register_device_check)
  // Waits for the last replay, returns the command buffers to the engine and unpins the memory.
  void release();
};

struct Instance;  // runtime/vulkan/context.hpp

struct EngineState : std::enable_shared_from_this<EngineState> {
  static constexpr std::size_t kMaxBatchesInFlight = 8;
  EngineOptions options;
  DeviceInfo info;
  std::shared_ptr<const Tuning> tuning;  // replaced whole by Engine::set_tuning (under `mutex`)
  std::atomic<MatmulPrecision> float32_matmul_precision{MatmulPrecision::Highest};
  std::uint64_t min_storage_offset_alignment = 16;

  std::shared_ptr<const Instance> instance;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  vk::Handle<VkDevice> device;
  VkQueue queue = VK_NULL_HANDLE;
  std::uint32_t queue_family = 0;
  vk::Handle<VkSemaphore> timeline;
  vk::Handle<VkPipelineCache> pipeline_cache;
  // VK_KHR_push_descriptor: bindings written into the command buffer, with no
  // descriptor set to allocate and update per dispatch. Null without it.
  PFN_vkCmdPushDescriptorSetKHR push_descriptor_set = nullptr;
  std::uint32_t max_push_descriptors = 0;
  // VK_KHR_pipeline_executable_properties, where EngineOptions::pipeline_statistics
  // is in effect: pipelines are built capturing statistics, read with these.
  PFN_vkGetPipelineExecutablePropertiesKHR executable_properties = nullptr;
  PFN_vkGetPipelineExecutableStatisticsKHR executable_statistics = nullptr;
  std::string pipeline_cache_path;
  bool pipeline_cache_dirty = false;

  std::unique_ptr<Allocator> device_memory;
  std::unique_ptr<Allocator> staging_memory;  // host-visible, discrete devices only

  std::recursive_mutex mutex;
  struct Module {
    vk::Handle<VkShaderModule> module;
    ShaderInterface interface;
  };
  std::unordered_map<std::string, Module> modules;
  std::map<PipelineKey, std::unique_ptr<Pipeline>, PipelineKeyLess> pipelines;
  // Recently used pipelines by a hash of the kernel name's address and the
  // specialization: a dispatch finds its pipeline with one name comparison
  // instead of a walk down `pipelines`. Keys point into `pipelines`.
  struct PipelineSlot {
    const PipelineKey* key = nullptr;
    const Pipeline* pipeline = nullptr;
  };
  static constexpr std::size_t kPipelineSlots = 256;
  std::array<PipelineSlot, kPipelineSlots> pipeline_slots{};
  std::unique_ptr<Batch> open;
  std::deque<std::unique_ptr<Batch>> in_flight;
  std::vector<std::unique_ptr<Batch>> spare;
  std::uint64_t next_value = 1;  // value the open batch will signal
  std::uint64_t completed = 0;
  std::uint32_t early_dispatches = 1;  // batch size at which early submission hands over the batch
  // The open batch's size at which early submission next asks whether the GPU
  // has work: 0 (from early_dispatches on) until it finds two batches
  // unfinished, then twice the batch's size at that check.
  std::uint32_t early_check = 0;
  std::uint64_t hazard_epoch = 1;  // bumped by every barrier and submission
  // Per-dispatch scratch, reused so that recording allocates nothing once warm.
  std::vector<const Pipeline*> scratch_pipelines;

  // Device-side checks (Engine::register_device_check): the shared record,
  // the registered checks by id, and whether work that may have failed one
  // has been recorded since the record was last read.
  struct DeviceCheck {
    ErrorKind kind;
    std::function<std::string(std::int32_t)> describe;
    bool lasting = false;  // registered by a StepGraph capture
  };
  std::shared_ptr<Storage> check_record;  // made zeroed by eager work, before any capture uses it
  std::unordered_map<std::uint32_t, DeviceCheck> device_checks;
  std::uint32_t next_check = 1;
  bool checks_pending = false;

  Graph* capturing = nullptr;  // the step graph being captured, if any
  std::uint64_t next_graph = 1;

  EngineStats stats;
  std::vector<std::vector<SemanticOp>> traces;
  bool profiling = false;
  bool profile_kernels = false;  // a timestamp pair around each dispatch, not each op
  std::map<std::string, ProfileEntry> profile;
  std::uint64_t profile_first = UINT64_MAX, profile_last = 0;  // timestamps bounding the profiled ops

  explicit EngineState(EngineOptions opts);
  ~EngineState();

  // All below expect `mutex` held.
  Batch& batch();
  bool conflicts(const Storage& s, Access access) const;
  void mark(Batch& b, const Storage& s, Access access);
  void barrier(Batch& b);
  // Submits the open batch; past kMaxBatchesInFlight batches on the GPU, first
  // waits for the oldest (bounds how far the host runs ahead).
  void submit();
  // Called after each recorded op: submits the open batch when it is full or
  // when early submission finds the GPU short of work (EngineOptions).
  void submit_if_due();
  void wait_for(std::uint64_t value);
  // Waits until the GPU has finished every recorded use of `c` (submitting the
  // open batch if it is one of them).
  void wait_for_use(const Chunk& c);
  void retire();
  // Resets a batch the GPU has finished with and keeps it for reuse.
  void recycle(std::unique_ptr<Batch> b);
  // Closes the capture: the open command buffer joins the graph and the
  // touched chunks get back their pre-capture last_use (nothing ran).
  void end_capture();
  // Throws FailedPrecondition naming `what` while a capture is active.
  void refuse_in_capture(const char* what) const;
  const Pipeline& pipeline(std::string_view kernel, std::span<const std::uint32_t> spec, std::uint32_t bindings, std::uint32_t push_bytes);
  // Builds the pipeline of `kernel` with `spec`, checked against its SPIR-V.
  const Pipeline& create_pipeline(std::string_view kernel, std::span<const std::uint32_t> spec, std::uint32_t bindings,
                                  std::uint32_t push_bytes);
  // The driver's statistics of `pipe`'s executables (built capturing them).
  std::vector<PipelineExecutable> executable_statistics_of(VkPipeline pipe) const;
  VkDescriptorSet descriptor_set(Batch& b, const Pipeline& p);
  void save_pipeline_cache();
  // A storage from `allocator`; `idle` as in Allocator::allocate.
  std::shared_ptr<Storage> make_storage(Allocator& allocator, std::uint64_t bytes, bool idle);
  // Records a vkCmdFillBuffer of the range (ordered after earlier use).
  void fill(const Storage& dst, std::uint64_t offset, std::uint64_t bytes, std::uint32_t pattern);
  // Copies the range to the host once the GPU is done with it.
  void read(const Storage& src, std::uint64_t offset, void* dst, std::uint64_t bytes);
  // Reads the device-check record if work since its last read may have failed
  // a check, and throws that check's error (see Engine::register_device_check).
  // `everything`: the GPU has finished all recorded work (synchronize); else
  // the record is read only where that adds no wait (a host read that is not
  // a synchronization must not hold the host back until later work is done).
  void raise_failed_device_check(bool everything);
  // Makes the device-check record, zeroed (eagerly: not inside a capture).
  void make_check_record();
  // Submits the open batch and waits for all work.
  void wait_all();
};


}  // namespace oa::runtime
