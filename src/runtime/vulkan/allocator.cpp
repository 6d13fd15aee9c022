#include <algorithm>
#include <bit>

#include "runtime/vulkan/engine_state.hpp"

namespace oa::runtime {

namespace {
constexpr std::uint64_t kBlockBytes = 64ull << 20;
constexpr std::uint64_t kDedicatedFrom = 16ull << 20;
constexpr std::uint64_t kMinChunk = 256;
constexpr std::uint64_t kFreshPerEpoch = 64ull << 20;
}  // namespace

Allocator::Allocator(VkDevice device, std::uint32_t memory_type, bool host_visible, std::uint64_t limit,
                     std::uint64_t max_allocation, std::uint64_t alignment)
    : device_(device),
      memory_type_(memory_type),
      host_visible_(host_visible),
      limit_(limit),
      max_allocation_(max_allocation),
      alignment_(std::max<std::uint64_t>(alignment, kMinChunk)) {}

Allocator::~Allocator() = default;

// Classes: 256 B, then four steps per power of two (2^k * {1, 1.25, 1.5, 1.75}),
// so a request wastes at most 25%.
std::uint64_t Allocator::size_class(std::uint64_t bytes) {
  if (bytes <= kMinChunk) return kMinChunk;
  const std::uint64_t top = std::bit_floor(bytes);
  const std::uint64_t step = std::max<std::uint64_t>(top / 4, kMinChunk);
  return (bytes + step - 1) / step * step;
}

Block* Allocator::new_block(std::uint64_t request, std::uint64_t cls, std::uint64_t completed) {
  if (cls > max_allocation_)
    fail(ErrorKind::ResourceExhausted, "allocation of {} bytes exceeds the device's maxMemoryAllocationSize ({} bytes)", request,
         max_allocation_);
  const bool shared = cls < kDedicatedFrom;
  std::uint64_t size = shared ? kBlockBytes : cls;
  if (stats_.reserved_bytes + size > limit_) trim_locked(completed);
  if (stats_.reserved_bytes + size > limit_ && shared) {
    // Below a block's worth of headroom: a smaller block, whatever is left.
    const std::uint64_t left = limit_ > stats_.reserved_bytes ? limit_ - stats_.reserved_bytes : 0;
    size = std::max(cls, left / alignment_ * alignment_);
  }
  if (stats_.reserved_bytes + size > limit_) return nullptr;
  auto block = std::make_unique<Block>();
  block->owner = this;
  block->size = size;
  block->shared = shared;
  VkBufferCreateInfo bci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
  bci.size = size;
  bci.usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT;
  bci.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  VkBuffer buffer;
  vk::check(vkCreateBuffer(device_, &bci, nullptr, &buffer), "vkCreateBuffer");
  VkDevice dev = device_;
  block->buffer = vk::Handle<VkBuffer>(buffer, [dev](VkBuffer b) { vkDestroyBuffer(dev, b, nullptr); });
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device_, buffer, &req);
  VkMemoryAllocateInfo mai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
  mai.allocationSize = req.size;
  mai.memoryTypeIndex = memory_type_;
  VkDeviceMemory memory;
  stats_.driver_allocations++;
  VkResult r = vkAllocateMemory(device_, &mai, nullptr, &memory);
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY) {
    trim_locked(completed);
    stats_.driver_allocations++;
    r = vkAllocateMemory(device_, &mai, nullptr, &memory);
  }
  if (r != VK_SUCCESS)
    fail(ErrorKind::ResourceExhausted, "out of device memory: {} bytes requested; vkAllocateMemory of a {}-byte block failed ({}); {} bytes reserved",
         request, req.size, vk::result_name(r), stats_.reserved_bytes);
  block->memory = vk::Handle<VkDeviceMemory>(memory, [dev](VkDeviceMemory m) { vkFreeMemory(dev, m, nullptr); });
  vk::check(vkBindBufferMemory(device_, buffer, memory, 0), "vkBindBufferMemory");
  if (host_visible_) vk::check(vkMapMemory(device_, memory, 0, VK_WHOLE_SIZE, 0, &block->mapped), "vkMapMemory");
  stats_.reserved_bytes += size;
  stats_.peak_reserved_bytes = std::max(stats_.peak_reserved_bytes, stats_.reserved_bytes);
  stats_.blocks++;
  blocks_.push_back(std::move(block));
  return blocks_.back().get();
}

Chunk* Allocator::split_free(std::uint64_t cls, std::uint64_t completed, bool idle) {
  for (auto it = free_.upper_bound(cls); it != free_.end(); ++it) {
    auto& list = it->second;
    for (auto c = list.rbegin(); c != list.rend(); ++c) {
      Chunk* big = *c;
      if (idle && big->last_use > completed) continue;
      list.erase(std::next(c).base());
      const std::uint64_t keep = (cls + alignment_ - 1) / alignment_ * alignment_;
      if (big->size >= keep + kMinChunk) {
        // The rest stays free as its own chunk; it is the same memory, so it
        // keeps the GPU-use and hazard state.
        auto rest = std::make_unique<Chunk>(*big);
        rest->offset = big->offset + keep;
        rest->size = big->size - keep;
        big->size = keep;
        free_[rest->size].push_back(rest.get());
        big->block->chunks.push_back(std::move(rest));
      }
      return big;
    }
  }
  return nullptr;
}

