// Stream-ordered memory reuse, early submission and the allocator's release
// policy, checked on loops of training steps as users write them.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <optional>

#include "oa/oa.hpp"
#include "support/expect.hpp"

namespace {

using oa::Matrix;
using oa::ml::Parameter;

// One training step of a small model family: forward, backward, SGD update.
struct Loop {
  std::vector<Parameter> params;
  std::function<Matrix()> loss;
};

Loop matmul_loop(const oa::Engine& e) {
  Loop l;
  l.params = {Parameter("w1", Matrix::uniform({48, 64}, -0.3f, 0.3f, 1, e)),
              Parameter("w2", Matrix::uniform({64, 16}, -0.3f, 0.3f, 2, e))};
  const auto x = Matrix::uniform({32, 48}, -1, 1, 3, e);
  l.loss = [x, w1 = l.params[0], w2 = l.params[1]] {
    auto h = oa::matrix::gelu(oa::matrix::matmul(x, w1.value()));
    return oa::matrix::mean_all(oa::matrix::square(oa::matrix::matmul(h, w2.value())));
  };
  return l;
}

Loop conv_loop(const oa::Engine& e) {
  Loop l;
  l.params = {Parameter("weight", Matrix::uniform({8, 3, 3, 3}, -0.3f, 0.3f, 4, e)),
              Parameter("bias", Matrix::uniform({8}, -0.1f, 0.1f, 5, e))};
  const auto x = Matrix::uniform({2, 3, 12, 12}, -1, 1, 6, e);
  l.loss = [x, w = l.params[0], b = l.params[1]] {
    return oa::matrix::mean_all(oa::matrix::square(oa::ml::conv_2d(x, w.value(), b.value(), 1, 1)));
  };
  return l;
}

Loop attention_loop(const oa::Engine& e) {
  Loop l;
  l.params = {Parameter("q", Matrix::uniform({2, 16, 16}, -1, 1, 7, e)), Parameter("k", Matrix::uniform({2, 16, 16}, -1, 1, 8, e)),
              Parameter("v", Matrix::uniform({2, 16, 16}, -1, 1, 9, e))};
  l.loss = [q = l.params[0], k = l.params[1], v = l.params[2]] {
    return oa::matrix::mean_all(oa::matrix::square(oa::ml::scaled_dot_product_attention(q.value(), k.value(), v.value())));
  };
  return l;
}

using LoopFactory = Loop (*)(const oa::Engine&);

void train_step(Loop& l, oa::ml::optim::Sgd& opt) {
  oa::backward(l.loss());
  opt.step();
  opt.zero_grad();
}

struct LoopRun {
  oa::MemoryStats memory;            // after the loop; peaks since the warm-up step
  std::uint64_t driver_allocations = 0;  // during the loop
  std::uint64_t submits = 0;             // during the loop
  std::vector<std::vector<float>> params;
};

// One warm-up step and a synchronize, then `steps` steps back to back (or
// synchronized after each step) and one synchronize at the end.
LoopRun run_loop(LoopFactory make, int steps, bool sync_every_step, bool staging, bool early) {
  oa::Engine e(oa::EngineOptions{.early_submission = early, .staging_transfers = staging});
  Loop l = make(e);
  oa::ml::optim::Sgd opt(l.params, {.lr = 0.05f});
  train_step(l, opt);
  e.synchronize();
  e.reset_peak_memory();
  const auto before = e.memory_stats();
  const auto submits = e.stats().submits;
  for (int i = 0; i < steps; ++i) {
    train_step(l, opt);
    if (sync_every_step) e.synchronize();
  }
  e.synchronize();
  LoopRun r;
  r.memory = e.memory_stats();
  r.driver_allocations = r.memory.driver_allocations - before.driver_allocations;
  r.submits = e.stats().submits - submits;
  for (auto& p : l.params) r.params.push_back(p.value().to_vector());
  return r;
}

void expect_bitwise_equal(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].size(), b[i].size());
    EXPECT_EQ(std::memcmp(a[i].data(), b[i].data(), a[i].size() * sizeof(float)), 0) << "parameter " << i;
  }
}

