#pragma once
// Storage: a range of device memory owned by one Engine, shared by reference
// between Matrix values (reshape shares it). The range returns to the engine's
// allocator when the last reference is gone and the GPU has finished every
// command that touched it (recorded commands hold a reference until then).
#include <atomic>
#include <cstdint>
#include <memory>

namespace oa::runtime {

struct EngineState;
struct Chunk;

class Storage : public std::enable_shared_from_this<Storage> {
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

  // Timeline value of the last batch that used this storage (engine-internal).
  std::uint64_t last_use = 0;

 private:
  std::weak_ptr<EngineState> engine_;  // weak: recorded work holds storages, not engines
  Chunk* chunk_;
  std::uint64_t bytes_;
  std::uint64_t id_;
  std::atomic<std::uint64_t> version_{0};
};

}  // namespace oa::runtime
