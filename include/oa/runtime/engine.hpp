#pragma once
// oa::Engine: owns one Vulkan device, its memory, its queue, the compiled
// kernels and the profiler. Public headers expose no Vulkan type.
//
// Execution is lazy, batched and stream-ordered: ops record dispatches into an
// open command buffer, with barriers derived from declared buffer access and
// buffers bound by push descriptors where the device has them; the
// batch is submitted on a host read, on synchronize(), as soon as it holds
// EngineOptions::max_batch_dispatches dispatches, or (if asked for) earlier
// while the GPU is short of work (EngineOptions::early_submission), so the GPU runs while the
// host records the next ops. Up to 8 batches are in flight; past that the host
// waits for the oldest (command buffers are recycled through the timeline
// semaphore).
//
// Memory is stream-ordered, as PyTorch's caching allocator on one stream: a
// storage whose last reference is gone is reusable at once by work recorded
// later, and the engine puts the write-after-read / write-after-write barrier
// between the old use and the new one. Host writes and reads wait for the GPU
// only where it still uses that memory. A loop of identical steps without a
// host read therefore holds about one step's memory.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "oa/core/dtype.hpp"
#include "oa/core/op.hpp"
#include "oa/runtime/dispatch.hpp"
#include "oa/runtime/storage.hpp"

namespace oa {

enum class DeviceType { Discrete, Integrated, Virtual, Cpu, Other };
std::string_view to_string(DeviceType t);

// One subgroup-scope multiply-add D = A * B + C that the device's tensor cores
// run on M x K and K x N operand tiles (VK_KHR_cooperative_matrix; only
// configurations of F16, BF16 and F32 components are listed).
struct CooperativeMatrixShape {
  DType a = DType::F16, b = DType::F16, c = DType::F32, result = DType::F32;
  std::uint32_t m = 0, n = 0, k = 0;
  bool operator==(const CooperativeMatrixShape&) const = default;
};

// One workgroup-scope multiply-add configuration of VK_NV_cooperative_matrix2:
// D = A * B + C on matrices of any size that is a multiple of the
// granularities (M x K, K x N), spread over a workgroup of `invocations`.
struct WorkgroupCooperativeMatrix {
  DType a = DType::F16, b = DType::F16, c = DType::F32, result = DType::F32;
  std::uint32_t m_granularity = 0, n_granularity = 0, k_granularity = 0;
  std::uint32_t invocations = 0;
  bool operator==(const WorkgroupCooperativeMatrix&) const = default;
};

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
  // VK_KHR_push_descriptor: dispatches bind buffers without descriptor sets
  // (an engine's device() reports whether it uses them).
  bool push_descriptors = false;
  // The cooperative-matrix configurations of the device (empty without
  // VK_KHR_cooperative_matrix, on devices below Vulkan 1.3, or where its
  // feature, shaderFloat16, vulkanMemoryModel or maintenance4 is missing;
  // BF16 ones need VK_KHR_shader_bfloat16's type and cooperative-matrix
  // features); an engine enables the extensions and features when it lists any.
  std::vector<CooperativeMatrixShape> cooperative_matrix;
  bool has_cooperative_matrix(const CooperativeMatrixShape& s) const;
  // VK_NV_cooperative_matrix2's workgroup-scope configurations of F16
  // operands with F32 or F16 accumulators
  // (empty without cooperative_matrix, the extension, or one of the features
  // its kernels use: workgroup scope, flexible dimensions, reductions,
  // conversions, per-element operations, tensor addressing), and the largest
  // matrix dimension they allow; an engine enables them when it lists any.
  std::vector<WorkgroupCooperativeMatrix> workgroup_cooperative_matrix;
  std::uint32_t workgroup_cooperative_matrix_max_dimension = 0;
  // Whether a listed configuration of these types and `invocations` has
  // granularities that divide M, N and K (all at most the maximum dimension).
  bool has_workgroup_cooperative_matrix(DType ab, DType accumulator, std::uint32_t m, std::uint32_t n, std::uint32_t k,
                                        std::uint32_t invocations) const;
};

