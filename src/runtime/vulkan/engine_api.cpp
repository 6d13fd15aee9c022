// oa::Engine's public methods over EngineState.
#include <algorithm>
#include <cstring>
#include <mutex>

#include "oa/runtime/tuning.hpp"
#include "runtime/vulkan/context.hpp"

namespace oa {

using runtime::Access;
using runtime::Batch;
using runtime::EngineState;
using runtime::Storage;

std::string_view to_string(DeviceType t) {
  switch (t) {
    case DeviceType::Discrete: return "discrete GPU";
    case DeviceType::Integrated: return "integrated GPU";
    case DeviceType::Virtual: return "virtual GPU";
    case DeviceType::Cpu: return "CPU";
    default: return "other";
  }
}

std::string_view to_string(MatmulPrecision p) { return p == MatmulPrecision::High ? "high" : "highest"; }

bool DeviceInfo::has_cooperative_matrix(const CooperativeMatrixShape& s) const {
  return std::find(cooperative_matrix.begin(), cooperative_matrix.end(), s) != cooperative_matrix.end();
}

bool DeviceInfo::has_workgroup_cooperative_matrix(DType ab, DType accumulator, std::uint32_t m, std::uint32_t n, std::uint32_t k,
                                                  std::uint32_t invocations) const {
  const std::uint32_t most = workgroup_cooperative_matrix_max_dimension;
  if (m == 0 || n == 0 || k == 0 || m > most || n > most || k > most) return false;
  return std::any_of(workgroup_cooperative_matrix.begin(), workgroup_cooperative_matrix.end(), [&](const WorkgroupCooperativeMatrix& w) {
    return w.a == ab && w.b == ab && w.c == accumulator && w.result == accumulator && w.invocations == invocations &&
           m % w.m_granularity == 0 && n % w.n_granularity == 0 && k % w.k_granularity == 0;
  });
}

std::uint64_t validation_message_count() { return runtime::validation_messages(); }

Engine::Engine(EngineOptions options) : state_(runtime::make_engine_state(std::move(options))) {}

Engine Engine::default_engine() {
  // Initialised on first use (thread-safe). Its destructor is registered after
  // the driver's exit handlers, so it runs before the driver tears down.
  static const std::shared_ptr<EngineState> state = runtime::make_engine_state(EngineOptions{});
  return Engine(state);
}

std::vector<DeviceInfo> Engine::devices() {
  // The instance engines made with default options use (OA_VALIDATION), so that
  // listing devices does not create a second one.
  const auto inst = runtime::shared_instance(runtime::validation_requested(EngineOptions{}));
  std::vector<DeviceInfo> out;
  auto pds = runtime::physical_devices(inst->instance);
  for (std::uint32_t i = 0; i < pds.size(); ++i) out.push_back(runtime::describe(*inst, pds[i], i));
  return out;
}

const DeviceInfo& Engine::device() const { return state_->info; }
const EngineOptions& Engine::options() const { return state_->options; }

std::shared_ptr<const Tuning> tuning_of(const Engine& engine) {
  std::lock_guard lock(engine.state()->mutex);
  return engine.state()->tuning;
}

void set_tuning(const Engine& engine, Tuning tuning) {
  auto next = std::make_shared<const Tuning>(std::move(tuning));
  std::lock_guard lock(engine.state()->mutex);
  engine.state()->tuning = std::move(next);
}

MemoryStats Engine::memory_stats() const {
  std::lock_guard lock(state_->mutex);
  return state_->device_memory->stats();
}

void Engine::reset_peak_memory() const {
  std::lock_guard lock(state_->mutex);
  state_->device_memory->reset_peak();
}

namespace {

// Waits for all recorded work, as synchronize() does, without reporting
// device checks (for the engine's own waits: empty_cache, profile).
void wait_all_unchecked(runtime::EngineState& s) {
  std::lock_guard lock(s.mutex);
  s.refuse_in_capture("Engine::synchronize");
  s.wait_all();
}

// Refuses a storage that another engine allocated: its buffer belongs to
// another device, and its pending work to another queue.
void require_own(const runtime::EngineState& s, const Storage& storage, const char* op) {
  if (!storage.belongs_to(s))
    fail(ErrorKind::InvalidArgument, "{}: the storage lives on another engine than this one ({})", op, s.info.name);
}

}  // namespace

void Engine::empty_cache() const {
  runtime::require_unforked("oa::Engine::empty_cache");
  auto& s = *state_;
  std::lock_guard lock(s.mutex);
  wait_all_unchecked(*state_);
  s.device_memory->trim(s.completed);
  if (s.staging_memory) s.staging_memory->trim(s.completed);
}

EngineStats Engine::stats() const {
  std::lock_guard lock(state_->mutex);
  return state_->stats;
}

std::vector<PipelineInfo> Engine::pipelines() const {
  std::lock_guard lock(state_->mutex);
  std::vector<PipelineInfo> out;
  for (const auto& [key, p] : state_->pipelines) out.push_back({key.kernel, key.spec, p->dispatches, p->executables});
  return out;
}

void Engine::synchronize() const {
  runtime::require_unforked("oa::Engine::synchronize");
  auto& s = *state_;
  std::lock_guard lock(s.mutex);
  s.refuse_in_capture("Engine::synchronize");
  s.wait_all();
  s.raise_failed_device_check(true);
}

void Engine::begin_trace() const {
  std::lock_guard lock(state_->mutex);
  state_->traces.emplace_back();
}

std::vector<SemanticOp> Engine::end_trace() const {
  std::lock_guard lock(state_->mutex);
  if (state_->traces.empty()) fail(ErrorKind::FailedPrecondition, "Engine::end_trace: no trace is active");
  auto ops = std::move(state_->traces.back());
  state_->traces.pop_back();
  return ops;
}

void Engine::set_profiling(bool on, ProfileDetail detail) const {
  std::lock_guard lock(state_->mutex);
  state_->profiling = on && state_->info.timestamps;
  state_->profile_kernels = detail == ProfileDetail::Kernels;
}

void Engine::set_float32_matmul_precision(MatmulPrecision precision) const { state_->float32_matmul_precision = precision; }
MatmulPrecision Engine::float32_matmul_precision() const { return state_->float32_matmul_precision; }

Profile Engine::profile() const {
  wait_all_unchecked(*state_);
  std::lock_guard lock(state_->mutex);
  Profile p;
  for (auto& [_, e] : state_->profile) p.entries.push_back(e);
  const auto& s = *state_;
  if (s.profile_last > s.profile_first)
    p.span_ms = static_cast<double>(s.profile_last - s.profile_first) * s.info.timestamp_period_ns * 1e-6;
  std::sort(p.entries.begin(), p.entries.end(), [](auto& a, auto& b) { return a.gpu_ms > b.gpu_ms; });
  return p;
}

void Engine::reset_profile() const {
  wait_all_unchecked(*state_);
  std::lock_guard lock(state_->mutex);
  state_->profile.clear();
  state_->profile_first = UINT64_MAX;
  state_->profile_last = 0;
}

std::shared_ptr<Storage> Engine::allocate(std::uint64_t bytes) const {
  runtime::require_unforked("oa::Engine::allocate");
  auto& s = *state_;
  std::lock_guard lock(s.mutex);
  try {
    return s.make_storage(*s.device_memory, bytes, false);
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::ResourceExhausted || s.capturing) throw;
    // Empty blocks that the GPU still uses may be all that is missing.
    s.wait_all();
    return s.make_storage(*s.device_memory, bytes, false);
  }
}

