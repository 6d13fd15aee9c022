// oa::dist::Communicator over MPI: every collective is a non-blocking MPI call
// per chunk, waited for with MPI_Testall under the communicator's timeout.
#include "oa/dist/communicator.hpp"

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>
#include <thread>

#include "oa/core/error.hpp"

namespace oa::dist {

struct Communicator::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
  bool world = false;   // MPI_COMM_WORLD: finalised with the process
  bool broken = false;  // a collective timed out: the ranks are out of step
  // Requests given up before they completed, kept so that MPI never writes
  // into freed memory.
  std::vector<std::unique_ptr<AllReduceRequest::State>> abandoned;
  ~Impl();
};

struct AllReduceRequest::State {
  std::weak_ptr<Communicator::Impl> impl;
  std::vector<float> values;
  std::shared_ptr<void> keep_alive;  // the buffer of a blocking collective
  std::vector<MPI_Request> requests;
  ReduceOp op = ReduceOp::Sum;
  int rank = 0, size = 1;
  double timeout = 0;
  bool done = false, waited = false;
};

namespace {

// Requests given up by communicators that are gone: MPI may still write into
// their buffers, so they stay reachable until the process ends.
std::vector<std::unique_ptr<AllReduceRequest::State>>& graveyard() {
  static std::vector<std::unique_ptr<AllReduceRequest::State>> g;
  return g;
}

[[noreturn]] void fail_mpi(int code, const char* what, int rank, int size) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  fail(ErrorKind::Communication, "oa::dist::{}: rank {} of {}: MPI error {}: {}", what, rank, size, code,
       std::string(text, static_cast<std::size_t>(length)));
}

void check(int code, const char* what, int rank, int size) {
  if (code != MPI_SUCCESS) fail_mpi(code, what, rank, size);
}

double timeout_from_env() {
  const char* env = std::getenv("OA_DIST_TIMEOUT");
  if (!env || !*env) return 300;
  char* end = nullptr;
  const double t = std::strtod(env, &end);
  if (*end || !std::isfinite(t) || t <= 0)
    fail(ErrorKind::InvalidArgument, "OA_DIST_TIMEOUT=\"{}\": expected a positive number of seconds", env);
  return t;
}

int env_int(const char* name, int fallback) {
  const char* env = std::getenv(name);
  return env && *env ? std::atoi(env) : fallback;
}

// Polls `state` until its requests complete; past the timeout marks the
// communicator broken and throws, naming the collective.
void wait_for(AllReduceRequest::State& s, const char* what) {
  const auto start = std::chrono::steady_clock::now();
  while (!s.done) {
    int flag = 0;
    check(MPI_Testall(static_cast<int>(s.requests.size()), s.requests.data(), &flag, MPI_STATUSES_IGNORE), what, s.rank,
          s.size);
    if (flag) {
      s.done = true;
      break;
    }
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (waited > s.timeout) {
      if (auto impl = s.impl.lock()) impl->broken = true;
      fail(ErrorKind::Communication,
           "oa::dist::{}: rank {} of {} waited {:.1f} s for its peers to join the collective (OA_DIST_TIMEOUT): a rank "
           "died, hangs, or called other collectives; the job cannot continue",
           what, s.rank, s.size, waited);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

void refuse_broken(const Communicator::Impl* impl, const char* what, int rank, int size) {
  if (impl && impl->broken)
    fail(ErrorKind::FailedPrecondition,
         "oa::dist::{}: rank {} of {}: an earlier collective on this communicator timed out, so its ranks are out of step",
         what, rank, size);
}

template <typename T>
MPI_Datatype mpi_type() {
  if constexpr (std::is_same_v<T, float>) return MPI_FLOAT;
  else if constexpr (std::is_same_v<T, double>) return MPI_DOUBLE;
  else if constexpr (std::is_same_v<T, char>) return MPI_CHAR;
  else return MPI_UINT64_T;
}

// Starts one MPI_Iallreduce (sum, in place) per chunk of `values`.
template <typename T>
std::vector<MPI_Request> start_sum(MPI_Comm comm, std::span<T> values, int rank, int size) {
  std::vector<MPI_Request> requests;
  for (std::size_t first = 0; first < values.size(); first += kChunkElements) {
    const auto count = static_cast<int>(std::min<std::size_t>(kChunkElements, values.size() - first));
    MPI_Request r = MPI_REQUEST_NULL;
    check(MPI_Iallreduce(MPI_IN_PLACE, values.data() + first, count, mpi_type<T>(), MPI_SUM, comm, &r), "all_reduce",
          rank, size);
    requests.push_back(r);
  }
  return requests;
}

template <typename T>
void divide(std::span<T> values, int size) {
  for (T& v : values) v /= static_cast<T>(size);
}

void require_root(int root, int size) {
  if (root < 0 || root >= size)
    fail(ErrorKind::InvalidArgument, "oa::dist::broadcast: root {} outside the {} rank(s)", root, size);
}

void require_f32(const Matrix& m, const char* what) {
  if (!m.defined()) fail(ErrorKind::InvalidArgument, "oa::dist::{}: the Matrix is undefined", what);
  if (m.dtype() != DType::F32)
    fail(ErrorKind::InvalidArgument, "oa::dist::{}: expected an f32 Matrix; found {} {}", what, to_string(m.dtype()), m.shape());
}

}  // namespace

Communicator::Impl::~Impl() {
  if (world) {
    // Peers out of step would wait in MPI_Finalize for ever: end the job instead.
    if (broken) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Finalize();
  } else if (broken) {
    for (auto& r : abandoned) graveyard().push_back(std::move(r));
  } else {
    MPI_Comm_free(&comm);
  }
}

Communicator::Communicator(std::shared_ptr<Impl> impl, int rank, int size, int local_rank, double timeout)
    : impl_(std::move(impl)), rank_(rank), size_(size), local_rank_(local_rank), timeout_(timeout) {}
Communicator::Communicator(Communicator&&) noexcept = default;
Communicator::~Communicator() = default;

Communicator& Communicator::world() {
  static Communicator w = [] {
    const double timeout = timeout_from_env();
    if (!std::getenv("OMPI_COMM_WORLD_SIZE")) return Communicator(nullptr, 0, 1, 0, timeout);
    int provided = 0;
    if (const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided); rc != MPI_SUCCESS)
      fail(ErrorKind::Communication, "oa::dist::Communicator::world: MPI_Init_thread failed with MPI error {}", rc);
    auto impl = std::make_shared<Impl>();
    impl->comm = MPI_COMM_WORLD;
    impl->world = true;
    int rank = 0, size = 1;
    check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN), "Communicator::world", rank, size);
    check(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "Communicator::world", rank, size);
    check(MPI_Comm_size(MPI_COMM_WORLD, &size), "Communicator::world", rank, size);
    return Communicator(std::move(impl), rank, size, env_int("OMPI_COMM_WORLD_LOCAL_RANK", 0), timeout);
  }();
  return w;
}