struct EngineOptions {
  // Index or case-insensitive name substring; unset uses OA_DEVICE, then the
  // best device (discrete > integrated > virtual > CPU).
  std::optional<std::string> device;
  // Without `device` and OA_DEVICE: picks the local_rank-th (modulo their
  // count) of the devices of the preferred type, so that each process of a
  // job on one machine gets a GPU of its own (oa::dist sets it).
  std::uint32_t local_rank = 0;
  // Vulkan validation layers with synchronization validation; unset uses OA_VALIDATION=1.
  std::optional<bool> validation;
  // Dispatches per command buffer before the engine submits it on its own;
  // 0 uses OA_BATCH_DISPATCHES, then 64. Smaller starts the GPU sooner and
  // overlaps more; larger pays fewer vkQueueSubmit calls (tens of µs each on
  // a discrete GPU; recording one dispatch costs below 1 µs on lavapipe with
  // push descriptors). With 64 the GPU waits at most 64 dispatches for its
  // first work.
  // options() reports the value in effect.
  std::uint32_t max_batch_dispatches = 0;
  // Submits the open batch before it is full while the GPU is short of work:
  // once at most one submitted batch is unfinished and the batch holds at
  // least a threshold of dispatches (asked when the batch reaches the
  // threshold, then each time it doubles while two batches are unfinished,
  // and after any batch finishes). The threshold starts at 1 (the first op
  // after the GPU went idle runs at once) and doubles, up to
  // max_batch_dispatches, each time the GPU is found idle at such a
  // submission, so a loop the host cannot keep up with returns to full
  // batches; a wait for all the work resets it. Unset uses OA_EARLY_SUBMISSION
  // (0 or 1), then off: on an H100 it was no faster over 78 bench cases and
  // oa train text, and slower where a step is a few tiny dispatches (each step
  // then pays a submission); on lavapipe too (docs/performance.md).
  // options() reports the value in effect.
  std::optional<bool> early_submission;
  // Caps device memory reserved from the driver (bytes; 0 = the device heap),
  // including limits below the allocator's 64 MiB block (smaller blocks then).
  // Past it allocation throws ResourceExhausted naming the request.
  std::uint64_t memory_limit_bytes = 0;
  // Records GPU timestamps per semantic op from the start (see Engine::set_profiling).
  bool profiling = false;
  // Moves host data through staging buffers even where device memory is
  // host-visible: the discrete-GPU path, for testing it on any device.
  bool staging_transfers = false;
  // Binds buffers through descriptor sets even where the device has push
  // descriptors (VK_KHR_push_descriptor): the fallback path, for testing it.
  bool descriptor_sets = false;
  // Has the driver capture each pipeline's statistics as it compiles it
  // (VK_KHR_pipeline_executable_properties; NVIDIA's include "Register
  // Count"), for Engine::pipelines(). Unset uses OA_PIPELINE_STATS (0 or 1),
  // then off. options() reports whether they are captured: false where the
  // device lacks the extension.
  std::optional<bool> pipeline_statistics;
};

// Device memory of the engine's allocator (torch.cuda.memory_stats' terms).
struct MemoryStats {
  std::uint64_t in_use_bytes = 0;    // held by live storages (rounded to size classes)
  std::uint64_t reserved_bytes = 0;  // device memory blocks held by the allocator
  std::uint64_t peak_in_use_bytes = 0;    // since the engine started or reset_peak_memory()
  std::uint64_t peak_reserved_bytes = 0;  // likewise
  std::uint64_t live_storages = 0;
  std::uint64_t blocks = 0;
  std::uint64_t driver_allocations = 0;  // vkAllocateMemory calls so far (a warm loop makes none)
};

struct EngineStats {
  std::uint64_t dispatches = 0;   // vkCmdDispatch calls (after grid splitting)
  std::uint64_t barriers = 0;     // pipeline barriers derived from hazards
  std::uint64_t submits = 0;      // queue submissions
  std::uint64_t host_waits = 0;   // times the host blocked until the GPU finished work
  std::uint64_t semantic_ops = 0;
  std::uint64_t pipelines = 0;    // pipelines created so far
};

// One statistic of a compiled pipeline executable, as its driver names it
// (VkPipelineExecutableStatisticKHR); booleans and integers as numbers.
struct PipelineStatistic {
  std::string name;
  std::string description;
  double value = 0.0;
};
// One executable of a pipeline (a compute pipeline has one on most drivers).
struct PipelineExecutable {
  std::string name;
  std::string description;
  std::uint32_t subgroup_size = 0;
  std::vector<PipelineStatistic> statistics;
};
// A pipeline the engine built: its kernel and specialization constants, the
// dispatches recorded with it so far and, where EngineOptions::pipeline_statistics
// is in effect, its executables' statistics (otherwise none).
struct PipelineInfo {
  std::string kernel;
  std::vector<std::uint32_t> specialization;
  std::uint64_t dispatches = 0;
  std::vector<PipelineExecutable> executables;
};