namespace {

void check_binding(const EngineState& s, const runtime::ComputeDispatch& d, std::size_t i, const SemanticOp& op) {
  const auto& b = d.bindings[i];
  if (!b.storage) fail(ErrorKind::Internal, "{}: kernel {} binding {} has no storage", op.name, d.kernel, i);
  const std::uint64_t size = b.size_bytes ? b.size_bytes : b.storage->bytes() - std::min(b.offset_bytes, b.storage->bytes());
  if (b.offset_bytes + size > b.storage->bytes() || size == 0)
    fail(ErrorKind::Internal, "{}: kernel {} binding {} range [{}, +{}) is outside its storage of {} bytes", op.name, d.kernel,
         i, b.offset_bytes, size, b.storage->bytes());
  if (b.offset_bytes % s.min_storage_offset_alignment)
    fail(ErrorKind::Internal, "{}: kernel {} binding {} offset {} is not a multiple of {}", op.name, d.kernel, i,
         b.offset_bytes, s.min_storage_offset_alignment);
  if (size > s.info.max_storage_buffer_range)
    fail(ErrorKind::ResourceExhausted,
         "{}: a {}-byte operand exceeds this device's maxStorageBufferRange ({} bytes); inputs {}", op.name, size,
         s.info.max_storage_buffer_range, [&] {
           std::string t;
           for (auto& sh : op.inputs) t += sh.to_string() + " ";
           return t;
         }());
}

}  // namespace

