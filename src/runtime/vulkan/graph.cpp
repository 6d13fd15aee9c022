// oa::StepGraph: a step recorded once into reusable command buffers and
// submitted again by every replay.
#include "oa/runtime/graph.hpp"

#include "runtime/vulkan/context.hpp"

namespace oa {

namespace runtime {

void Graph::release() {
  if (!engine || forked_child()) return;  // a forked child must not wait on the GPU
  EngineState& s = *engine;
  std::lock_guard lock(s.mutex);
  try {
    s.wait_for(last_replay);
  } catch (...) {
    vkDeviceWaitIdle(s.device);  // the command buffers must not be pending when reset
  }
  for (auto& b : batches) s.recycle(std::move(b));
  batches.clear();
  replay_hooks.clear();
  // Checks of a replay whose record is still unread are left to that read.
  for (std::uint32_t id : device_checks) {
    if (s.checks_pending) s.device_checks[id].lasting = false;
    else s.device_checks.erase(id);
  }
  device_checks.clear();
  cmds.clear();
  for (Chunk* c : chunks) c->block->owner->unpin(c);
  chunks.clear();
  engine.reset();
}

}  // namespace runtime

StepGraph::StepGraph(const Engine& engine, const std::function<void()>& step) : graph_(std::make_unique<runtime::Graph>()) {
  auto& s = *engine.state();
  {
    std::lock_guard lock(s.mutex);
    if (s.capturing) fail(ErrorKind::FailedPrecondition, "StepGraph: engine {} is already capturing a step", s.info.name);
    s.make_check_record();  // zeroed by eager work: a graph's replays never zero it
    s.submit();  // the capture begins on a fresh command buffer
    graph_->engine = engine.state();
    graph_->serial = s.next_graph++;
    s.capturing = graph_.get();
    s.device_memory->begin_capture(graph_->serial);
  }
  try {
    step();
  } catch (...) {
    {
      std::lock_guard lock(s.mutex);
      s.end_capture();
    }
    graph_->release();
    throw;
  }
  std::lock_guard lock(s.mutex);
  s.end_capture();
}

StepGraph::~StepGraph() {
  if (graph_) graph_->release();
}

StepGraph::StepGraph(StepGraph&&) noexcept = default;

StepGraph& StepGraph::operator=(StepGraph&& o) noexcept {
  if (this != &o) {
    if (graph_) graph_->release();
    graph_ = std::move(o.graph_);
  }
  return *this;
}

std::uint32_t StepGraph::dispatches() const { return graph_ ? graph_->dispatches : 0; }

void StepGraph::replay(const Engine& engine) const {
  if (!graph_ || !graph_->engine) fail(ErrorKind::FailedPrecondition, "StepGraph::replay: the graph was moved from");
  runtime::Graph& g = *graph_;
  if (engine.state() != g.engine)
    fail(ErrorKind::InvalidArgument, "StepGraph::replay: the step was captured on another engine (device {}); replay it there",
         g.engine->info.name);
  auto& s = *g.engine;
  {
    std::lock_guard lock(s.mutex);
    s.refuse_in_capture("StepGraph::replay");
  }
  for (const auto& hook : g.replay_hooks) hook();  // they take the lock themselves (write())
  std::lock_guard lock(s.mutex);
  if (g.cmds.empty()) return;
  s.submit();  // work recorded before the replay (input writes) runs first
  // Bounds how far the host runs ahead, as for eager batches.
  if (s.next_value > runtime::EngineState::kMaxBatchesInFlight) s.wait_for(s.next_value - runtime::EngineState::kMaxBatchesInFlight);
  const std::uint64_t value = s.next_value;
  VkTimelineSemaphoreSubmitInfo tsi{VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO};
  tsi.signalSemaphoreValueCount = 1;
  tsi.pSignalSemaphoreValues = &value;
  VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
  si.pNext = &tsi;
  si.commandBufferCount = static_cast<std::uint32_t>(g.cmds.size());
  si.pCommandBuffers = g.cmds.data();
  si.signalSemaphoreCount = 1;
  VkSemaphore sem = s.timeline;
  si.pSignalSemaphores = &sem;
  runtime::vk::check(vkQueueSubmit(s.queue, 1, &si, VK_NULL_HANDLE), "vkQueueSubmit");
  for (runtime::Chunk* c : g.chunks) c->last_use = value;
  g.last_replay = value;
  s.checks_pending = s.checks_pending || !g.device_checks.empty();
  s.next_value++;
  s.hazard_epoch++;  // later work begins with a full barrier
  s.stats.submits++;
}

}  // namespace oa