void Communicator::set_timeout_seconds(double seconds) {
  if (!std::isfinite(seconds) || seconds <= 0)
    fail(ErrorKind::InvalidArgument, "oa::dist::Communicator::set_timeout_seconds: {} is not a positive number of seconds", seconds);
  timeout_ = seconds;
}

Communicator Communicator::duplicate() const {
  if (!impl_) return Communicator(nullptr, rank_, size_, local_rank_, timeout_);
  refuse_broken(impl_.get(), "Communicator::duplicate", rank_, size_);
  auto impl = std::make_shared<Impl>();
  check(MPI_Comm_dup(impl_->comm, &impl->comm), "Communicator::duplicate", rank_, size_);
  check(MPI_Comm_set_errhandler(impl->comm, MPI_ERRORS_RETURN), "Communicator::duplicate", rank_, size_);
  return Communicator(std::move(impl), rank_, size_, local_rank_, timeout_);
}

AllReduceRequest Communicator::start_all_reduce(std::vector<float> values, ReduceOp op) {
  refuse_broken(impl_.get(), "all_reduce", rank_, size_);
  AllReduceRequest r;
  r.state_ = std::make_unique<AllReduceRequest::State>();
  auto& s = *r.state_;
  s.impl = impl_;
  s.values = std::move(values);
  s.op = op;
  s.rank = rank_;
  s.size = size_;
  s.timeout = timeout_;
  if (impl_) s.requests = start_sum(impl_->comm, std::span<float>(s.values), rank_, size_);
  s.done = s.requests.empty();
  return r;
}

AllReduceRequest::AllReduceRequest() = default;
AllReduceRequest::AllReduceRequest(AllReduceRequest&&) noexcept = default;
AllReduceRequest& AllReduceRequest::operator=(AllReduceRequest&& o) noexcept {
  if (this != &o) {
    AllReduceRequest dying(std::move(*this));
    state_ = std::move(o.state_);
  }
  return *this;
}

AllReduceRequest::~AllReduceRequest() {
  if (!state_ || state_->done) return;
  if (auto impl = state_->impl.lock()) {
    impl->broken = true;
    impl->abandoned.push_back(std::move(state_));
  } else {
    graveyard().push_back(std::move(state_));
  }
}

bool AllReduceRequest::test() {
  if (!state_) return false;
  auto& s = *state_;
  if (!s.done) {
    int flag = 0;
    check(MPI_Testall(static_cast<int>(s.requests.size()), s.requests.data(), &flag, MPI_STATUSES_IGNORE), "all_reduce",
          s.rank, s.size);
    s.done = flag != 0;
  }
  return s.done;
}

std::vector<float>& AllReduceRequest::wait() {
  if (!state_ || state_->waited)
    fail(ErrorKind::FailedPrecondition, "oa::dist::AllReduceRequest::wait: {}", state_ ? "waited for already" : "no all-reduce was started");
  auto& s = *state_;
  wait_for(s, "all_reduce");
  s.waited = true;
  if (s.op == ReduceOp::Average) divide(std::span<float>(s.values), s.size);
  return s.values;
}