void Engine::record(SemanticOp op, std::span<const runtime::ComputeDispatch> dispatches) const {
  runtime::require_unforked("oa::Engine::record");
  auto& s = *state_;
  check_against_contract(op);
  for (const auto& d : dispatches) {
    for (std::size_t i = 0; i < d.bindings.size(); ++i) check_binding(s, d, i, op);
    for (auto g : d.groups)
      if (g > UINT32_MAX) fail(ErrorKind::InvalidArgument, "{}: a grid of {} workgroups in one dimension is too large", op.name, g);
  }
  std::lock_guard lock(s.mutex);
  // Resolve (or build) every pipeline before recording anything.
  s.scratch_pipelines.clear();
  for (const auto& d : dispatches)
    s.scratch_pipelines.push_back(&s.pipeline(d.kernel, d.specialization, static_cast<std::uint32_t>(d.bindings.size()),
                                              static_cast<std::uint32_t>(runtime::kPushHeaderBytes + d.push.size())));

  // Timestamp pairs around the op, or (profile_kernels) around each dispatch;
  // an open batch without room for them is submitted first.
  const bool per_kernel = s.profile_kernels;
  const std::size_t queries = 2 * (per_kernel ? dispatches.size() : 1);
  const bool timing = s.profiling && !s.capturing;
  if (timing && s.batch().queries_used > 0 && s.batch().queries_used + queries > runtime::kQueriesPerBatch) s.submit();
  Batch& b = s.batch();
  const bool stamp = timing && b.queries && queries <= runtime::kQueriesPerBatch;
  std::uint32_t first_query = 0;
  const auto open_range = [&] {
    first_query = b.queries_used;
    b.queries_used += 2;
    vkCmdWriteTimestamp(b.cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, b.queries, first_query);
  };
  const auto close_range = [&](std::string label, std::uint32_t count) {
    vkCmdWriteTimestamp(b.cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, b.queries, first_query + 1);
    b.timed.push_back({std::move(label), first_query, count});
  };
  if (stamp && !per_kernel) open_range();
  std::uint32_t count = 0;
  for (std::size_t di = 0; di < dispatches.size(); ++di) {
    const auto& d = dispatches[di];
    if (d.groups[0] == 0 || d.groups[1] == 0 || d.groups[2] == 0) continue;
    const auto& p = *s.scratch_pipelines[di];
    p.dispatches++;
    bool hazard = false;
    for (auto& bind : d.bindings) hazard = hazard || s.conflicts(*bind.storage, bind.access);
    if (hazard) s.barrier(b);
    for (auto& bind : d.bindings) {
      s.mark(b, *bind.storage, bind.access);
      // Checking work recorded eagerly: the record is to be read (see Engine::register_device_check).
      if (bind.storage == s.check_record && !s.capturing) s.checks_pending = true;
    }

    // One write covers bindings 0..n-1 (consecutive bindings of one type).
    VkDescriptorBufferInfo infos[runtime::ComputeDispatch::kMaxBindings];
    for (std::size_t i = 0; i < d.bindings.size(); ++i) {
      const auto& bind = d.bindings[i];
      const auto* chunk = bind.storage->chunk();
      infos[i] = {chunk->block->buffer, chunk->offset + bind.offset_bytes,
                  bind.size_bytes ? bind.size_bytes : bind.storage->bytes() - bind.offset_bytes};
    }
    VkWriteDescriptorSet w{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET};
    w.dstBinding = 0;
    w.descriptorCount = static_cast<std::uint32_t>(d.bindings.size());
    w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
    w.pBufferInfo = infos;
    if (b.bound != p.pipeline) {
      vkCmdBindPipeline(b.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.pipeline);
      b.bound = p.pipeline;
    }
    if (p.push_descriptors) {
      if (w.descriptorCount) s.push_descriptor_set(b.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &w);
    } else {
      VkDescriptorSet set = s.descriptor_set(b, p);
      w.dstSet = set;
      if (w.descriptorCount) vkUpdateDescriptorSets(s.device, 1, &w, 0, nullptr);
      vkCmdBindDescriptorSets(b.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p.layout, 0, 1, &set, 0, nullptr);
    }

    // Push block: uvec4 base, uvec4 grid, then the op's bytes (zero padded).
    std::uint8_t push[runtime::kPushBytes] = {};
    std::uint32_t grid[4] = {static_cast<std::uint32_t>(d.groups[0]), static_cast<std::uint32_t>(d.groups[1]),
                             static_cast<std::uint32_t>(d.groups[2]), 0};
    std::memcpy(push + 16, grid, 16);
    if (!d.push.bytes().empty()) std::memcpy(push + runtime::kPushHeaderBytes, d.push.bytes().data(), d.push.bytes().size());
    if (stamp && per_kernel) open_range();
    const std::uint32_t before = count;
    // Split the grid where it exceeds maxComputeWorkGroupCount; shaders add the base.
    const std::uint64_t lim[3] = {s.info.max_workgroup_count[0], s.info.max_workgroup_count[1], s.info.max_workgroup_count[2]};
    if (!p.push_bytes && (d.groups[0] > lim[0] || d.groups[1] > lim[1] || d.groups[2] > lim[2]))
      fail(ErrorKind::Internal, "{}: kernel {} reads no grid header, so its grid cannot be split", op.name, d.kernel);
    for (std::uint64_t z = 0; z < d.groups[2]; z += lim[2])
      for (std::uint64_t y = 0; y < d.groups[1]; y += lim[1])
        for (std::uint64_t x = 0; x < d.groups[0]; x += lim[0]) {
          std::uint32_t base[4] = {static_cast<std::uint32_t>(x), static_cast<std::uint32_t>(y), static_cast<std::uint32_t>(z), 0};
          std::memcpy(push, base, 16);
          if (p.push_bytes) vkCmdPushConstants(b.cmd, p.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, p.push_bytes, push);
          vkCmdDispatch(b.cmd, static_cast<std::uint32_t>(std::min(lim[0], d.groups[0] - x)),
                        static_cast<std::uint32_t>(std::min(lim[1], d.groups[1] - y)),
                        static_cast<std::uint32_t>(std::min(lim[2], d.groups[2] - z)));
          s.stats.dispatches++;
          b.dispatches++;
          count++;
        }
    if (stamp && per_kernel) close_range(fmt::format("{} [{}]", op.label(), d.kernel), count - before);
  }
  if (stamp && !per_kernel) close_range(op.label(), count);
  op.dispatches = count;
  s.stats.semantic_ops++;
  for (auto& t : s.traces) t.push_back(op);
  s.submit_if_due();
}

