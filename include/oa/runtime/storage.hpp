#pragma once
// Storage: a range of device memory owned by one Engine, shared by reference
// between Matrix values (reshape shares it). The range returns to the engine's
// allocator as soon as the last reference is gone, even while recorded GPU
// work still uses it: the engine orders later users of the memory after that
// work (stream order).
#include <atomic>
#include <cstdint>
#include <memory>

namespace oa::runtime {

struct EngineState;
struct Chunk;

class Storage {
 public:
  Storage(std::weak_ptr<EngineState> engine, Chunk* chunk, std::uint64_t bytes);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  std::uint64_t bytes() const { return bytes_; }
  std::uint64_t id() const { return id_; }
  // Bumped by every in-place write (upload, optimizer step, assignment);
  // autograd compares it with the version saved at forward time.
  std::uint64_t version() const { return version_.load(std::memory_order_relaxed); }
  void bump_version() { version_.fetch_add(1, std::memory_order_relaxed); }

  Chunk* chunk() const { return chunk_; }
  // Whether `engine` allocated this storage: its buffer belongs to that engine's device alone.
  bool belongs_to(const EngineState& engine) const;

 private:
  std::weak_ptr<EngineState> engine_;  // weak: a storage may outlive its engine
  Chunk* chunk_;
  std::uint64_t bytes_;
  std::uint64_t id_;
  std::atomic<std::uint64_t> version_{0};
};

}  // namespace oa::runtime
