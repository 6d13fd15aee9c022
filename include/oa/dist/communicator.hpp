#pragma once
// oa::dist::Communicator: the processes of a data-parallel job, over MPI
// (Debian's OpenMPI; liboa_dist, linked on top of liboa).
//
// Launched by `mpirun -np N prog`, the process is rank rank() of size() in
// MPI_COMM_WORLD; MPI is initialised once, on the first call of world(), and
// finalised at exit. Without a launcher (no OMPI_COMM_WORLD_SIZE in the
// environment) the program is a world of size 1: MPI is never initialised and
// every collective returns at once with its input unchanged.
//
// Collectives move data through host memory: a Matrix is read to the host,
// reduced or broadcast by MPI in chunks of kChunkElements elements (so that no
// MPI count passes 2^31 and large tensors pipeline), and written back. Every
// process must call the same collectives in the same order, as in MPI.
//
// Errors: MPI reports errors to oa (MPI_ERRORS_RETURN), which throws
// Error(Communication) naming the collective, the rank and MPI's message. A
// wait longer than timeout_seconds() (env OA_DIST_TIMEOUT, default 300 s)
// for a peer that does not join a collective throws Error(Communication)
// as well; the communicator then refuses further collectives (its peers are
// out of step), so the program should exit.
#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "oa/matrix/matrix.hpp"

namespace oa::dist {

enum class ReduceOp { Sum, Average };

inline constexpr std::int64_t kChunkElements = std::int64_t{1} << 22;

class Communicator;

// A non-blocking all-reduce over a host buffer that it owns, started by
// Communicator::start_all_reduce (MPI_Iallreduce per chunk). test() lets MPI
// progress it without waiting; wait() returns the reduced buffer. Move-only;
// destroying one that has not completed leaves its buffer to the
// communicator, which then refuses further collectives.
class AllReduceRequest {
 public:
  AllReduceRequest();
  AllReduceRequest(AllReduceRequest&&) noexcept;
  AllReduceRequest& operator=(AllReduceRequest&&) noexcept;
  ~AllReduceRequest();
  // True once every chunk has completed (then wait() does not block).
  bool test();
  // Waits (at most the communicator's timeout) and returns the result. Throws
  // Error(Communication) on an MPI error or a timeout, FailedPrecondition on
  // an empty request or a second wait.
  std::vector<float>& wait();

  struct State;  // defined by the implementation

 private:
  friend class Communicator;
  std::unique_ptr<State> state_;
};

class Communicator {
 public:
  // The job's world (see above); initialises MPI on first use under a
  // launcher. Throws Error(Communication) if MPI_Init fails.
  static Communicator& world();

  int rank() const { return rank_; }
  int size() const { return size_; }
  // The rank among the processes on this machine (OMPI_COMM_WORLD_LOCAL_RANK; 0 without a launcher).
  int local_rank() const { return local_rank_; }
  // Waits for a peer at most this long (OA_DIST_TIMEOUT seconds, default 300).
  double timeout_seconds() const { return timeout_; }
  void set_timeout_seconds(double seconds);

  // A communicator of the same processes whose collectives never match this
  // one's (MPI_Comm_dup; collective). A world of size 1 gives another of size 1.
  Communicator duplicate() const;

  // In place, on every rank: the elementwise sum (or average) over the ranks
  // of `m` (f32, same shape on every rank; the shape is not checked across
  // ranks). Throws InvalidArgument for an undefined or non-f32 Matrix.
  // torch.distributed.all_reduce.
  void all_reduce(const Matrix& m, ReduceOp op = ReduceOp::Sum);
  // Host buffers, in place (double: metrics such as loss sums and counts).
  void all_reduce(std::span<float> values, ReduceOp op = ReduceOp::Sum);
  void all_reduce(std::span<double> values, ReduceOp op = ReduceOp::Sum);
  // Starts an all-reduce of `values` and returns at once; the result is
  // request.wait() (progressed by request.test() while the GPU works).
  AllReduceRequest start_all_reduce(std::vector<float> values, ReduceOp op = ReduceOp::Sum);
  // Overwrites `m` (f32) on every rank with root's value. torch.distributed.broadcast.
  void broadcast(const Matrix& m, int root = 0);
  void broadcast(std::span<float> values, int root = 0);
  // Root's text on every rank (resized to it): JSON state, for example.
  void broadcast(std::string& text, int root = 0);
  // Returns once every rank has called it (or throws after the timeout).
  void barrier();
  // Ends every process of the job with `exit_code` (MPI_Abort), for an error
  // that one rank meets alone, so that its peers do not wait for it; a world
  // of size 1 just exits.
  [[noreturn]] void abort(int exit_code);

  Communicator(Communicator&&) noexcept;
  Communicator& operator=(Communicator&&) = delete;
  ~Communicator();

  struct Impl;  // defined by the implementation

 private:
  Communicator(std::shared_ptr<Impl> impl, int rank, int size, int local_rank, double timeout);
  std::shared_ptr<Impl> impl_;  // null for a world of size 1
  int rank_ = 0, size_ = 1, local_rank_ = 0;
  double timeout_ = 300;
};

}  // namespace oa::dist
