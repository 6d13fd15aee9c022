#pragma once
// Vulkan helpers: result checking and a move-only RAII handle.
#include <vulkan/vulkan.h>

#include <functional>
#include <utility>

#include "oa/core/error.hpp"

namespace oa::runtime::vk {

const char* result_name(VkResult r);

inline void check(VkResult r, const char* what) {
  if (r == VK_SUCCESS) return;
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY)
    fail(ErrorKind::ResourceExhausted, "{} failed: {}", what, result_name(r));
  fail(ErrorKind::Device, "{} failed: {}", what, result_name(r));
}

// Owns one Vulkan handle; the deleter runs once on destruction or reset.
template <typename T>
class Handle {
 public:
  Handle() = default;
  Handle(T h, std::function<void(T)> del) : h_(h), del_(std::move(del)) {}
  Handle(Handle&& o) noexcept : h_(std::exchange(o.h_, VK_NULL_HANDLE)), del_(std::move(o.del_)) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, VK_NULL_HANDLE);
      del_ = std::move(o.del_);
    }
    return *this;
  }
  ~Handle() { reset(); }
  void reset() {
    if (h_ != VK_NULL_HANDLE && del_) del_(h_);
    h_ = VK_NULL_HANDLE;
  }
  T get() const { return h_; }
  operator T() const { return h_; }

 private:
  T h_ = VK_NULL_HANDLE;
  std::function<void(T)> del_;
};

}  // namespace oa::runtime::vk