namespace {

// Runs one collective over `values` (moved in and back out, so that a
// collective given up on a timeout still owns its memory): `start` returns its
// requests, which are then waited for.
template <typename T, typename Start>
std::vector<T> run_collective(const std::shared_ptr<Communicator::Impl>& impl, const char* what, int rank, int size,
                              double timeout, std::vector<T> values, Start start) {
  refuse_broken(impl.get(), what, rank, size);
  auto s = std::make_unique<AllReduceRequest::State>();
  s->impl = impl;
  s->rank = rank;
  s->size = size;
  s->timeout = timeout;
  auto buffer = std::make_shared<std::vector<T>>(std::move(values));
  s->keep_alive = buffer;
  s->requests = start(std::span<T>(*buffer));
  try {
    wait_for(*s, what);
  } catch (...) {
    impl->abandoned.push_back(std::move(s));
    throw;
  }
  return std::move(*buffer);
}

template <typename T>
void all_reduce_host(const std::shared_ptr<Communicator::Impl>& impl, std::span<T> values, ReduceOp op, int rank, int size,
                     double timeout) {
  if (impl) {
    auto out = run_collective(impl, "all_reduce", rank, size, timeout, std::vector<T>(values.begin(), values.end()),
                              [&](std::span<T> v) { return start_sum(impl->comm, v, rank, size); });
    std::copy(out.begin(), out.end(), values.begin());
  }
  if (op == ReduceOp::Average) divide(values, size);
}

template <typename T>
std::vector<T> broadcast_host(const std::shared_ptr<Communicator::Impl>& impl, std::vector<T> values, int root, int rank,
                              int size, double timeout) {
  require_root(root, size);
  if (!impl) return values;
  return run_collective(impl, "broadcast", rank, size, timeout, std::move(values), [&](std::span<T> v) {
    std::vector<MPI_Request> requests;
    for (std::size_t first = 0; first < v.size(); first += kChunkElements) {
      const auto count = static_cast<int>(std::min<std::size_t>(kChunkElements, v.size() - first));
      MPI_Request r = MPI_REQUEST_NULL;
      check(MPI_Ibcast(v.data() + first, count, mpi_type<T>(), root, impl->comm, &r), "broadcast", rank, size);
      requests.push_back(r);
    }
    return requests;
  });
}

}  // namespace

void Communicator::all_reduce(std::span<float> values, ReduceOp op) { all_reduce_host(impl_, values, op, rank_, size_, timeout_); }
void Communicator::all_reduce(std::span<double> values, ReduceOp op) { all_reduce_host(impl_, values, op, rank_, size_, timeout_); }

void Communicator::all_reduce(const Matrix& m, ReduceOp op) {
  require_f32(m, "all_reduce");
  if (size_ == 1) return;
  std::vector<float> values = run_collective(impl_, "all_reduce", rank_, size_, timeout_, m.to_vector(),
                                             [&](std::span<float> v) { return start_sum(impl_->comm, v, rank_, size_); });
  if (op == ReduceOp::Average) divide(std::span<float>(values), size_);
  m.write(values);
}

void Communicator::broadcast(std::span<float> values, int root) {
  auto out = broadcast_host(impl_, std::vector<float>(values.begin(), values.end()), root, rank_, size_, timeout_);
  std::copy(out.begin(), out.end(), values.begin());
}

void Communicator::broadcast(std::string& text, int root) {
  std::vector<std::uint64_t> length = {text.size()};
  length = broadcast_host(impl_, std::move(length), root, rank_, size_, timeout_);
  std::vector<char> bytes(text.begin(), text.end());
  bytes.resize(length[0]);
  bytes = broadcast_host(impl_, std::move(bytes), root, rank_, size_, timeout_);
  text.assign(bytes.begin(), bytes.end());
}

void Communicator::broadcast(const Matrix& m, int root) {
  require_f32(m, "broadcast");
  require_root(root, size_);
  if (size_ == 1) return;
  std::vector<float> values = rank_ == root ? m.to_vector() : std::vector<float>(static_cast<std::size_t>(m.numel()));
  values = broadcast_host(impl_, std::move(values), root, rank_, size_, timeout_);
  if (rank_ != root) m.write(values);
}

void Communicator::barrier() {
  if (!impl_) return;
  run_collective(impl_, "barrier", rank_, size_, timeout_, std::vector<float>(), [&](std::span<float>) {
    MPI_Request r = MPI_REQUEST_NULL;
    check(MPI_Ibarrier(impl_->comm, &r), "barrier", rank_, size_);
    return std::vector<MPI_Request>{r};
  });
}

void Communicator::abort(int exit_code) {
  if (impl_) MPI_Abort(impl_->comm, exit_code);
  std::exit(exit_code);
}

}  // namespace oa::dist