void Engine::write(const Storage& dst, std::uint64_t offset, const void* src, std::uint64_t bytes) const {
  runtime::require_unforked("oa::Engine::write");
  require_own(*state_, dst, "Engine::write");
  if (bytes == 0) return;
  if (offset + bytes > dst.bytes()) fail(ErrorKind::Internal, "Engine::write: range outside the storage");
  auto& s = *state_;
  std::lock_guard lock(s.mutex);
  s.refuse_in_capture("Engine::write (a host write)");
  s.retire();
  std::shared_ptr<Storage> staging;
  if (s.staging_memory) {
    staging = s.make_storage(*s.staging_memory, bytes, true);
  } else if (dst.chunk()->last_use > s.completed) {
    // Recorded work still uses `dst`: go through memory the GPU is done with
    // and copy in stream order, or, when memory is short, wait for that work.
    try {
      staging = s.make_storage(*s.device_memory, bytes, true);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::ResourceExhausted) throw;
      s.wait_for_use(*dst.chunk());
    }
  }
  if (!staging) {  // mapped memory the GPU no longer uses: write in place
    std::memcpy(static_cast<char*>(dst.chunk()->block->mapped) + dst.chunk()->offset + offset, src, bytes);
    return;
  }
  std::memcpy(static_cast<char*>(staging->chunk()->block->mapped) + staging->chunk()->offset, src, bytes);
  Batch& b = s.batch();
  if (s.conflicts(dst, Access::Write) || s.conflicts(*staging, Access::Read)) s.barrier(b);
  s.mark(b, dst, Access::Write);
  s.mark(b, *staging, Access::Read);
  VkBufferCopy region{staging->chunk()->offset, dst.chunk()->offset + offset, bytes};
  vkCmdCopyBuffer(b.cmd, staging->chunk()->block->buffer, dst.chunk()->block->buffer, 1, &region);
}

