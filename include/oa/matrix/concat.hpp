#pragma once
// Concatenation and its inverses along one axis (oa::matrix): concat, stack,
// chunk, split. Every dtype (f32, f16, bf16, i32, bool; the results have the
// operands' dtype), row-major, contiguous; the results are new contiguous
// Matrices (oa has no strided views). Gradients flow for the floating dtypes.
//
// Axes may be negative (-1 is the last axis). The ops view their operands as
// [outer, extent(axis) * inner] rows, outer the product of the extents before
// `axis` and inner of those after it, and copy column blocks of those rows with
// one dispatch per part: 4-byte dtypes as words (each thread copies 4
// elements; rows past the device's maxStorageBufferRange are split across
// dispatches), 2- and 1-byte dtypes by the strided copy (concat first fills
// its result with zeros, since parts may share a word). Zero extents are
// allowed and give empty results.
//
// Errors (oa::Error, kind InvalidArgument, naming the op, the argument and the
// shapes; nothing is recorded): undefined operands, operands of different
// dtypes (torch.cat promotes; oa's C++ API asks for a cast, while oa.cat in
// Python promotes as torch), rank 0, an axis out of range, operands on
// different engines, shapes that disagree outside `axis`, parts < 1, element
// counts past 2^32 - 1. Under autocast (oa/matrix/autocast.hpp) concat and
// stack widen mixed floating operands to the widest (torch.autocast's promote
// list) and keep one 16-bit dtype as it is.
#include <cstdint>
#include <vector>

#include "oa/matrix/matrix.hpp"

namespace oa::matrix {

// Concatenates xs (at least one) along `axis` (torch.cat(xs, axis)): every
// operand has the shape of the first except at `axis`; the result's extent
// there is the sum. Gradients flow to every operand (the matching slice of the
// output's gradient). Semantic op "oa::matrix::concat" (variadic inputs),
// attribute axis (normalised to be non-negative).
Matrix concat(const std::vector<Matrix>& xs, int axis = -1);

// Splits x into slices of ceil(n / parts) along `axis` (n its extent), the
// last one smaller when that does not divide n, as torch.chunk(x, parts,
// axis): so fewer than `parts` slices when n is not a multiple of them (5 in
// 3 gives 2, 2, 1; 6 in 4 gives 2, 2, 2; 2 in 5 gives 1, 1), and `parts` empty
// ones for an empty axis (at most 65536 of them). Gradients flow back as the
// concatenation of the slices' gradients (zeros for a slice that got none).
// Semantic op "oa::matrix::chunk" with one output per slice, attributes
// parts, axis.
std::vector<Matrix> chunk(const Matrix& x, std::int64_t parts, int axis = -1);

// Splits x along `axis` into parts of the given extents (torch.split(x,
// sizes, axis) with a list; uneven sizes allowed, zeros too): sizes are
// non-negative and sum to the axis's extent. Gradients flow back as the
// concatenation of the parts' gradients (zeros for a part that got none).
// Errors: sizes that do not sum to the extent, a negative size, no sizes.
// Semantic op "oa::matrix::split" with one output per size, attributes
// sizes, axis.
std::vector<Matrix> split(const Matrix& x, const std::vector<std::int64_t>& sizes, int axis = -1);

// Splits x into parts of extent `size` along `axis`, the last one smaller when
// size does not divide the extent (torch.split(x, size, axis) with an int).
// size >= 1 (0 only for an empty axis, giving one empty part). The same op as
// the list form. Note that split(x, {n}, axis) braces one int: it calls this
// form; pass std::vector<std::int64_t>{n} for a one-part list.
std::vector<Matrix> split(const Matrix& x, std::int64_t size, int axis = -1);

// xs (at least one, all of one shape) joined along a new axis `axis`
// (torch.stack(xs, axis)): axis ranges over [-(rank + 1), rank]; the result
// has extent xs.size() there. A thin composition, recorded as one
// "oa::matrix::concat" of the operands each given a unit axis (unsqueeze, a
// reshape that records nothing); gradients as concat's. Errors: operands of
// different shapes, dtypes (outside autocast) or engines, an axis out of
// range, rank-8 operands.
Matrix stack(const std::vector<Matrix>& xs, int axis = 0);

}  // namespace oa::matrix