void check_memory_independent_of_steps(LoopFactory make, bool staging = false, bool early = false) {
  const auto messages = oa::validation_message_count();
  const LoopRun one = run_loop(make, 1, false, staging, early);
  const LoopRun many = run_loop(make, 64, false, staging, early);
  EXPECT_EQ(many.memory.peak_in_use_bytes, one.memory.peak_in_use_bytes);
  EXPECT_EQ(many.memory.peak_reserved_bytes, one.memory.peak_reserved_bytes);
  EXPECT_EQ(many.memory.reserved_bytes, one.memory.reserved_bytes);
  EXPECT_EQ(many.driver_allocations, 0u) << "a warm loop allocates no device memory";
  EXPECT_EQ(many.memory.in_use_bytes, one.memory.in_use_bytes);
  const LoopRun synced = run_loop(make, 64, true, staging, early);
  expect_bitwise_equal(many.params, synced.params);
  EXPECT_EQ(oa::validation_message_count(), messages) << "the validation layers reported a hazard";
}

TEST(RuntimeStreamOrder, MatmulTrainingLoopHoldsOneStepOfMemory) { check_memory_independent_of_steps(matmul_loop); }
TEST(RuntimeStreamOrder, ConvTrainingLoopHoldsOneStepOfMemory) { check_memory_independent_of_steps(conv_loop); }
TEST(RuntimeStreamOrder, AttentionTrainingLoopHoldsOneStepOfMemory) { check_memory_independent_of_steps(attention_loop); }
TEST(RuntimeStreamOrder, TrainingLoopOnTheStagingPathHoldsOneStepOfMemory) { check_memory_independent_of_steps(matmul_loop, true); }
TEST(RuntimeStreamOrder, TrainingLoopsWithEarlySubmissionHoldOneStepOfMemory) {
  for (LoopFactory make : {matmul_loop, conv_loop, attention_loop}) check_memory_independent_of_steps(make, false, true);
}

// y's memory is freed while a recorded read of it (z = y + 1) has no barrier
// after it. The next allocation of its size comes back in `w`.
struct FreedWhileRead {
  Matrix x, z;
  const void* memory = nullptr;
};
FreedWhileRead free_while_read(const oa::Engine& e, std::int64_t n) {
  FreedWhileRead r;
  r.x = Matrix::full({n}, 1.0f, e);
  e.synchronize();
  Matrix y = r.x * 2.0f;
  r.z = y + 1.0f;
  r.memory = y.storage()->chunk();
  return r;
}

TEST(RuntimeStreamOrder, FreedMemoryTouchedSinceTheLastBarrierIsLeftForFreshMemory) {
  oa::Engine e;
  const auto messages = oa::validation_message_count();
  auto r = free_while_read(e, 4096);
  const auto barriers = e.stats().barriers;
  const Matrix w = r.x * 3.0f;  // independent of z: runs beside it, in other memory
  EXPECT_NE(w.storage()->chunk(), r.memory);
  EXPECT_EQ(e.stats().barriers, barriers);
  EXPECT_EQ(r.z.to_vector(), std::vector<float>(4096, 3.0f));
  EXPECT_EQ(w.to_vector(), std::vector<float>(4096, 3.0f));
  EXPECT_EQ(oa::validation_message_count(), messages);
}

TEST(RuntimeStreamOrder, FreedMemoryIsReusedWithoutABarrierOnceOneHasPassed) {
  oa::Engine e;
  const auto messages = oa::validation_message_count();
  auto r = free_while_read(e, 4096);
  const Matrix u = r.z + 1.0f;  // reads z: a barrier, after which y's old memory is untouched
  const auto barriers = e.stats().barriers;
  const Matrix w = r.x * 3.0f;
  EXPECT_EQ(w.storage()->chunk(), r.memory);
  EXPECT_EQ(e.stats().barriers, barriers);
  EXPECT_EQ(u.to_vector(), std::vector<float>(4096, 4.0f));
  EXPECT_EQ(w.to_vector(), std::vector<float>(4096, 3.0f));
  EXPECT_EQ(oa::validation_message_count(), messages);
}

TEST(RuntimeStreamOrder, WithoutRoomForFreshMemoryFreedMemoryIsReusedAtOnceBehindABarrier) {
  // 128 Ki floats are 512 KiB: x, y and z fill the 1.75 MiB limit but for 256 KiB.
  oa::Engine e(oa::EngineOptions{.memory_limit_bytes = 7ull << 18});
  const auto messages = oa::validation_message_count();
  auto r = free_while_read(e, 1 << 17);
  const auto barriers = e.stats().barriers;
  const Matrix w = r.x * 3.0f;  // takes y's memory: must wait for the read (write-after-read)
  EXPECT_EQ(w.storage()->chunk(), r.memory);
  EXPECT_EQ(e.stats().barriers, barriers + 1);
  EXPECT_EQ(r.z.to_vector(), std::vector<float>(1 << 17, 3.0f));
  EXPECT_EQ(w.to_vector(), std::vector<float>(1 << 17, 3.0f));
  EXPECT_EQ(oa::validation_message_count(), messages);
}

