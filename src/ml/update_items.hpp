#pragma once
// Multi-tensor dispatches, as PyTorch's foreach ops and Apex's
// multi_tensor_apply: the element chunks ("items") of many f32 tensors go to
// one kernel up to kItems at a time (shaders/ml/optim/update_items.push.h and
// update_items.glsl map its workgroups to items), so that an optimizer step,
// a gradient clip or an unscale over many small tensors costs a few
// dispatches. Internal to the library.
#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "matrix/lowering.hpp"

namespace oa::ml::items {

constexpr std::size_t kItems = OA_OPTIM_ITEMS;
// Elements per workgroup of the item kernels (256 threads x 4).
constexpr std::int64_t kGroup = 1024;

// Element chunk `chunk` of tensor `tensor` (its index in the op's list).
struct Item {
  std::size_t tensor = 0;
  detail::ElementChunk chunk;
};

// The binding of an item's range of `m` (a tensor of the item's shape: the
// tensor itself, its gradient or its optimizer state).
inline runtime::BufferBinding binding(const Matrix& m, const Item& item, runtime::Access access) {
  return {m.storage(), access, static_cast<std::uint64_t>(item.chunk.begin) * 4, static_cast<std::uint64_t>(item.chunk.count) * 4};
}

// The item in place k of a dispatch: unused places repeat item 0 (the push
// constants give them no elements, so they are never touched).
inline const Item& at(std::span<const Item> items, std::size_t k) { return items[k < items.size() ? k : 0]; }

// The element counts of `items`, 0 in the unused places.
inline std::array<std::uint32_t, kItems> counts(std::span<const Item> items) {
  std::array<std::uint32_t, kItems> n{};
  for (std::size_t k = 0; k < items.size(); ++k) n[k] = static_cast<std::uint32_t>(items[k].chunk.count);
  return n;
}

// The push-constant part of a dispatch of `items` for a kernel that does not
// read slots (all 0).
inline push::ml_optim_update_items item_counts(std::span<const Item> items) {
  return {.n = counts(items), .slot = std::array<std::uint32_t, kItems>{}};
}

// Cuts the element chunks of tensors order[0], order[1], ... (`numel(t)`
// elements each) into dispatches of at most `per_dispatch` items, starting a
// new one also where starts[at] is true (`starts` may be empty), and calls
// emit(items, workgroups) for each.
inline void batch(const Engine& engine, std::span<const std::size_t> order, const std::vector<bool>& starts,
                  const std::function<std::int64_t(std::size_t)>& numel, std::size_t per_dispatch,
                  const std::function<void(std::span<const Item>, std::uint64_t)>& emit) {
  std::array<Item, kItems> held;
  std::size_t count = 0;
  std::uint64_t groups = 0;
  auto flush = [&] {
    if (count == 0) return;
    emit(std::span<const Item>(held.data(), count), groups);
    count = 0, groups = 0;
  };
  for (std::size_t at = 0; at < order.size(); ++at) {
    if (at < starts.size() && starts[at]) flush();
    for (const auto& c : detail::element_chunks(engine, numel(order[at]))) {
      if (count == per_dispatch) flush();
      held[count++] = {order[at], c};
      groups += detail::groups_for(c.count, kGroup);
    }
  }
  flush();
}

// batch() over tensors 0 .. n - 1 in order, kItems a dispatch.
inline void batch(const Engine& engine, std::span<const Matrix> tensors,
                  const std::function<void(std::span<const Item>, std::uint64_t)>& emit) {
  std::vector<std::size_t> order(tensors.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  batch(engine, order, {}, [&](std::size_t t) { return tensors[t].numel(); }, kItems, emit);
}

}  // namespace oa::ml::items