namespace {

// Records a copy of the range into fresh host-visible memory (staging memory
// on a discrete device), with the barrier that makes it visible to host reads.
std::shared_ptr<Storage> record_host_copy(EngineState& s, const Storage& src, std::uint64_t offset, std::uint64_t bytes) {
  s.retire();
  auto staging = s.make_storage(s.staging_memory ? *s.staging_memory : *s.device_memory, bytes, true);
  Batch& b = s.batch();
  if (s.conflicts(src, Access::Read) || s.conflicts(*staging, Access::Write)) s.barrier(b);
  s.mark(b, src, Access::Read);
  s.mark(b, *staging, Access::Write);
  VkBufferCopy region{src.chunk()->offset + offset, staging->chunk()->offset, bytes};
  vkCmdCopyBuffer(b.cmd, src.chunk()->block->buffer, staging->chunk()->block->buffer, 1, &region);
  VkMemoryBarrier mb{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
  mb.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  mb.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(b.cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
  return staging;
}

const char* mapped(const Storage& s) { return static_cast<const char*>(s.chunk()->block->mapped) + s.chunk()->offset; }

}  // namespace

namespace runtime {

void EngineState::read(const Storage& src, std::uint64_t offset, void* dst, std::uint64_t bytes) {
  if (info.unified_memory) {
    wait_for_use(*src.chunk());
    std::memcpy(dst, mapped(src) + offset, bytes);
    return;
  }
  auto staging = record_host_copy(*this, src, offset, bytes);
  wait_for_use(*staging->chunk());
  std::memcpy(dst, mapped(*staging), bytes);
}

void EngineState::fill(const Storage& dst, std::uint64_t offset, std::uint64_t bytes, std::uint32_t pattern) {
  Batch& b = batch();
  if (conflicts(dst, Access::Write)) barrier(b);
  mark(b, dst, Access::Write);
  vkCmdFillBuffer(b.cmd, dst.chunk()->block->buffer, dst.chunk()->offset + offset, bytes, pattern);
}

void EngineState::raise_failed_device_check(bool everything) {
  if (!checks_pending || !check_record) return;
  if (!everything) {
    retire();
    // Unified memory: read in place once the checks' work is done. Else the
    // record's copy would wait for all work recorded so far: only when none is open.
    if (check_record->chunk()->last_use > completed || (!info.unified_memory && open)) return;
  }
  checks_pending = false;
  std::array<std::uint32_t, 2> record{};
  read(*check_record, 0, record.data(), sizeof record);
  const auto failed = record[0] != 0 ? device_checks.find(record[0]) : device_checks.end();
  // The eager checks recorded so far have all run: only the lasting ones stay.
  std::erase_if(device_checks, [&](const auto& c) { return !c.second.lasting && c.first != record[0]; });
  if (record[0] == 0) return;
  fill(*check_record, 0, sizeof record, 0);
  // A check registered by one thread and erased by another thread's read
  // before its dispatch was recorded has lost its words, not its failure.
  if (failed == device_checks.end())
    throw Error(ErrorKind::OutOfRange, fmt::format("an index {} was out of range in an op recorded since the last synchronization",
                                                   static_cast<std::int32_t>(record[1])));
  const DeviceCheck check = failed->second;
  if (!check.lasting) device_checks.erase(failed);
  throw Error(check.kind, check.describe(static_cast<std::int32_t>(record[1])));
}

void EngineState::wait_all() {
  if (open) submit();
  wait_for(next_value - 1);
}

void EngineState::make_check_record() {
  if (check_record) return;
  check_record = make_storage(*device_memory, 8, false);
  fill(*check_record, 0, 8, 0);
}

}  // namespace runtime

void Engine::read(const Storage& src, std::uint64_t offset, void* dst, std::uint64_t bytes) const {
  runtime::require_unforked("oa::Engine::read");
  require_own(*state_, src, "Engine::read");
  if (bytes == 0) return;
  if (offset + bytes > src.bytes()) fail(ErrorKind::Internal, "Engine::read: range outside the storage");
  auto& s = *state_;
  std::lock_guard lock(s.mutex);
  s.refuse_in_capture("Engine::read (a host read)");
  s.read(src, offset, dst, bytes);
  s.raise_failed_device_check(false);
}

PendingRead Engine::read_async(const Storage& src, std::uint64_t offset, std::uint64_t bytes) const {
  runtime::require_unforked("oa::Engine::read_async");
  require_own(*state_, src, "Engine::read_async");
  if (offset + bytes > src.bytes()) fail(ErrorKind::Internal, "Engine::read_async: range outside the storage");
  auto& s = *state_;
  std::lock_guard lock(s.mutex);
  s.refuse_in_capture("Engine::read_async (a host read)");
  PendingRead r;
  r.state_ = state_;
  r.bytes_ = bytes;
  if (bytes == 0) return r;
  r.snapshot_ = record_host_copy(s, src, offset, bytes);
  s.submit();
  return r;
}

bool PendingRead::ready() const {
  if (!snapshot_) return state_ != nullptr;
  std::lock_guard lock(state_->mutex);
  state_->retire();
  return snapshot_->chunk()->last_use <= state_->completed;
}

void PendingRead::get(void* dst) const {
  runtime::require_unforked("oa::PendingRead::get");
  if (!state_) fail(ErrorKind::FailedPrecondition, "PendingRead::get: no read was started (a default-constructed PendingRead)");
  if (!snapshot_) return;
  auto& s = *state_;
  std::lock_guard lock(s.mutex);
  s.refuse_in_capture("PendingRead::get (a host read)");
  // Submits the copy's batch if it is still open before waiting on it: a
  // wait on unsubmitted work would never end.
  s.wait_for_use(*snapshot_->chunk());
  std::memcpy(dst, mapped(*snapshot_), bytes_);
}

void Engine::fill(const Storage& dst, std::uint64_t offset, std::uint64_t bytes, std::uint32_t pattern) const {
  runtime::require_unforked("oa::Engine::fill");
  require_own(*state_, dst, "Engine::fill");
  if (bytes == 0) return;
  if (offset % 4 || bytes % 4 || offset + bytes > dst.bytes()) fail(ErrorKind::Internal, "Engine::fill: bad range");
  auto& s = *state_;
  std::lock_guard lock(s.mutex);
  s.fill(dst, offset, bytes, pattern);
}

std::uint32_t Engine::register_device_check(ErrorKind kind, std::function<std::string(std::int32_t value)> describe) const {
  auto& s = *state_;
  std::lock_guard lock(s.mutex);
  // 0 means "no failure" in the record; an id still registered is skipped.
  while (s.next_check == 0 || s.device_checks.count(s.next_check)) ++s.next_check;
  const std::uint32_t id = s.next_check++;
  s.device_checks[id] = {kind, std::move(describe), s.capturing != nullptr};
  if (s.capturing) s.capturing->device_checks.push_back(id);
  return id;
}

std::shared_ptr<Storage> Engine::device_check_record() const {
  auto& s = *state_;
  std::lock_guard lock(s.mutex);
  s.make_check_record();  // a StepGraph makes it before its capture: a graph never zeroes it
  return s.check_record;
}

void Engine::copy(const Storage& src, std::uint64_t src_offset, const Storage& dst, std::uint64_t dst_offset, std::uint64_t bytes) const {
  runtime::require_unforked("oa::Engine::copy");
  require_own(*state_, src, "Engine::copy");
  require_own(*state_, dst, "Engine::copy");
  if (bytes == 0) return;
  if (src_offset + bytes > src.bytes() || dst_offset + bytes > dst.bytes()) fail(ErrorKind::Internal, "Engine::copy: bad range");
  auto& s = *state_;
  std::lock_guard lock(s.mutex);
  Batch& b = s.batch();
  if (s.conflicts(src, Access::Read) || s.conflicts(dst, Access::Write)) s.barrier(b);
  s.mark(b, src, Access::Read);
  s.mark(b, dst, Access::Write);
  VkBufferCopy region{src.chunk()->offset + src_offset, dst.chunk()->offset + dst_offset, bytes};
  vkCmdCopyBuffer(b.cmd, src.chunk()->block->buffer, dst.chunk()->block->buffer, 1, &region);
}

bool Engine::capturing() const {
  std::lock_guard lock(state_->mutex);
  return state_->capturing != nullptr;
}

void Engine::on_replay(std::function<void()> hook) const {
  std::lock_guard lock(state_->mutex);
  if (!state_->capturing) fail(ErrorKind::FailedPrecondition, "Engine::on_replay: no StepGraph is being captured on {}", state_->info.name);
  state_->capturing->replay_hooks.push_back(std::move(hook));
}

}  // namespace oa