TEST(RuntimeStreamOrder, HostWriteIntoMemoryTheGpuStillUsesIsOrderedAfterIt) {
  for (bool staging : {false, true}) {
    // Early submission off (whatever OA_EARLY_SUBMISSION says): y's readers must still be only recorded.
    oa::Engine e(oa::EngineOptions{.early_submission = false, .staging_transfers = staging});
    const auto messages = oa::validation_message_count();
    auto x = Matrix::full({4096}, 1.0f, e);
    e.synchronize();
    Matrix y = x * 2.0f;
    Matrix z;
    for (int i = 0; i < 8; ++i) z = y + static_cast<float>(i);  // many readers of y, all only recorded
    const auto* memory = y.storage()->chunk();
    y = Matrix();
    const Matrix v = z + 1.0f;  // a barrier: y's memory is no longer touched since one, but still in use
    const std::vector<float> host(4096, 7.0f);
    const Matrix u = Matrix::from_vector({4096}, host, e);  // reuses y's memory
    EXPECT_EQ(u.storage()->chunk(), memory) << "staging " << staging;
    EXPECT_EQ(z.to_vector(), std::vector<float>(4096, 9.0f)) << "staging " << staging;
    EXPECT_EQ(u.to_vector(), host) << "staging " << staging;
    EXPECT_EQ(v.to_vector(), std::vector<float>(4096, 10.0f)) << "staging " << staging;
    EXPECT_EQ(oa::validation_message_count(), messages);
  }
}

// A long loop reaches the GPU while the host still records it, in batches:
// without early submission full ones of about `batch` dispatches (an op's
// dispatches stay together); with it never one submission per op either.
TEST(RuntimeSubmit, LongLoopIsSubmittedEarlyInBatches) {
  for (bool early : {false, true}) {
    oa::Engine e(oa::EngineOptions{.early_submission = early});
    const auto batch = e.options().max_batch_dispatches;
    Loop l = matmul_loop(e);
    oa::ml::optim::Sgd opt(l.params, {.lr = 0.05f});
    train_step(l, opt);
    e.synchronize();
    const auto before = e.stats();
    for (int i = 0; i < 64; ++i) train_step(l, opt);
    const auto recorded = e.stats();
    const auto dispatches = recorded.dispatches - before.dispatches;
    const auto submits = recorded.submits - before.submits;
    const auto ops = recorded.semantic_ops - before.semantic_ops;
    ASSERT_GE(dispatches, 8u * batch) << "the loop is long enough to need several batches";
    EXPECT_GE(submits, 4u) << "early " << early;
    EXPECT_LT(submits, ops / 4) << "early " << early;
    if (!early) {
      EXPECT_LE(submits, dispatches / batch);
      EXPECT_GE(submits, dispatches / (2 * batch));
    }
    e.synchronize();
    EXPECT_LE(e.stats().submits - recorded.submits, 1u);
  }
}

// After a wait for all work the GPU is idle: the next op is submitted as soon
// as it is recorded, not when the batch fills or the host reads.
TEST(RuntimeSubmit, IdleGpuGetsTheFirstOpAtOnce) {
  for (bool early : {false, true}) {
    oa::Engine e(oa::EngineOptions{.early_submission = early});
    const Matrix x = Matrix::full({256}, 1.0f, e);
    e.synchronize();
    auto before = e.stats().submits;
    const Matrix y = x + 1.0f;
    EXPECT_EQ(e.stats().submits - before, early ? 1u : 0u) << "early " << early;
    EXPECT_EQ(y.to_vector(), std::vector<float>(256, 2.0f));
    before = e.stats().submits;
    const Matrix z = y * 3.0f;
    EXPECT_EQ(e.stats().submits - before, early ? 1u : 0u) << "early " << early << ", after a host read";
    EXPECT_EQ(z.to_vector(), std::vector<float>(256, 6.0f));
  }
}

