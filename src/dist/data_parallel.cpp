// DataParallel: gradient buckets filled by grad-ready hooks, read to the host
// and all-reduced while backward runs (see oa/dist/data_parallel.hpp).
#include "oa/dist/data_parallel.hpp"

#include <chrono>
#include <span>

#include "oa/matrix/elementwise.hpp"

namespace oa::dist {

struct DataParallel::State {
  // A run of parameters whose gradients travel together, laid out back to
  // back (f32) in one device buffer.
  struct Bucket {
    std::vector<std::size_t> params;     // indices into params
    std::vector<std::uint64_t> offsets;  // each one's first element in the buffer
    std::uint64_t elements = 0;
    std::shared_ptr<runtime::Storage> buffer;
    std::vector<bool> filled;  // per parameter: its gradient is in the buffer
    std::size_t ready = 0;
    PendingRead read;
    bool reading = false;
    AllReduceRequest request;
  };

  Communicator* comm = nullptr;
  Engine engine;
  std::vector<ml::Parameter> params;
  ml::NamedMatrices buffers;
  std::vector<std::pair<std::size_t, std::size_t>> where;  // parameter -> (bucket, position in it)
  std::vector<Bucket> buckets;
  std::vector<std::uint64_t> hooks;
  std::size_t next_start = 0;  // buckets start their all-reduce in order: the next one to start
  std::uint32_t started_in_backward = 0;

  explicit State(Engine e) : engine(std::move(e)) {}

  // Copies parameter `i`'s gradient (what grad() holds plus `contribution`,
  // if defined; zeros when there is neither) into its bucket.
  void fill(std::size_t i, const Matrix& contribution) {
    auto [b, k] = where[i];
    Bucket& bucket = buckets[b];
    if (bucket.filled[k])
      fail(ErrorKind::FailedPrecondition,
           "oa::dist::DataParallel: a second backward reached Parameter '{}' before all_reduce_gradients(); call it after "
           "each backward",
           params[i].name());
    const Matrix old = params[i].grad();
    const std::uint64_t offset = bucket.offsets[k] * 4, bytes = static_cast<std::uint64_t>(params[i].value().numel()) * 4;
    NoGradGuard no_grad;
    Matrix total = old.defined() && contribution.defined() ? old + contribution : contribution.defined() ? contribution : old;
    if (total.defined()) engine.copy(*total.storage(), 0, *bucket.buffer, offset, bytes);
    else engine.fill(*bucket.buffer, offset, bytes, 0);
    bucket.filled[k] = true;
    if (++bucket.ready == bucket.params.size()) {
      bucket.read = engine.read_async(*bucket.buffer, 0, bucket.elements * 4);
      bucket.reading = true;
    }
  }

  // Starts, in order, the all-reduces of the buckets whose reads have landed
  // (`wait`: waits for the reads), and lets MPI progress those under way.
  void progress(bool wait) {
    for (; next_start < buckets.size(); ++next_start) {
      Bucket& bucket = buckets[next_start];
      if (!bucket.reading || (!wait && !bucket.read.ready())) break;
      std::vector<float> host(bucket.elements);
      bucket.read.get(host.data());
      bucket.request = comm->start_all_reduce(std::move(host), ReduceOp::Average);
      if (!wait) ++started_in_backward;
    }
    for (std::size_t b = 0; b < next_start; ++b) buckets[b].request.test();
  }
};

DataParallel::DataParallel(std::vector<ml::Parameter> parameters, Communicator& comm, DataParallelOptions options,
                           ml::NamedMatrices buffers)
    : comm_(comm) {
  const char* op = "oa::dist::DataParallel";
  if (parameters.empty()) fail(ErrorKind::InvalidArgument, "{}: no parameters", op);
  if (options.bucket_bytes == 0) fail(ErrorKind::InvalidArgument, "{}: bucket_bytes must be at least 1", op);
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    if (!parameters[i].defined()) fail(ErrorKind::InvalidArgument, "{}: parameter {} is undefined", op, i);
    if (!(parameters[i].value().engine() == parameters[0].value().engine()))
      fail(ErrorKind::InvalidArgument, "{}: Parameter '{}' lives on another engine than '{}'", op, parameters[i].name(),
           parameters[0].name());
  }
  ml::NamedMatrices averaged;
  for (auto& [name, m] : buffers) {
    if (!m.defined()) fail(ErrorKind::InvalidArgument, "{}: buffer '{}' is undefined", op, name);
    if (m.dtype() != DType::F32 && m.dtype() != DType::I32)
      fail(ErrorKind::InvalidArgument, "{}: buffer '{}' is {} {}; expected f32 or i32", op, name, to_string(m.dtype()), m.shape());
    if (m.dtype() == DType::F32) averaged.emplace_back(std::move(name), std::move(m));
  }
  state_ = std::make_unique<State>(parameters[0].value().engine());
  State& s = *state_;
  s.comm = &comm;
  s.params = std::move(parameters);
  s.buffers = std::move(averaged);
  for (const auto& p : s.params) comm.broadcast(p.value(), 0);
  for (const auto& [name, m] : s.buffers) comm.broadcast(m, 0);
  if (comm.size() == 1) return;

