#include "matrix/lowering.hpp"

#include <algorithm>
#include <cstdint>

namespace oa::detail {

namespace {
constexpr std::int64_t kWindowAlignWords = 64;  // 256 bytes
}

ElementWindow element_window(const std::shared_ptr<runtime::Storage>& storage, std::int64_t first, std::int64_t count,
                             runtime::Access access) {
  if (count == 0) return {runtime::BufferBinding{storage, access, 0, 4}, 0};
  const std::int64_t begin = first / kWindowAlignWords * kWindowAlignWords, end = first + count;
  return {runtime::BufferBinding{storage, access, static_cast<std::uint64_t>(begin) * 4, static_cast<std::uint64_t>(end - begin) * 4},
          static_cast<std::uint32_t>(first - begin)};
}

std::int64_t window_batch(const Engine& engine, std::initializer_list<BatchSpan> operands) {
  const std::int64_t range = static_cast<std::int64_t>(engine.device().max_storage_buffer_range / 4) - kWindowAlignWords;
  std::int64_t items = INT64_MAX;
  for (const auto& o : operands) {
    if (o.stride == 0) continue;
    items = std::min(items, o.extent > range ? 1 : (range - o.extent) / o.stride + 1);
  }
  return std::max<std::int64_t>(items, 1);
}

bool broadcast_layout(const Shape& big, const Shape& small, std::int64_t& channels, std::int64_t& inner) {
  if (small.rank() > big.rank()) return false;
  const std::size_t shift = big.rank() - small.rank();
  int first = -1, last = -1;
  for (std::size_t i = 0; i < small.rank(); ++i) {
    const auto s = small[i], g = big[i + shift];
    if (s == g && s != 1) {
      if (first < 0) first = static_cast<int>(i + shift);
      else if (last != static_cast<int>(i + shift) - 1) return false;
      last = static_cast<int>(i + shift);
    } else if (s != 1) {
      return false;
    }
  }
  channels = 1;
  inner = 1;
  if (first < 0) return true;
  for (int i = first; i <= last; ++i) channels *= big[i];
  for (std::size_t i = last + 1; i < big.rank(); ++i) inner *= big[i];
  return true;
}

}  // namespace oa::detail
