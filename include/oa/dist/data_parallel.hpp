#pragma once
// oa::dist::DataParallel: data-parallel training of one model replicated on
// every rank (torch.nn.parallel.DistributedDataParallel's scheme).
//
// Construction broadcasts every parameter from rank 0, so all replicas start
// equal. The parameters are grouped into buckets of about
// DataParallelOptions::bucket_bytes, in reverse order (backward produces the
// last layers' gradients first). During backward, a grad-ready hook
// (oa::register_grad_ready_hook) copies each gradient into its bucket's
// buffer on the GPU; when a bucket holds all its gradients, a host read of it
// starts (Engine::read_async), and once that read has landed its all-reduce
// starts (MPI_Iallreduce), while backward goes on recording and the GPU on
// computing the earlier layers. Buckets start in the same order on every rank.
//
// all_reduce_gradients(), called between backward and the optimizer step,
// completes every bucket (a parameter without gradient in this backward
// contributes its accumulated gradient, or zeros), waits for the all-reduces
// and sets each parameter's gradient to the average over the ranks. Every
// rank then holds the same gradients, bit for bit, so a deterministic
// optimizer (SGD, AdamW) keeps the replicas bitwise identical.
//
// Buffers (state that is not trained, such as BatchNorm's running
// statistics) are broadcast from rank 0 at construction too; in training each
// rank then updates its copy from its own shard. average_buffers() replaces
// every buffer by its mean over the ranks: call it before the buffers are read
// (an evaluation, a checkpoint). PyTorch's DDP instead broadcasts rank 0's
// buffers before every forward, discarding what the other ranks saw. Averaging
// keeps every shard's statistics, and as a running-statistics update is linear
// in the batch's statistics, averaging the replicas once equals averaging the
// ranks' batch means and variances at every step, at no cost per step. (The
// running variance so tracks the mean of the ranks' batch variances, not the
// variance of the global batch, which would also count the spread of the
// ranks' means; that takes SyncBatchNorm's per-step all-reduce.) Integer
// buffers (BatchNorm's num_batches_tracked) count the same steps on every
// rank: they are left alone.
//
// With a world of size 1 nothing is copied or read: all_reduce_gradients()
// and average_buffers() return at once and training is exactly
// single-process training.
#include <cstdint>
#include <memory>
#include <vector>

#include "oa/dist/communicator.hpp"
#include "oa/ml/checkpoint.hpp"
#include "oa/ml/parameter.hpp"

namespace oa::dist {

struct DataParallelOptions {
  // Bytes of f32 gradients per bucket (a parameter larger than this is a bucket of its own). PyTorch DDP's bucket_cap_mb.
  std::uint64_t bucket_bytes = 25ull << 20;
};

// What the last all_reduce_gradients() moved and waited for.
struct DataParallelStats {
  std::uint64_t bytes = 0;           // f32 gradient bytes all-reduced per rank
  std::uint32_t buckets = 0;
  std::uint32_t started_in_backward = 0;  // buckets whose all-reduce began before all_reduce_gradients()
  double exposed_seconds = 0;        // wall time of all_reduce_gradients(): communication not hidden behind backward
};

class DataParallel {
 public:
  // Broadcasts `parameters` and the f32 `buffers` (Module::named_buffers(); i32 ones are skipped) from
  // rank 0 (a collective: every rank constructs its DataParallel at the same
  // point) and registers the gradient hooks. Throws InvalidArgument for no
  // parameters, an undefined one, parameters on several engines, an undefined
  // buffer, one neither f32 nor i32, or bucket_bytes 0; Error(Communication) as the
  // Communicator's collectives.
  DataParallel(std::vector<ml::Parameter> parameters, Communicator& comm, DataParallelOptions options = {},
               ml::NamedMatrices buffers = {});
  ~DataParallel();
  DataParallel(const DataParallel&) = delete;
  DataParallel& operator=(const DataParallel&) = delete;

  // Completes the buckets of the last backward and replaces every parameter's
  // gradient by its average over the ranks (see above). Throws
  // Error(Communication) as Communicator's collectives.
  void all_reduce_gradients();
  // Replaces every buffer, in place, by its average over the ranks (one
  // all-reduce of them all, through host memory; see above). A collective.
  // Throws Error(Communication) as Communicator's collectives.
  void average_buffers();

  Communicator& communicator() const { return comm_; }
  std::size_t bucket_count() const;
  const DataParallelStats& stats() const { return stats_; }

 private:
  struct State;
  Communicator& comm_;
  std::unique_ptr<State> state_;
  DataParallelStats stats_;
};

}  // namespace oa::dist
