#pragma once
// Helpers shared by every op family's lowering (internal to the library).
#include <algorithm>
#include <functional>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "oa/matrix/matrix.hpp"
#include "oa/runtime/dispatch.hpp"
#include "oa_kernels.hpp"
#include "oa_push.hpp"

namespace oa::detail {

// Narrows a validated extent to the 32-bit shader ABI; throws InvalidArgument
// naming `op` and `what` past UINT32_MAX.
std::uint32_t shader_u32(std::int64_t value, const char* what, const char* op);

// An extent the op has already checked against the 32-bit shader ABI, as a
// push-constant value.
inline std::uint32_t u32(std::int64_t v) { return static_cast<std::uint32_t>(v); }

// a / b rounded up, for a >= 0 and b > 0.
inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

// Workgroups for `items` work items at `per_group` items per workgroup.
inline std::uint64_t groups_for(std::int64_t items, std::int64_t per_group) { return static_cast<std::uint64_t>(ceil_div(items, per_group)); }

// Workgroups of the same-layout elementwise kernels (matrix/elementwise_quads.glsl)
// for `count` elements of dtype d: 4 quads of 4 words an invocation, 256
// invocations a group (a 16-bit word holds two elements, a bool word four).
inline std::uint64_t elementwise_groups(DType d, std::int64_t count) {
  return groups_for(size_of(d) == 2 ? (count + 1) / 2 : size_of(d) == 1 ? (count + 3) / 4 : count, 4096);
}

// Pieces of a flat element range such that each piece's binding stays within
// the device's maxStorageBufferRange. Elementwise ops record one dispatch per piece.
struct ElementChunk {
  std::int64_t begin = 0;
  std::int64_t count = 0;
};
// The pieces of [0, count) as a range of ElementChunk (held in no container):
// for (auto c : element_chunks(engine, n)).
class ElementChunks {
 public:
  ElementChunks(std::int64_t count, std::int64_t per) : count_(count), per_(per) {}
  class iterator {
   public:
    iterator(std::int64_t begin, std::int64_t count, std::int64_t per) : begin_(begin), count_(count), per_(per) {}
    ElementChunk operator*() const { return {begin_, std::min(per_, count_ - begin_)}; }
    iterator& operator++() {
      begin_ += per_;
      return *this;
    }
    bool operator==(const iterator& o) const { return begin_ == o.begin_; }

   private:
    std::int64_t begin_, count_, per_;
  };
  iterator begin() const { return {0, count_, per_}; }
  iterator end() const { return {(count_ + per_ - 1) / per_ * per_, count_, per_}; }