  s.where.resize(s.params.size());
  for (std::size_t i = s.params.size(); i-- > 0;) {
    const auto n = static_cast<std::uint64_t>(s.params[i].value().numel());
    if (s.buckets.empty() || s.buckets.back().elements * 4 >= options.bucket_bytes) s.buckets.emplace_back();
    State::Bucket& b = s.buckets.back();
    s.where[i] = {s.buckets.size() - 1, b.params.size()};
    b.params.push_back(i);
    b.offsets.push_back(b.elements);
    b.elements += n;
  }
  for (State::Bucket& b : s.buckets) {
    b.buffer = s.engine.allocate(b.elements * 4);
    b.filled.assign(b.params.size(), false);
  }
  for (std::size_t i = 0; i < s.params.size(); ++i)
    s.hooks.push_back(register_grad_ready_hook(s.params[i].value(), [&s, i](const Matrix& g) {
      s.fill(i, g);
      s.progress(false);
    }));
}

DataParallel::~DataParallel() {
  if (!state_) return;
  for (std::size_t i = 0; i < state_->hooks.size(); ++i) remove_grad_ready_hook(state_->params[i].value(), state_->hooks[i]);
}

std::size_t DataParallel::bucket_count() const { return state_->buckets.size(); }

void DataParallel::all_reduce_gradients() {
  State& s = *state_;
  stats_ = {};
  if (comm_.size() == 1) return;
  for (State::Bucket& b : s.buckets)
    for (std::size_t k = 0; k < b.params.size(); ++k)
      if (!b.filled[k]) s.fill(b.params[k], Matrix());
  stats_.started_in_backward = s.started_in_backward;
  s.progress(true);
  for (State::Bucket& b : s.buckets) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<float>& mean = b.request.wait();
    stats_.exposed_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    for (std::size_t k = 0; k < b.params.size(); ++k) {
      const ml::Parameter& p = s.params[b.params[k]];
      const auto n = static_cast<std::size_t>(p.value().numel());
      set_grad(p.value(), Matrix::from_vector(p.shape(), std::span<const float>(mean).subspan(b.offsets[k], n), s.engine));
    }
    stats_.bytes += b.elements * 4;
    b.filled.assign(b.params.size(), false);
    b.ready = 0;
    b.reading = false;
    b.read = PendingRead();
    b.request = AllReduceRequest();
  }
  stats_.buckets = static_cast<std::uint32_t>(s.buckets.size());
  s.next_start = 0;
  s.started_in_backward = 0;
}

void DataParallel::average_buffers() {
  if (comm_.size() == 1 || state_->buffers.empty()) return;
  std::vector<float> values;
  for (const auto& [name, m] : state_->buffers) {
    const std::vector<float> v = m.to_vector();
    values.insert(values.end(), v.begin(), v.end());
  }
  comm_.all_reduce(std::span<float>(values), ReduceOp::Average);
  std::size_t offset = 0;
  for (const auto& [name, m] : state_->buffers) {
    const auto n = static_cast<std::size_t>(m.numel());
    m.write(std::span<const float>(values).subspan(offset, n));
    offset += n;
  }
}

}  // namespace oa::dist
