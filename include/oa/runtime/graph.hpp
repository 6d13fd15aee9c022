#pragma once
// oa::StepGraph: capture and replay of a step (torch.cuda.CUDAGraph).
//
// The constructor runs `step` once with the engine in capture mode: every op
// the step records (forward, backward, optimizer) goes into reusable command
// buffers that the graph keeps, and NOTHING runs on the GPU. replay() submits
// those command buffers again: the GPU repeats exactly the captured work, with
// no op recorded on the host (one queue submission per replay).
//
// What must hold for a replay to be valid:
// - The step's GPU work is fixed at capture: shapes, kernel choices, push
//   constants and host-side branches are those of the captured run, and
//   random ops in the step (dropout) replay their captured seed. Ops that
//   keep per-step constants in device memory refresh them before each replay
//   (Engine::on_replay): SGD and AdamW read the learning rate set before the
//   replay and count the replay as a step, so a schedule and Adam's bias
//   correction replay exactly.
// - The memory the captured work touches stays where it was: the graph keeps
//   every chunk of memory that a captured dispatch, fill or copy uses out of
//   the allocator until the graph is destroyed, so no work outside the graph
//   ever gets it. Within the step, memory released by a temporary is reused
//   by later work of the same step (with the barriers eager work has), so a
//   captured step holds about the memory of one eager step.
// - Inputs enter through storages that exist before the capture: write new
//   data into them (Matrix::write) between replays. The write is ordered after
//   the previous replay's reads, and the next replay after the write.
// - Matrices created inside the step (loss, activations) alias the captured
//   memory: after a replay they hold that replay's values.
//
// Refused with Error(FailedPrecondition) while a capture is active: host reads
// (to_vector, Engine::read), host writes (Engine::write), synchronize(),
// and a second capture on the same engine. replay() on an engine other than
// the capturing one throws InvalidArgument. A step that throws ends the capture
// and discards what it recorded.
#include <cstdint>
#include <functional>
#include <memory>

#include "oa/runtime/engine.hpp"

namespace oa {

namespace runtime {
struct Graph;
}

class StepGraph {
 public:
  StepGraph(const Engine& engine, const std::function<void()>& step);
  ~StepGraph();
  StepGraph(StepGraph&&) noexcept;
  StepGraph& operator=(StepGraph&&) noexcept;

  // Submits the captured work on `engine` after everything recorded before it.
  void replay(const Engine& engine) const;
  std::uint32_t dispatches() const;  // captured dispatches per replay

 private:
  std::unique_ptr<runtime::Graph> graph_;
};

}  // namespace oa