void Allocator::trim_locked(std::uint64_t completed) {
  for (auto it = blocks_.begin(); it != blocks_.end();) {
    Block& b = **it;
    if (b.live != 0 || b.last_use > completed) {
      ++it;
      continue;
    }
    for (auto& c : b.chunks) {
      auto& list = free_[c->size];
      list.erase(std::remove(list.begin(), list.end(), c.get()), list.end());
    }
    stats_.reserved_bytes -= b.size;
    stats_.blocks--;
    it = blocks_.erase(it);
  }
}

void Allocator::trim(std::uint64_t completed) {
  std::lock_guard lock(mutex_);
  trim_locked(completed);
}

Chunk* Allocator::allocate(std::uint64_t bytes, std::uint64_t completed, bool idle, std::uint64_t epoch) {
  const std::uint64_t cls = size_class(std::max<std::uint64_t>(bytes, 1));
  std::lock_guard lock(mutex_);
  if (fresh_epoch_ != epoch) {
    fresh_epoch_ = epoch;
    fresh_bytes_ = 0;
  }
  if (auto it = capture_free_.find(cls); !idle && it != capture_free_.end() && !it->second.empty()) {
    Chunk* reused = it->second.back();  // still pinned and counted in use: live again
    it->second.pop_back();
    reused->released = false;
    return reused;
  }
  Chunk* chunk = nullptr;
  auto& list = free_[cls];
  // Most recently freed first (in stream order it is the warmest memory),
  // preferring a chunk that no access since the last barrier touched: reusing
  // one that was touched costs a barrier, which would put independent work
  // (the q, k and v projections of one input) in a row. When every free chunk
  // was touched, room left in a held shared block is taken instead (never a
  // new driver allocation), up to kFreshPerEpoch bytes between two barriers;
  // otherwise the warmest chunk is reused anyway.
  auto touched = [epoch](const Chunk* c) { return c->hazard_epoch == epoch && c->hazard != 0; };
  auto take = [&](auto&& usable) {
    for (auto it = list.rbegin(); it != list.rend(); ++it)
      if ((!idle || (*it)->last_use <= completed) && usable(*it)) {
        chunk = *it;
        list.erase(std::next(it).base());
        return;
      }
  };
  take([&](const Chunk* c) { return !touched(c); });
  const bool fresh = !chunk && fresh_bytes_ + cls <= kFreshPerEpoch;
  if (!chunk && !fresh) take([](const Chunk*) { return true; });
  Block* home = nullptr;
  if (!chunk) {
    if (cls < kDedicatedFrom) {
      for (auto& b : blocks_)
        if (b->shared && b->size - b->used >= cls) {
          home = b.get();
          break;
        }
    }
    // Fresh memory comes only from room in blocks already held: a touched
    // chunk is reused before the driver is asked for more.
    if (!home && fresh) take([](const Chunk*) { return true; });
    if (!home && !chunk) home = new_block(bytes, cls, completed);
    if (!home && !chunk) chunk = split_free(cls, completed, idle);
    if (!home && !chunk)
      fail(ErrorKind::ResourceExhausted,
           "out of device memory: {} bytes requested; {} bytes in use, {} reserved, limit {} bytes (EngineOptions::memory_limit_bytes or the device heap)",
           bytes, stats_.in_use_bytes, stats_.reserved_bytes, limit_);
  }
  if (!chunk) {
    fresh_bytes_ += cls;
    auto c = std::make_unique<Chunk>();
    c->block = home;
    c->offset = home->used;
    c->size = cls;
    home->used = std::min(home->size, home->used + (cls + alignment_ - 1) / alignment_ * alignment_);
    chunk = c.get();
    home->chunks.push_back(std::move(c));
  }
  chunk->block->live++;
  stats_.in_use_bytes += chunk->size;
  stats_.live_storages++;
  stats_.peak_in_use_bytes = std::max(stats_.peak_in_use_bytes, stats_.in_use_bytes);
  return chunk;
}

void Allocator::release(Chunk* chunk) {
  std::lock_guard lock(mutex_);
  if (chunk->pins) {
    chunk->released = true;
    if (capture_serial_ && chunk->pins == 1 && chunk->captured_by == capture_serial_) capture_free_[chunk->size].push_back(chunk);
    return;
  }
  release_locked(chunk);
}

void Allocator::begin_capture(std::uint64_t serial) {
  std::lock_guard lock(mutex_);
  capture_serial_ = serial;
}

void Allocator::end_capture() {
  std::lock_guard lock(mutex_);
  capture_serial_ = 0;
  capture_free_.clear();
}

void Allocator::pin(Chunk* chunk) {
  std::lock_guard lock(mutex_);
  chunk->pins++;
}

void Allocator::unpin(Chunk* chunk) {
  std::lock_guard lock(mutex_);
  if (--chunk->pins == 0 && chunk->released) {
    chunk->released = false;
    release_locked(chunk);
  }
}

void Allocator::release_locked(Chunk* chunk) {
  chunk->block->live--;
  chunk->block->last_use = std::max(chunk->block->last_use, chunk->last_use);
  stats_.in_use_bytes -= chunk->size;
  stats_.live_storages--;
  free_[chunk->size].push_back(chunk);
}

void Allocator::reset_peak() {
  std::lock_guard lock(mutex_);
  stats_.peak_in_use_bytes = stats_.in_use_bytes;
  stats_.peak_reserved_bytes = stats_.reserved_bytes;
}

MemoryStats Allocator::stats() const {
  std::lock_guard lock(mutex_);
  return stats_;
}

}  // namespace oa::runtime