// How f32 matrix products run (torch.set_float32_matmul_precision's levels
// that oa implements; see Engine::set_float32_matmul_precision).
enum class MatmulPrecision { Highest, High };
std::string_view to_string(MatmulPrecision p);  // "highest", "high" (torch's names)

// What a profile entry covers: a semantic op (all its dispatches), or one
// kernel of an op (Engine::set_profiling).
enum class ProfileDetail { Ops, Kernels };

// GPU time per semantic op label (or op and kernel), from timestamp queries.
struct ProfileEntry {
  std::string op;
  std::uint64_t calls = 0;
  std::uint64_t dispatches = 0;
  double gpu_ms = 0.0;
};
struct Profile {
  std::vector<ProfileEntry> entries;  // sorted by gpu_ms, descending
  // GPU time from the start of the first profiled op to the end of the last,
  // the gaps between ops included (what CUDA events around the same work
  // measure); 0 with no profiled op.
  double span_ms = 0.0;
  // Op, calls, dispatches, GPU ms and share of the total; for a profile of
  // `steps` > 1 identical steps, calls, dispatches and ms per step.
  std::string to_table(std::uint64_t steps = 1) const;
  std::string to_json() const;
};

namespace runtime {
struct EngineState;
}

// A host read started by Engine::read_async: a snapshot of the range, copied on
// the GPU into host-visible memory by work submitted at once, so the host
// goes on recording while the copy runs. Dropping it unread is fine.
class PendingRead {
 public:
  PendingRead() = default;
  std::uint64_t bytes() const { return bytes_; }
  // True once the GPU has finished the copy (never waits).
  bool ready() const;
  // Waits for the copy (submitting first whatever of it is still recorded) and
  // copies bytes() into `dst`. Throws FailedPrecondition for an empty
  // PendingRead and inside a StepGraph capture.
  void get(void* dst) const;