TEST(RuntimeSubmit, EarlySubmissionComesFromTheEnvironmentWhenUnset) {
  ASSERT_EQ(::setenv("OA_EARLY_SUBMISSION", "1", 1), 0);
  const auto from_env = oa::Engine().options().early_submission;
  const auto explicit_wins = oa::Engine(oa::EngineOptions{.early_submission = false}).options().early_submission;
  ASSERT_EQ(::setenv("OA_EARLY_SUBMISSION", "yes", 1), 0);
  const bool rejected = oa_test::throws([] { oa::Engine(); }, oa::ErrorKind::InvalidArgument, {"OA_EARLY_SUBMISSION", "yes"});
  ::unsetenv("OA_EARLY_SUBMISSION");
  EXPECT_EQ(from_env, std::optional<bool>(true));
  EXPECT_EQ(explicit_wins, std::optional<bool>(false));
  EXPECT_TRUE(rejected);
  EXPECT_EQ(oa::Engine().options().early_submission, std::optional<bool>(false));
}

TEST(RuntimeSubmit, BatchSizeComesFromTheEnvironmentWhenUnset) {
  ASSERT_EQ(::setenv("OA_BATCH_DISPATCHES", "5", 1), 0);
  const auto from_env = oa::Engine().options().max_batch_dispatches;
  const auto explicit_wins = oa::Engine(oa::EngineOptions{.max_batch_dispatches = 9}).options().max_batch_dispatches;
  ASSERT_EQ(::setenv("OA_BATCH_DISPATCHES", "lots", 1), 0);
  const bool rejected = oa_test::throws([] { oa::Engine(); }, oa::ErrorKind::InvalidArgument, {"OA_BATCH_DISPATCHES", "lots"});
  ::unsetenv("OA_BATCH_DISPATCHES");
  EXPECT_EQ(from_env, 5u);
  EXPECT_EQ(explicit_wins, 9u);
  EXPECT_TRUE(rejected);
  EXPECT_EQ(oa::Engine().options().max_batch_dispatches, 64u);
}

TEST(RuntimeAllocator, EmptyCacheReturnsFreeBlocksToTheDriver) {
  oa::Engine e;
  auto keep = Matrix::full({1024}, 2.0f, e);
  {
    auto big = Matrix::full({5 << 20}, 1.0f, e);  // 20 MiB: a dedicated block
    auto small = Matrix::zeros({1 << 20}, e);
    e.synchronize();
  }
  const auto held = e.memory_stats();
  EXPECT_GE(held.blocks, 2u);
  e.empty_cache();
  const auto after = e.memory_stats();
  EXPECT_EQ(after.blocks, 1u) << "only the block holding `keep` stays";
  EXPECT_LT(after.reserved_bytes, held.reserved_bytes);
  EXPECT_EQ(after.in_use_bytes, held.in_use_bytes);
  EXPECT_EQ(keep.to_vector(), std::vector<float>(1024, 2.0f));
  const auto allocations = e.memory_stats().driver_allocations;
  auto again = Matrix::full({5 << 20}, 1.0f, e);
  EXPECT_EQ(e.memory_stats().driver_allocations, allocations + 1);
}

TEST(RuntimeAllocator, LimitBelowOneBlockIsHonouredAndErrorsNameTheRequest) {
  oa::Engine e(oa::EngineOptions{.memory_limit_bytes = 1 << 20});
  auto a = Matrix::full({1024}, 1.0f, e);  // 4 KiB under a 1 MiB limit
  auto b = a + 1.0f;
  EXPECT_EQ(b.to_vector(), std::vector<float>(1024, 2.0f));
  EXPECT_LE(e.memory_stats().reserved_bytes, 1u << 20);
  // 2 MiB cannot fit: the message names the 2097152 bytes asked for.
  EXPECT_TRUE(oa_test::throws([&] { Matrix::empty({1 << 19}, oa::DType::F32, e); }, oa::ErrorKind::ResourceExhausted,
                              {"2097152 bytes requested", "limit 1048576"}));
  std::vector<Matrix> held;
  bool exhausted = false;
  for (int i = 0; i < 64 && !exhausted; ++i) {
    try {
      held.push_back(Matrix::zeros({16384}, e));  // 64 KiB each
    } catch (const oa::Error& err) {
      EXPECT_EQ(err.kind(), oa::ErrorKind::ResourceExhausted);
      EXPECT_NE(std::string(err.what()).find("65536 bytes requested"), std::string::npos) << err.what();
      exhausted = true;
    }
  }
  EXPECT_TRUE(exhausted);
  EXPECT_GE(held.size(), 10u) << "most of the 1 MiB is usable";
  EXPECT_LE(e.memory_stats().reserved_bytes, 1u << 20);
  held.clear();
  EXPECT_EQ((a * 3.0f).to_vector(), std::vector<float>(1024, 3.0f));
}

