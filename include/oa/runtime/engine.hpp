#pragma once
// oa::Engine: owns one Vulkan device, its memory, its queue, the compiled
// kernels and the profiler. Public headers expose no Vulkan type.
//
// Execution is lazy and batched: ops record dispatches into an open command
// buffer, with barriers derived from declared buffer access; the batch is
// submitted on a host read, on synchronize(), or once it holds
// EngineOptions::max_batch_dispatches dispatches.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "oa/core/op.hpp"
#include "oa/runtime/dispatch.hpp"
#include "oa/runtime/storage.hpp"

namespace oa {

enum class DeviceType { Discrete, Integrated, Virtual, Cpu, Other };
std::string_view to_string(DeviceType t);

// A Vulkan device and the limits oa's kernels depend on.
struct DeviceInfo {
  std::uint32_t index = 0;
  std::string name;
  DeviceType type = DeviceType::Other;
  std::string driver_name;
  std::string driver_info;
  std::string api_version;            // "1.3.230"
  std::uint32_t subgroup_size = 0;
  std::uint32_t max_shared_memory_bytes = 0;
  std::uint32_t max_workgroup_count[3] = {0, 0, 0};
  std::uint32_t max_workgroup_size[3] = {0, 0, 0};
  std::uint32_t max_workgroup_invocations = 0;
  std::uint32_t max_push_constants_bytes = 0;
  std::uint64_t max_storage_buffer_range = 0;
  std::uint64_t max_memory_allocation_bytes = 0;
  std::uint64_t device_local_bytes = 0;   // largest device-local heap
  bool timestamps = false;               // compute-queue timestamp queries
  double timestamp_period_ns = 0.0;
  bool unified_memory = false;           // device memory is host-visible (CPU and integrated devices)
};

struct EngineOptions {
  // Index or case-insensitive name substring; unset uses OA_DEVICE, then the
  // best device (discrete > integrated > virtual > CPU).
  std::optional<std::string> device;
  // Vulkan validation layers with synchronization validation; unset uses OA_VALIDATION=1.
  std::optional<bool> validation;
  // Dispatches per command buffer before the engine submits on its own.
  std::uint32_t max_batch_dispatches = 2048;
  // Caps device memory in use (bytes; 0 = the device heap). Past it allocation
  // throws ResourceExhausted.
  std::uint64_t memory_limit_bytes = 0;
  // Records GPU timestamps per semantic op from the start (see Engine::set_profiling).
  bool profiling = false;
  // Moves host data through staging buffers even where device memory is
  // host-visible: the discrete-GPU path, for testing it on any device.
  bool staging_transfers = false;
};

struct MemoryStats {
  std::uint64_t in_use_bytes = 0;    // held by live storages (rounded to size classes)
  std::uint64_t reserved_bytes = 0;  // device memory blocks held by the allocator
  std::uint64_t peak_in_use_bytes = 0;
  std::uint64_t live_storages = 0;
  std::uint64_t blocks = 0;
};

struct EngineStats {
  std::uint64_t dispatches = 0;   // vkCmdDispatch calls (after grid splitting)
  std::uint64_t barriers = 0;     // pipeline barriers derived from hazards
  std::uint64_t submits = 0;      // queue submissions
  std::uint64_t semantic_ops = 0;
  std::uint64_t pipelines = 0;    // pipelines created so far
};

// GPU time per semantic op label, from timestamp queries.
struct ProfileEntry {
  std::string op;
  std::uint64_t calls = 0;
  std::uint64_t dispatches = 0;
  double gpu_ms = 0.0;
};
struct Profile {
  std::vector<ProfileEntry> entries;  // sorted by gpu_ms, descending
  std::string to_table() const;
  std::string to_json() const;
};

namespace runtime {
struct EngineState;
}

class Engine {
 public:
  // Creates an engine on the chosen device. Throws Error(Device) when no Vulkan
  // loader or device is present, with a hint to install mesa-vulkan-drivers.
  explicit Engine(EngineOptions options = {});

  // The lazily created, process-wide default engine (thread-safe).
  static Engine default_engine();
  // Every Vulkan device the loader reports. Throws Error(Device) without a loader.
  static std::vector<DeviceInfo> devices();

  const DeviceInfo& device() const;
  const EngineOptions& options() const;
  MemoryStats memory_stats() const;
  // Restarts peak tracking at the bytes in use now.
  void reset_peak_memory() const;
  EngineStats stats() const;
  // Submits the open batch and waits for all work to finish.
  void synchronize() const;

  // Semantic ops are appended to the trace while a capture is active.
  void begin_trace() const;
  std::vector<SemanticOp> end_trace() const;
  // Profiling writes timestamps around each semantic op (when the device has
  // timestamp queries). profile() synchronizes and returns the totals so far.
  void set_profiling(bool on) const;
  Profile profile() const;
  void reset_profile() const;

  // ── For op implementations ────────────────────────────────────────────────
  // Allocates `bytes` of device storage (contents undefined). Throws
  // ResourceExhausted past the memory limit; the engine stays usable.
  std::shared_ptr<runtime::Storage> allocate(std::uint64_t bytes) const;
  // Records one semantic op lowered to `dispatches` (all or nothing: the
  // dispatches are checked before any is recorded).
  void record(SemanticOp op, std::span<const runtime::ComputeDispatch> dispatches) const;
  // Host transfers. write() orders after earlier GPU use of the range; read()
  // submits what is needed and waits.
  void write(const runtime::Storage& dst, std::uint64_t offset, const void* src, std::uint64_t bytes) const;
  void read(const runtime::Storage& src, std::uint64_t offset, void* dst, std::uint64_t bytes) const;
  // Fills a range with a 32-bit pattern on the GPU (vkCmdFillBuffer).
  void fill(const runtime::Storage& dst, std::uint64_t offset, std::uint64_t bytes, std::uint32_t pattern) const;
  // Copies between storages on the GPU.
  void copy(const runtime::Storage& src, std::uint64_t src_offset, const runtime::Storage& dst, std::uint64_t dst_offset,
            std::uint64_t bytes) const;

  bool operator==(const Engine& o) const { return state_ == o.state_; }
  const std::shared_ptr<runtime::EngineState>& state() const { return state_; }
  explicit Engine(std::shared_ptr<runtime::EngineState> state) : state_(std::move(state)) {}

 private:
  std::shared_ptr<runtime::EngineState> state_;
};

// Validation-layer messages (warnings and errors) seen in this process.
std::uint64_t validation_message_count();

// RAII trace capture: TraceCapture t(engine); ...; auto ops = t.ops();
class TraceCapture {
 public:
  explicit TraceCapture(Engine engine) : engine_(std::move(engine)) { engine_.begin_trace(); }
  ~TraceCapture() {
    if (!done_) engine_.end_trace();
  }
  std::vector<SemanticOp> ops() {
    done_ = true;
    return engine_.end_trace();
  }

 private:
  Engine engine_;
  bool done_ = false;
};

}  // namespace oa