 private:
  friend class Engine;
  std::shared_ptr<runtime::EngineState> state_;
  std::shared_ptr<runtime::Storage> snapshot_;
  std::uint64_t bytes_ = 0;
};

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
  // Restarts peak tracking (in use and reserved) at the bytes held now.
  void reset_peak_memory() const;
  // Waits for the GPU, then returns every block without a live storage to the
  // driver (torch.cuda.empty_cache). Storages stay valid. Without this call
  // free blocks are kept for reuse, and released on their own when a new block
  // would pass the memory limit or the driver refuses an allocation.
  void empty_cache() const;
  EngineStats stats() const;
  // Every pipeline built so far, by kernel name and specialization.
  std::vector<PipelineInfo> pipelines() const;
  // Submits the open batch and waits for all work to finish.
  void synchronize() const;

  // How the f32 GEMMs recorded from now on run (torch.set_float32_matmul_precision):
  //  Highest (the default): the FP32 kernels (f32 loads, multiply-adds and accumulators).
  //  High: each f32 GEMM with K > 0 (matmul and its _nt/_tn forms, the bmm
  //    family, linear, the convolutions and attention that lower to the shared
  //    GEMM, and their gradients) runs as three F16 products on the tensor
  //    cores where the device has cooperative matrices for f16 * f16 + f32
  //    (16 x 16 x 16): per row of A and column of B a power-of-two scale s puts
  //    the largest finite magnitude in [2^14, 2^15); x * s = hi + lo * 2^-11 with
  //    hi = f16(x * s), lo = f16((x * s - hi) * 2^11), and
  //    C = (A_hi B_hi + (A_hi B_lo + A_lo B_hi) 2^-11) / (s_a s_b) with f32
  //    accumulation, then alpha, beta and the bias as in FP32. Each operand
  //    keeps about 22 significant bits (FP32: 24); an element below about
  //    2^-28 times its row's (column's) largest keeps an absolute error near
  //    2^-49 times that largest instead, so the error stays near FP32's
  //    relative to the product of the row's and column's largest magnitudes
  //    (not to the terms': [[1e6, 1e-6]] x [[0], [1e6]] gives about 1.0003). A row or column
  //    holding inf or NaN gives its outputs by an FP32 dot product, so inf and
  //    NaN propagate as in FP32. Devices without such cooperative matrices keep
  //    the FP32 kernels (tuning point gemm.f32_high; tests force the split
  //    there). Source: Ootomo & Yokota, "Recovering single precision accuracy
  //    from Tensor Cores while surpassing the FP32 theoretical peak
  //    performance", IJHPCA 2022 (without its accumulation outside the tensor
  //    cores: the products accumulate in the tensor-core kernel's f32
  //    accumulators).
  // 16-bit GEMMs are not affected. A StepGraph keeps the lowering it captured.
  void set_float32_matmul_precision(MatmulPrecision precision) const;
  MatmulPrecision float32_matmul_precision() const;

  // Semantic ops are appended to the trace while a capture is active.
  void begin_trace() const;
  std::vector<SemanticOp> end_trace() const;
  // Profiling writes timestamps around each semantic op (when the device has
  // timestamp queries), or with ProfileDetail::Kernels around each of an op's
  // dispatches, one entry per op and kernel ("<op> [<kernel>]"), as a kernel
  // view of torch.profiler does. profile() synchronizes and returns the totals
  // so far.
  void set_profiling(bool on, ProfileDetail detail = ProfileDetail::Ops) const;
  Profile profile() const;
  void reset_profile() const;

  // ── For op implementations ────────────────────────────────────────────────
  // Allocates `bytes` of device storage (contents undefined). Past the memory
  // limit, frees empty blocks, then waits for the GPU and frees again before it
  // throws ResourceExhausted; the engine stays usable.
  std::shared_ptr<runtime::Storage> allocate(std::uint64_t bytes) const;
  // Records one semantic op lowered to `dispatches` (all or nothing: the
  // dispatches are checked before any is recorded).
  void record(SemanticOp op, std::span<const runtime::ComputeDispatch> dispatches) const;
  // Host transfers. write() orders after earlier GPU use of the range; read()
  // submits what is needed and waits.
  void write(const runtime::Storage& dst, std::uint64_t offset, const void* src, std::uint64_t bytes) const;
  void read(const runtime::Storage& src, std::uint64_t offset, void* dst, std::uint64_t bytes) const;
  // Starts a read of the range as it stands after the work recorded so far
  // (later writes to it are not seen) and submits that work; see PendingRead.
  // Throws FailedPrecondition inside a StepGraph capture.
  PendingRead read_async(const runtime::Storage& src, std::uint64_t offset, std::uint64_t bytes) const;
  // Fills a range with a 32-bit pattern on the GPU (vkCmdFillBuffer).
  void fill(const runtime::Storage& dst, std::uint64_t offset, std::uint64_t bytes, std::uint32_t pattern) const;
  // Copies between storages on the GPU.
  void copy(const runtime::Storage& src, std::uint64_t src_offset, const runtime::Storage& dst, std::uint64_t dst_offset,
            std::uint64_t bytes) const;
  // Device-side checks of values that only the GPU reads (an index tensor's
  // indices), reported without a host round trip at the op, as CUDA's
  // device-side asserts are. register_device_check returns the id of a check
  // (never 0); a checking kernel binds device_check_record() (ReadWrite, two
  // u32 words) and, where the check fails, moves word 0 from 0 to its id
  // (atomicCompSwap: the first failure stays) and stores the offending value
  // in word 1. After the GPU has run it, the next synchronize() on this
  // engine, or a read() that can look without waiting longer (the check's
  // work is done, and on a discrete GPU no other work is open), reads the
  // record and throws Error(kind, describe(value)) once for a failed check,
  // after which the record is clear again. PendingRead::get() does not report
  // (it serves the engine's own reads, such as oa::dist's buckets). An id registered during a
  // StepGraph capture lasts as long as the graph (each replay checks again).
  // The record is made (zeroed) on first use or before a StepGraph's capture,
  // and held by the engine. synchronize() reports; empty_cache() and profile()
  // wait without reporting.
  std::uint32_t register_device_check(ErrorKind kind, std::function<std::string(std::int32_t value)> describe) const;
  std::shared_ptr<runtime::Storage> device_check_record() const;
  // True while a StepGraph captures a step on this engine.
  bool capturing() const;
  // During a capture: `hook` runs on the host before each replay of the graph
  // is submitted, outside the capture (so it may write()). Ops whose per-step
  // constants live in device memory (AdamW's learning rate and bias
  // corrections) advance them there. Throws FailedPrecondition outside a capture.
  void on_replay(std::function<void()> hook) const;

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