// Takes 64 KiB and then 1 KiB storages until the engine throws ResourceExhausted.
void take_all_memory(const oa::Engine& e, std::vector<Matrix>& hog) {
  for (const std::int64_t n : {16384, 256}) {
    for (;;) {
      try {
        hog.push_back(Matrix::zeros({n}, e));
      } catch (const oa::Error& err) {
        ASSERT_EQ(err.kind(), oa::ErrorKind::ResourceExhausted) << err.what();
        break;
      }
    }
  }
}

// Identity in the forward pass; its backward takes all free device memory and
// then fails as an op out of memory would.
Matrix exhausts_memory_in_backward(const Matrix& x, std::vector<Matrix>& hog) {
  Matrix y;
  {
    oa::NoGradGuard no_grad;
    y = x * 1.0f;
  }
  oa::autograd::record("test exhausts memory", {x}, {y}, [&hog, e = x.engine()](const std::vector<Matrix>& g, const std::vector<bool>&) {
    take_all_memory(e, hog);
    hog.push_back(Matrix::zeros({16384}, e));  // throws ResourceExhausted out of backward
    return std::vector<Matrix>{g[0]};
  });
  return y;
}

enum class Fault { None, MidStep, MidBackward };

struct FaultRun {
  oa::MemoryStats baseline, end;
  std::vector<std::vector<float>> params;
};

// Four SGD steps of the matmul loop under a 2 MiB limit; the fault happens in
// the second step, which is then run again.
FaultRun train_with_fault(Fault fault) {
  oa::Engine e(oa::EngineOptions{.memory_limit_bytes = 2 << 20});
  Loop l = matmul_loop(e);
  oa::ml::optim::Sgd opt(l.params, {.lr = 0.05f});
  train_step(l, opt);
  e.synchronize();
  FaultRun r;
  r.baseline = e.memory_stats();
  std::vector<Matrix> hog;
  if (fault == Fault::MidStep) {
    const Matrix loss = l.loss();
    take_all_memory(e, hog);
    EXPECT_GT(hog.size(), 8u);
    hog.clear();
    oa::backward(loss);
    opt.step();
    opt.zero_grad();
  } else if (fault == Fault::MidBackward) {
    const Matrix loss = exhausts_memory_in_backward(l.loss(), hog);
    EXPECT_TRUE(oa_test::throws([&] { oa::backward(loss); }, oa::ErrorKind::ResourceExhausted, {"bytes requested"}));
    EXPECT_GT(hog.size(), 8u);
    hog.clear();
    for (auto& p : l.params) EXPECT_FALSE(p.grad().defined()) << "a failed backward leaves no gradient";
    train_step(l, opt);
  } else {
    train_step(l, opt);
  }
  train_step(l, opt);
  train_step(l, opt);
  e.synchronize();
  r.end = e.memory_stats();
  for (auto& p : l.params) r.params.push_back(p.value().to_vector());
  return r;
}

TEST(RuntimeAllocator, ExhaustionMidStepAndMidBackwardThenTrainingGoesOn) {
  const auto messages = oa::validation_message_count();
  const FaultRun clean = train_with_fault(Fault::None);
  for (const Fault fault : {Fault::MidStep, Fault::MidBackward}) {
    const FaultRun r = train_with_fault(fault);
    expect_bitwise_equal(r.params, clean.params);
    EXPECT_EQ(r.end.live_storages, r.baseline.live_storages) << "no storage leaked";
    EXPECT_EQ(r.end.in_use_bytes, r.baseline.in_use_bytes);
    EXPECT_LE(r.end.reserved_bytes, 2u << 20);
  }
  EXPECT_EQ(clean.end.live_storages, clean.baseline.live_storages);
  EXPECT_EQ(oa::validation_message_count(), messages);
}

TEST(RuntimeStreamOrder, HostWriteWithoutMemoryToStageWaitsForTheGpu) {
  oa::Engine e(oa::EngineOptions{.memory_limit_bytes = 1 << 20});
  const auto messages = oa::validation_message_count();
  const auto a = Matrix::full({4096}, 1.0f, e);
  const Matrix b = a * 2.0f;
  const Matrix z = b + 1.0f;  // a recorded read of b
  std::vector<Matrix> hog;
  take_all_memory(e, hog);  // no memory left to stage the upload through
  const std::vector<float> host(4096, 7.0f);
  e.write(*b.storage(), 0, host.data(), host.size() * sizeof(float));
  EXPECT_EQ(z.to_vector(), std::vector<float>(4096, 3.0f)) << "the read of b saw its old value";
  EXPECT_EQ(b.to_vector(), host);
  EXPECT_EQ(oa::validation_message_count(), messages);
}

}  // namespace