 private:
  std::int64_t count_, per_;
};
ElementChunks element_chunks(const Engine& engine, std::int64_t count);

// The byte offset of chunk c's elements of dtype d in their storage, and their
// bytes rounded up to whole 4-byte words. Chunks start at multiples of 1024
// elements, so a 16-bit or Bool chunk starts on a 256-byte boundary.
std::pair<std::uint64_t, std::uint64_t> chunk_window(DType d, const ElementChunk& c);

// A binding of 4-byte words [first, first + count) of `storage`. The binding
// starts at `first`'s byte offset rounded down to 256 (the largest
// minStorageBufferOffsetAlignment Vulkan allows), so `offset`, the index of word
// `first` within the binding, is below 64 and keeps `first`'s residue modulo 4
// (vec4 access stays aligned). An empty range binds one word.
struct ElementWindow {
  runtime::BufferBinding binding;
  std::uint32_t offset = 0;
};
ElementWindow element_window(const std::shared_ptr<runtime::Storage>& storage, std::int64_t first, std::int64_t count,
                             runtime::Access access);

// The largest number of consecutive batch items whose element_windows all fit
// the device's maxStorageBufferRange, where operand i's item b spans words
// [b * stride_i, b * stride_i + extent_i) (stride 0: shared by every item). At
// least 1: an item too large on its own is left to the engine's range check.
struct BatchSpan {
  std::int64_t stride = 0;
  std::int64_t extent = 0;
};
std::int64_t window_batch(const Engine& engine, std::initializer_list<BatchSpan> operands);

// An index check on the device (Engine::register_device_check, kind
// OutOfRange): appends the check record's binding to `d` and returns the id
// for the kernel's push constants. The error reads "<op>: index <v> is out of
// range for <what> (extent <extent>); ..." with what the kernel found as <v>
// and <what> given by `what`, called only when the error is raised.
std::uint32_t bind_index_check(const Engine& engine, runtime::ComputeDispatch& d, const char* op, std::function<std::string()> what,
                               std::int64_t extent);

// Finds the view [outer, channels, inner] of `big` in which `small` broadcast to
// `big` is indexed by the channel alone: `small`'s non-unit extents (right
// aligned) equal one contiguous run of `big`'s axes. Returns false for any other
// pattern (and when small's rank exceeds big's).
bool broadcast_layout(const Shape& big, const Shape& small, std::int64_t& channels, std::int64_t& inner);

// The NumPy broadcast of `shapes` (right aligned; extents equal or 1), each
// named by its argument; throws InvalidArgument naming `op`, the arguments and
// the shapes.
Shape broadcast_shapes(const char* op, const std::vector<std::pair<const char*, Shape>>& shapes);

// Appends one matrix/strided_copy dispatch between the contiguous side
// (row-major over `extents`) and the strided side (element base + sum of
// coordinate * stride) of elements of `dtype` (4-, 2- or 1-byte): a gather
// (scatter false: dst contiguous, src strided) or a scatter (dst strided). A
// 2- or 1-byte scatter ORs its elements into dst's words, so dst must hold
// zeros there first. Binds whole storages; nothing for no elements.
void strided_copy(const char* op, bool scatter, DType dtype, const std::shared_ptr<runtime::Storage>& src,
                  const std::shared_ptr<runtime::Storage>& dst, const std::vector<std::int64_t>& extents,
                  const std::vector<std::int64_t>& strides, std::int64_t base, std::vector<runtime::ComputeDispatch>& ds);

// Appends the matrix/transpose dispatches (on `engine`) that write into `y` the `batch`
// items of `x`, each [r, c] row-major of `dtype` (any), as [c, r]; bool, or
// 16-bit with r odd, takes matrix/strided_copy. Binds the storages from
// element 0.
void transpose_into(const Engine& engine, const char* op, DType dtype, const std::shared_ptr<runtime::Storage>& x, const std::shared_ptr<runtime::Storage>& y,
                    std::int64_t batch, std::int64_t r, std::int64_t c, std::vector<runtime::ComputeDispatch>& ds);

// Appends the matrix/strided_copy dispatch that writes into `y` the elements
// of `x` (row-major, shape x_shape, of `dtype`: 32-bit, 16-bit or bool) with
// their axes reordered: y's axis k is x's axis dims[k] (the lowering of
// oa::matrix::permute). Callers check that the element count fits a u32.
void permute_into(const char* op, DType dtype, const std::shared_ptr<runtime::Storage>& x, const Shape& x_shape,
                  const std::shared_ptr<runtime::Storage>& y, const std::vector<std::int64_t>& dims,
                  std::vector<runtime::ComputeDispatch>& dispatches);

// The one lowering of the row kernels (softmax, log_softmax, cross_entropy,
// layer_norm; shaders/common/rows.glsl) over a row-major [rows, cols] tensor.
// A row gets `lanes` invocations (specialization constant 0) as RowLanes says,
// and a workgroup serves 256 / lanes rows.
// The rows are cut into chunks whose [count, cols] f32 windows fit the
// device's maxStorageBufferRange; every chunk but the last holds a multiple of
// 64 rows, so per-row windows of 4 or 8 bytes a row stay 256-byte aligned.
// `fill` completes each chunk's dispatch (kernel, further specialization
// constants, bindings, push constants), binding its windows with
// RowChunk::window. No rows, or rows of no columns, give one dispatch of no
// workgroups. Throws ResourceExhausted naming `op` when one row exceeds
// 1/64 of maxStorageBufferRange.
// Invocations per row. PerColumn: the power of two at or above cols (at most
// 256), for log_softmax and cross_entropy. EightColumns: 8 up to
// 64 columns, 64 up to 512, 256 beyond, for the softmax kernels, where fewer
// lanes per short row ran 2-3x faster on the H200 (rows of 77..512 columns).
// Registers: the power of two at or above cols / 32 (at most 256), for the
// layer_norm kernels, whose invocations keep their share of a row in registers.
enum class RowLanes { PerColumn, EightColumns, Registers };
struct RowChunk {
  std::int64_t first = 0;  // first row
  std::int64_t count = 0;  // rows
  // The window of this chunk's rows in `storage`, `words` 4-byte words a row.
  runtime::BufferBinding window(std::shared_ptr<runtime::Storage> storage, std::int64_t words, runtime::Access access) const;
};
std::vector<runtime::ComputeDispatch> lower_rows(const Engine& engine, const char* op, std::int64_t rows, std::int64_t cols,
                                                 RowLanes lanes, const std::function<void(runtime::ComputeDispatch&, const RowChunk&)>& fill);
// The chunks of lower_rows alone, for row kernels with their own workgroup
// layout: at least one (of no rows when rows or cols is 0).
std::vector<RowChunk> row_chunks(const Engine& engine, const char* op, std::int64_t rows, std::int64_t cols);

// The items of a row an invocation keeps in registers (CACHE of
// shaders/common/row_items.glsl), at most 64 floats. Share: its whole share
// of the row, for the layer_norm kernels. Slots: the power of two of slots of
// 4 columns at or above its share, at most 16, for the kernels of
// shaders/common/row_slots.glsl.
enum class RowCache { Share, Slots };
// Appends specialization constants 1 (WIDTH) and 2 (CACHE) of
// shaders/common/row_items.glsl to a dispatch of lower_rows (whose constant 0
// is the lanes a row) over rows of `cols` columns: WIDTH 4 (16-byte loads)
// when cols % 4 == 0 and `vec4` (false for group_norm rows whose channels are
// not whole items), else 1; CACHE as `cache` says.
void append_row_items(runtime::ComputeDispatch& d, std::int64_t cols, RowCache cache, bool vec4 = true);

// Row reductions for op lowerings (the passes of oa::matrix::sum, max and
// argmax; shaders/matrix/reduce.comp): appends to `dispatches` the passes that
// reduce `rows` rows of `length` f32 items of `in` into `out`, [rows] f32
// values (sums times `scale`) or, for ArgMax, i32 indices. Cooperative trees
// over fixed segments; deterministic. Callers check that rows * length fits a u32.
enum class RowReduction : std::uint32_t { Sum = 0, Max = 1, ArgMax = 2 };
void reduce_rows(const Engine& engine, std::shared_ptr<runtime::Storage> in, std::int64_t rows, std::int64_t length, RowReduction op,
                 float scale, const std::shared_ptr<runtime::Storage>& out, std::vector<runtime::ComputeDispatch>& dispatches);

// Appends the matrix/compare dispatches writing mask = (x != 0): i32 x, Bool
// mask of x's element count.
void nonzero_into(const Matrix& x, const Matrix& mask, std::vector<runtime::ComputeDispatch>& dispatches);

// Channel sums for op lowerings (the lowering of oa::matrix::sum_to): appends
// the passes that sum the f32 view [outer, channels, inner] of `in` over outer
// and inner into `out` [channels] (zeros when outer * inner is 0).
// Deterministic; callers check that the element count fits a u32.
void sum_channels(const Engine& engine, const std::shared_ptr<runtime::Storage>& in, std::int64_t outer, std::int64_t channels,
                  std::int64_t inner, const std::shared_ptr<runtime::Storage>& out,
                  std::vector<runtime::ComputeDispatch>& dispatches);

}  // namespace oa::detail
