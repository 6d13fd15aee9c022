#include "matrix/lowering.hpp"

#include <algorithm>
#include <cstdint>
#include <string>

#include "oa/core/error.hpp"

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

std::uint32_t bind_index_check(const Engine& engine, runtime::ComputeDispatch& d, const char* op, std::function<std::string()> what,
                               std::int64_t extent) {
  d.bindings.push_back(runtime::BufferBinding::read_write(engine.device_check_record()));
  return engine.register_device_check(ErrorKind::OutOfRange, [op, what = std::move(what), extent](std::int32_t v) {
    return fmt::format("{}: index {} is out of range for {} (extent {}); the GPU found it when it ran the op, and it is reported at "
                       "this synchronization or host read",
                       op, v, what(), extent);
  });
}

std::pair<std::uint64_t, std::uint64_t> chunk_window(DType d, const ElementChunk& c) {
  const auto size = static_cast<std::uint64_t>(size_of(d));
  return {static_cast<std::uint64_t>(c.begin) * size, (static_cast<std::uint64_t>(c.count) * size + 3) / 4 * 4};
}

runtime::BufferBinding RowChunk::window(std::shared_ptr<runtime::Storage> storage, std::int64_t words, runtime::Access access) const {
  return {std::move(storage), access, static_cast<std::uint64_t>(first * words) * 4, static_cast<std::uint64_t>(count * words) * 4};
}

std::vector<RowChunk> row_chunks(const Engine& engine, const char* op, std::int64_t rows, std::int64_t cols) {
  const auto range = static_cast<std::int64_t>(std::min<std::uint64_t>(engine.device().max_storage_buffer_range, INT64_MAX));
  if (cols == 0 || rows == 0) return {{0, 0}};  // no work: one chunk of no rows
  std::int64_t per = rows;
  if (cols > range / 4 || rows > range / (cols * 4)) {  // the rows' bytes exceed the range (no product overflows)
    per = cols > range / 4 ? 0 : range / (cols * 4) / kWindowAlignWords * kWindowAlignWords;
    if (per == 0)
      fail(ErrorKind::ResourceExhausted, "{}: a row of {} columns exceeds 1/64 of this device's maxStorageBufferRange ({} bytes)", op,
           cols, range);
  }
  std::vector<RowChunk> out;
  for (std::int64_t r0 = 0; r0 < rows; r0 += per) out.push_back({r0, std::min(per, rows - r0)});
  return out;
}

std::vector<runtime::ComputeDispatch> lower_rows(const Engine& engine, const char* op, std::int64_t rows, std::int64_t cols,
                                                 RowLanes policy, const std::function<void(runtime::ComputeDispatch&, const RowChunk&)>& fill) {
  const std::int64_t per_lane = policy == RowLanes::Registers ? 32 : 1;
  std::uint32_t lanes = 1;
  if (policy == RowLanes::EightColumns) lanes = cols <= 64 ? 8u : cols <= 512 ? 64u : 256u;
  else
    while (lanes < 256 && lanes * per_lane < cols) lanes <<= 1;
  std::vector<runtime::ComputeDispatch> out;
  for (const RowChunk& chunk : row_chunks(engine, op, rows, cols)) {
    runtime::ComputeDispatch d;
    d.specialization = {lanes};
    d.groups = {groups_for(chunk.count, 256 / lanes), 1, 1};
    fill(d, chunk);
    out.push_back(std::move(d));
  }
  return out;
}

void append_row_items(runtime::ComputeDispatch& d, std::int64_t cols, RowCache cache, bool vec4) {
  const std::int64_t width = vec4 && cols % 4 == 0 ? 4 : 1, lanes = d.specialization[0];
  std::int64_t items = std::min(ceil_div(cols / width, lanes), 64 / width);
  if (cache == RowCache::Slots) {
    std::int64_t slots = 1;
    while (slots < 16 && slots < ceil_div(cols, 4 * lanes)) slots <<= 1;
    items = slots * 4 / width;
  }
  d.specialization.push_back(static_cast<std::uint32_t>(width));
  d.specialization.push_back(static_cast<std::uint32_t>(items));
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

Shape broadcast_shapes(const char* op, const std::vector<std::pair<const char*, Shape>>& shapes) {
  std::size_t rank = 0;
  for (const auto& s : shapes) rank = std::max(rank, s.second.rank());
  std::vector<std::int64_t> out(rank, 1);
  bool ok = true;
  for (const auto& s : shapes)
    for (std::size_t d = 0; d < s.second.rank(); ++d) {
      std::int64_t& o = out[rank - s.second.rank() + d];
      const std::int64_t e = s.second[d];
      if (o == 1) o = e;
      else if (e != 1 && e != o) ok = false;
    }
  if (!ok) {
    std::string names;
    for (const auto& s : shapes) names += fmt::format("{}{} {}", names.empty() ? "" : ", ", s.first, s.second);
    fail(ErrorKind::InvalidArgument, "{}: shapes do not broadcast: {}", op, names);
  }
  return Shape(out);
}

}  // namespace oa::detail
