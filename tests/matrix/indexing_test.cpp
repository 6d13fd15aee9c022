// index_select, gather, scatter_add, where, masked_fill, masked_select, nonzero, expand, split
// and stack against the f64 references (reference/indexing.hpp, concat.hpp),
// with finite-difference gradients, traces and argument errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "oa/oa.hpp"
#include "reference/concat.hpp"
#include "reference/indexing.hpp"
#include "support/expect.hpp"
#include "support/gradcheck.hpp"

namespace {

using oa::DType;
using oa::ErrorKind;
using namespace oa::test::gradcheck_names;
namespace mx = oa::matrix;
namespace ref = oa::reference;

using oa_test::f64;

// The trace of `name` on a differentiable input, then sum_all and backward:
// four ops (name, sum_all, sum_all backward, name backward), the forward in
// one dispatch.
void expect_op_and_backward(const std::vector<oa::SemanticOp>& ops, const std::string& name) {
  ASSERT_EQ(ops.size(), 4u);
  EXPECT_EQ(ops[0].name, name);
  EXPECT_EQ(ops[0].dispatches, 1u);
  EXPECT_EQ(ops[3].name, name);
  EXPECT_TRUE(ops[3].backward);
}

// Deterministic i32 values in [low, high).
std::vector<std::int32_t> ints(std::int64_t n, std::uint64_t seed, int low, int high) {
  std::vector<std::int32_t> out;
  for (float v : oa::test::test_values(n, seed, low, high)) out.push_back(static_cast<std::int32_t>(std::floor(v)));
  return out;
}

// `axis` of an operand of `shape`, a negative one counted from the end.
std::size_t axis_of(const Shape& shape, int axis) {
  return static_cast<std::size_t>(axis < 0 ? axis + static_cast<int>(shape.rank()) : axis);
}

// An I32 index of `index_shape` into `shape` along `axis`: random values in
// [0, extent) from `seed`, and the axis counted from the front.
struct RandomIndex {
  std::size_t axis;
  std::vector<std::int32_t> values;
  Matrix index;
};
RandomIndex random_index(const Shape& shape, int axis, const Shape& index_shape, std::uint64_t seed) {
  const std::size_t a = axis_of(shape, axis);
  std::vector<std::int32_t> values = ints(index_shape.numel(), seed, 0, static_cast<int>(shape[a]));
  const Matrix index = Matrix::from_i32(index_shape, values);
  return {a, std::move(values), index};
}

TEST(MatrixIndexing, IndexSelectMatchesTheReferenceWithGradients) {
  struct Case {
    Shape shape;
    int dim;
    std::vector<std::int32_t> index;
  };
  // Repeated indices (the gradient sums them), every axis, negative dims.
  const std::vector<Case> cases = {{{7}, 0, {3, 0, 3, 6, 3}},
                                   {{4, 5}, 0, {1, 1, 3}},
                                   {{4, 5}, -1, {4, 0, 2, 0, 0, 1}},
                                   {{2, 3, 4}, 1, {2, 2}},
                                   {{2, 3, 4, 3}, -2, {3, 0, 1, 1, 2, 0, 3}},
                                   {{3, 4}, 0, {}}};
  std::uint64_t seed = 1;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.shape.to_string() + " dim " + std::to_string(c.dim));
    const std::size_t dim = axis_of(c.shape, c.dim);
    const Matrix index = Matrix::from_i32({static_cast<std::int64_t>(c.index.size())}, c.index);
    gradcheck({random_input(c.shape, seed++)}, [&](const std::vector<Matrix>& x) { return mx::index_select(x[0], c.dim, index); },
              [&](const Inputs& x) { return ref::index_select(x[0], c.shape.to_vector(), dim, c.index); });
  }
  // One semantic op forward and one backward; a rank-0 index keeps the axis; i32 values.
  const Matrix x = Matrix::from_vector({3, 4}, oa::test::test_values(12, 5));
  oa::set_requires_grad(x);
  oa::TraceCapture trace(x.engine());
  const Matrix y = mx::index_select(x, 1, Matrix::from_i32({}, std::vector<std::int32_t>{2}));
  oa::backward(mx::sum_all(y));
  const auto ops = trace.ops();
  ASSERT_NO_FATAL_FAILURE(expect_op_and_backward(ops, "oa::matrix::index_select"));
  EXPECT_EQ(std::get<std::int64_t>(*ops[0].attribute("dim")), 1);
  EXPECT_EQ(y.shape(), Shape({3, 1}));
  const std::vector<std::int32_t> xi = ints(12, 6, -50, 50);
  const auto yi = mx::index_select(Matrix::from_i32({3, 4}, xi), 0, Matrix::from_i32({2}, std::vector<std::int32_t>{2, 0})).to_i32();
  std::vector<std::int32_t> want(xi.begin() + 8, xi.end());
  want.insert(want.end(), xi.begin(), xi.begin() + 4);
  EXPECT_EQ(yi, want);
  // Host indices are checked, then uploaded: the same result as device ones.
  const std::vector<std::int32_t> host{2, 0, 2};
  EXPECT_EQ(mx::index_select(x, 0, host).to_vector(), mx::index_select(x, 0, Matrix::from_i32({3}, host)).to_vector());
}

// An index outside [0, N) in a device index tensor (index_select, gather,
// take_along_axis, scatter_add) is found by the kernel and raised as
// OutOfRange at the next host read or synchronize, naming the op, the index,
// x and the extent; once reported, the engine goes on as before.
TEST(MatrixIndexing, DeviceIndicesOutOfRangeRaiseAtTheNextHostRead) {
  const std::vector<float> xv = oa::test::test_values(12, 11);
  const Matrix x = Matrix::from_vector({4, 3}, xv);
  struct Case {
    std::function<Matrix()> call;
    std::vector<const char*> fragments;
  };
  const std::vector<Case> cases = {
      {[&] { return mx::index_select(x, 0, Matrix::from_i32({5}, std::vector<std::int32_t>{1, -1, 2, 1, 3})); },
       {"oa::matrix::index_select", "index -1 is out of range for dim 0 of x [4, 3] (extent 4)"}},
      {[&] { return mx::index_select(x, 1, Matrix::from_i32({2}, std::vector<std::int32_t>{0, 3})); },
       {"oa::matrix::index_select", "index 3", "dim 1 of x [4, 3] (extent 3)"}},
      {[&] { return mx::gather(x, 0, Matrix::from_i32({2, 3}, std::vector<std::int32_t>{0, 3, 4, 1, 2, 0})); },
       {"oa::matrix::gather", "index 4", "dim 0 of x [4, 3]"}},
      {[&] { return mx::take_along_axis(x, Matrix::from_i32({4, 1}, std::vector<std::int32_t>{0, 1, -7, 2}), 1); },
       {"oa::matrix::take_along_axis", "index -7"}},
      {[&] { return mx::scatter_add(x, 0, Matrix::from_i32({2, 3}, std::vector<std::int32_t>{0, 3, -2, 1, 2, 1}), Matrix::ones({2, 3})); },
       {"oa::matrix::scatter_add", "index -2", "dim 0 of x [4, 3] (extent 4)"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.fragments[0]);
    Matrix y;
    ASSERT_NO_THROW(y = c.call());  // nothing is read at the op
    EXPECT_TRUE(oa_test::throws([&] { y.to_vector(); }, ErrorKind::OutOfRange, c.fragments));
    // Reported once: the engine and the next op are fine.
    EXPECT_NO_THROW(x.engine().synchronize());
    EXPECT_EQ(mx::index_select(x, 0, Matrix::from_i32({1}, std::vector<std::int32_t>{2})).to_vector(),
              std::vector<float>(xv.begin() + 6, xv.begin() + 9));
  }
  // The discrete-GPU path (the record copied through staging memory) reports alike.
  {
    oa::EngineOptions options;
    options.staging_transfers = true;
    const oa::Engine staged(options);
    const Matrix xs = Matrix::from_vector({4, 3}, xv, staged);
    const Matrix y = mx::index_select(xs, 0, Matrix::from_i32({2}, std::vector<std::int32_t>{3, 4}, staged));
    EXPECT_TRUE(oa_test::throws([&] { y.to_vector(); }, ErrorKind::OutOfRange, {"oa::matrix::index_select", "index 4"}));
    EXPECT_NO_THROW(staged.synchronize());
  }
  // synchronize() reports too; so does a read of another tensor.
  const Matrix bad = mx::index_select(x, 0, Matrix::from_i32({1}, std::vector<std::int32_t>{9}));
  EXPECT_TRUE(oa_test::throws([&] { x.engine().synchronize(); }, ErrorKind::OutOfRange, {"index 9"}));
  mx::gather(x, 1, Matrix::from_i32({4, 1}, std::vector<std::int32_t>{0, 0, 5, 0}));
  EXPECT_TRUE(oa_test::throws([&] { x.to_vector(); }, ErrorKind::OutOfRange, {"oa::matrix::gather", "index 5"}));
}

TEST(MatrixIndexing, GatherMatchesTheReferenceWithGradients) {
  struct Case {
    Shape shape, index_shape;
    int dim;
  };
  // Index smaller than x outside dim (x is cut), longer than x along dim (repeats).
  const std::vector<Case> cases = {{{6}, {9}, 0},          {{4, 5}, {4, 5}, 1},       {{4, 5}, {7, 5}, 0},
                                   {{4, 5}, {2, 3}, -1},   {{3, 4, 5}, {2, 6, 5}, 1}, {{2, 3, 4, 2}, {2, 3, 3, 1}, 2}};
  std::uint64_t seed = 30;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.shape.to_string() + " index " + c.index_shape.to_string());
    const RandomIndex ix = random_index(c.shape, c.dim, c.index_shape, seed + 100);
    gradcheck({random_input(c.shape, seed++)}, [&](const std::vector<Matrix>& x) { return mx::gather(x[0], c.dim, ix.index); },
              [&](const Inputs& x) { return ref::gather(x[0], c.shape.to_vector(), ix.axis, ix.values, c.index_shape.to_vector()); });
  }
  // Equal extents outside dim: one op; a smaller index adds one slice first.
  const Matrix x = Matrix::zeros({4, 5});
  const Matrix index = Matrix::from_i32({2, 3}, ints(6, 3, 0, 4));
  oa::TraceCapture trace(x.engine());
  mx::gather(x, 0, Matrix::from_i32({2, 5}, ints(10, 3, 0, 4)));
  mx::gather(x, 0, index);
  const auto ops = trace.ops();
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[0].name, "oa::matrix::gather");
  EXPECT_EQ(ops[1].name, "oa::matrix::slice");
  EXPECT_EQ(ops[2].name, "oa::matrix::gather");
}

TEST(MatrixIndexing, ScatterAddMatchesTheReferenceWithGradients) {
  struct Case {
    Shape shape, index_shape, src_shape;
    int dim;
  };
  const std::vector<Case> cases = {{{5}, {8}, {8}, 0},
                                   {{4, 3}, {6, 3}, {6, 3}, 0},
                                   {{4, 3}, {4, 5}, {5, 6}, -1},
                                   {{2, 5, 3}, {2, 7, 3}, {3, 7, 4}, 1},
                                   {{3, 2}, {0, 2}, {1, 2}, 0}};
  std::uint64_t seed = 50;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.shape.to_string() + " index " + c.index_shape.to_string());
    const RandomIndex ix = random_index(c.shape, c.dim, c.index_shape, seed + 100);
    gradcheck({random_input(c.shape, seed), random_input(c.src_shape, seed + 1)},
              [&](const std::vector<Matrix>& x) { return mx::scatter_add(x[0], c.dim, ix.index, x[1]); },
              [&](const Inputs& x) {
                return ref::scatter_add(x[0], c.shape.to_vector(), ix.axis, ix.values, c.index_shape.to_vector(), x[1],
                                        c.src_shape.to_vector());
              });
    seed += 2;
  }
  // Many contributions to one element sum in index order: bitwise the same every run.
  const Matrix x = Matrix::zeros({2, 3});
  const Matrix src = Matrix::from_vector({300, 3}, oa::test::test_values(900, 9, -1e3, 1e3));
  const Matrix index = Matrix::from_i32({300, 3}, ints(900, 10, 0, 2));
  const auto first = mx::scatter_add(x, 0, index, src).to_vector();
  EXPECT_EQ(mx::scatter_add(x, 0, index, src).to_vector(), first);
  EXPECT_TRUE(oa_test::near(first, ref::scatter_add(std::vector<double>(6, 0.0), {2, 3}, 0, index.to_i32(), {300, 3}, f64(src.to_vector()), {300, 3}),
                            1e-2, 1e-5));
}

TEST(MatrixIndexing, WhereBroadcastsAllThreeOperandsWithGradients) {
  struct Case {
    Shape cond, x, y, out;
  };
  const std::vector<Case> cases = {{{3, 4}, {3, 4}, {3, 4}, {3, 4}},
                                   {{3, 1}, {1, 4}, {4}, {3, 4}},
                                   {{2, 1, 4}, {3, 1}, {}, {2, 3, 4}},
                                   {{5}, {2, 1, 3, 1}, {1, 4, 1, 5}, {2, 4, 3, 5}},
                                   {{1}, {2, 3}, {2, 3}, {2, 3}}};
  std::uint64_t seed = 70;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.cond.to_string() + " " + c.x.to_string() + " " + c.y.to_string());
    std::vector<std::uint8_t> cv;
    for (auto v : ints(c.cond.numel(), seed + 50, 0, 2)) cv.push_back(static_cast<std::uint8_t>(v));
    const Matrix cond = Matrix::from_bool(c.cond, cv);
    const Matrix y = gradcheck({random_input(c.x, seed), random_input(c.y, seed + 1)},
                               [&](const std::vector<Matrix>& v) { return mx::where(cond, v[0], v[1]); },
                               [&](const Inputs& v) {
                                 return ref::where(cv, c.cond.to_vector(), v[0], c.x.to_vector(), v[1], c.y.to_vector(), c.out.to_vector());
                               });
    EXPECT_EQ(y.shape(), c.out);
    seed += 2;
  }
  // Broadcast operands are expanded first (recorded), the selection is one op.
  const Matrix x = Matrix::zeros({3, 4}), row = Matrix::zeros({4});
  const Matrix cond = Matrix::from_bool({3, 1}, std::vector<bool>{true, false, true});
  oa::TraceCapture trace(x.engine());
  mx::where(cond, x, row);
  const auto ops = trace.ops();
  ASSERT_EQ(ops.size(), 2u);
  EXPECT_EQ(ops[0].name, "oa::matrix::expand");
  EXPECT_EQ(ops[1].name, "oa::matrix::where");
  EXPECT_EQ(ops[1].dispatches, 1u);
}

TEST(MatrixIndexing, WhereSelectsInt32ValuesBitForBit) {
  // Words whose f32 reading is a NaN (-1, 0x7fa00000, a signalling one) or a
  // denormal (1) must come through unchanged.
  const std::vector<std::int32_t> xv = {-1, 0x7fa00000, 1, std::numeric_limits<std::int32_t>::min(), 7, -7};
  const std::vector<std::int32_t> yv = {0x7fc00001, 0, std::numeric_limits<std::int32_t>::max(), 2, 3, 4};
  const Matrix x = Matrix::from_i32({2, 3}, xv), y = Matrix::from_i32({2, 3}, yv);
  const std::vector<bool> pick = {true, false, true};
  const Matrix cond = Matrix::from_bool({3}, pick);
  const Matrix r = mx::where(cond, x, y);
  ASSERT_EQ(r.dtype(), oa::DType::I32);
  const auto got = r.to_i32();
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], pick[i % 3] ? xv[i] : yv[i]) << i;
}

// Bool x and y (one byte an element, four to a word) at sizes that leave a
// partial last word and span several workgroups, with broadcast conditions.
TEST(MatrixIndexing, WhereAndMaskedFillSelectBoolValues) {
  std::uint64_t seed = 300;
  const auto random_bools = [&seed](std::int64_t n) {
    std::vector<std::uint8_t> v;
    for (auto b : ints(n, seed++, 0, 2)) v.push_back(static_cast<std::uint8_t>(b));
    return v;
  };
  const auto doubles = [](const std::vector<std::uint8_t>& v) { return std::vector<double>(v.begin(), v.end()); };
  for (std::int64_t n : {1, 3, 6, 13, 1027, 4099}) {
    SCOPED_TRACE(n);
    const Shape xs{2, n};
    const auto cv = random_bools(n), xv = random_bools(2 * n), yv = random_bools(2 * n), rows = random_bools(2);
    const Matrix cond = Matrix::from_bool({n}, cv), x = Matrix::from_bool(xs, xv), y = Matrix::from_bool(xs, yv);
    const Matrix picked = mx::where(cond, x, y);
    ASSERT_EQ(picked.dtype(), DType::Bool);
    EXPECT_EQ(picked.shape(), xs);
    EXPECT_EQ(doubles(picked.to_bool()), ref::where(cv, {n}, doubles(xv), {2, n}, doubles(yv), {2, n}, {2, n}));
    // A [2, 1] mask, and any nonzero value (NaN too) filling true, zero false.
    const Matrix mask = Matrix::from_bool({2, 1}, rows);
    for (double value : {-2.5, 0.0, std::numeric_limits<double>::quiet_NaN()}) {
      SCOPED_TRACE(value);
      const Matrix filled = mx::masked_fill(x, mask, value);
      ASSERT_EQ(filled.dtype(), DType::Bool);
      EXPECT_EQ(doubles(filled.to_bool()), ref::where(rows, {2, 1}, {}, {2, n}, doubles(xv), {2, n}, {2, n}, value != 0 ? 1.0 : 0.0));
    }
  }
}

// nonzero and where(condition) against the host reference over ranks 0 to 4,
// empty, all-false, all-true and random masks, sizes around the kernel's
// blocks of 1024, and each dtype (a float's -0 is zero).
TEST(MatrixIndexing, NonzeroMatchesAHostReference) {
  const std::vector<Shape> shapes = {{}, {0}, {7}, {1024}, {1025}, {3, 0, 2}, {33, 65}, {2, 3, 4, 5}, {3, 1111}, {5000}};
  std::uint64_t seed = 400;
  for (const Shape& shape : shapes) {
    for (int fill : {0, 1, 2}) {  // all false, all true, random
      SCOPED_TRACE(shape.to_string() + " fill " + std::to_string(fill));
      std::vector<double> values;
      for (auto v : ints(shape.numel(), seed++, -2, 3)) values.push_back(fill == 2 ? v : fill);
      const std::vector<double> expected = ref::nonzero(values, shape.to_vector());
      const auto rank = static_cast<std::int64_t>(shape.rank());
      const std::int64_t k = rank == 0 ? (values[0] != 0 ? 1 : 0) : static_cast<std::int64_t>(expected.size()) / rank;
      std::vector<std::uint8_t> bytes;
      std::vector<std::int32_t> whole;
      std::vector<float> floats;
      for (double v : values) {
        bytes.push_back(v != 0);
        whole.push_back(static_cast<std::int32_t>(v));
        floats.push_back(v == 0 ? -0.0f : static_cast<float>(v));
      }
      for (const Matrix& x : {Matrix::from_bool(shape, bytes), Matrix::from_i32(shape, whole), Matrix::from_vector(shape, floats),
                              Matrix::from_vector(shape, floats, DType::F16)}) {
        SCOPED_TRACE(oa::to_string(x.dtype()));
        const Matrix rows = mx::nonzero(x);
        ASSERT_EQ(rows.dtype(), DType::I32);
        ASSERT_EQ(rows.shape(), (Shape{k, rank}));
        const auto got = rows.to_i32();
        EXPECT_EQ(std::vector<double>(got.begin(), got.end()), expected);
        // where(condition): coordinate d of every row (a rank-0 x counts as [1]: index 0).
        const std::vector<Matrix> columns = mx::where(x);
        ASSERT_EQ(columns.size(), static_cast<std::size_t>(std::max<std::int64_t>(rank, 1)));
        for (std::size_t d = 0; d < columns.size(); ++d) {
          ASSERT_EQ(columns[d].shape(), (Shape{k}));
          const auto column = columns[d].to_i32();
          for (std::int64_t r = 0; r < k; ++r)
            EXPECT_EQ(column[static_cast<std::size_t>(r)], rank == 0 ? 0 : got[static_cast<std::size_t>(r * rank) + d]);
        }
      }
    }
  }
  // More than 256 blocks of 1024: the prefix-sum pass gives each invocation several blocks.
  {
    const Shape shape{300 * 1024 + 5};
    std::vector<std::uint8_t> bytes;
    std::vector<double> values;
    for (auto v : ints(shape.numel(), 499, 0, 4)) {
      bytes.push_back(v == 0);  // about a quarter true
      values.push_back(v == 0);
    }
    const auto got = mx::nonzero(Matrix::from_bool(shape, bytes)).to_i32();
    EXPECT_EQ(std::vector<double>(got.begin(), got.end()), ref::nonzero(values, shape.to_vector()));
  }
  // A bool x: the count (oa::matrix::sum, read back), then one op of three dispatches; no gradient.
  const Matrix x = Matrix::from_vector({2, 3}, std::vector<float>{0, 1, 0, 2, 0, 3});
  oa::set_requires_grad(x);
  oa::TraceCapture trace(x.engine());
  const Matrix flags = mx::gt(x, 0.5f);
  const Matrix rows = mx::nonzero(flags);
  EXPECT_FALSE(oa::requires_grad(rows));
  const auto ops = trace.ops();
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops[1].name, "oa::matrix::sum");
  EXPECT_EQ(ops[2].name, "oa::matrix::nonzero");
  EXPECT_EQ(ops[2].dispatches, 3u);
  EXPECT_EQ(rows.to_i32(), (std::vector<std::int32_t>{0, 1, 1, 0, 1, 2}));
}

TEST(MatrixIndexing, MaskedFillBroadcastsTheMaskWithGradients) {
  struct Case {
    Shape x, mask, out;
    float value;
  };
  const std::vector<Case> cases = {{{3, 4}, {3, 4}, {3, 4}, 2.5f},
                                   {{3, 4}, {4}, {3, 4}, -1e4f},
                                   {{2, 3, 4}, {2, 1, 4}, {2, 3, 4}, 0.0f},
                                   {{3, 1}, {2, 3, 5}, {2, 3, 5}, 7.0f},
                                   {{5}, {}, {5}, -3.0f}};
  std::uint64_t seed = 90;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.x.to_string() + " mask " + c.mask.to_string());
    std::vector<std::uint8_t> mv;
    for (auto v : ints(c.mask.numel(), seed + 50, 0, 2)) mv.push_back(static_cast<std::uint8_t>(v));
    const Matrix mask = Matrix::from_bool(c.mask, mv);
    gradcheck({random_input(c.x, seed++)}, [&](const std::vector<Matrix>& v) { return mx::masked_fill(v[0], mask, c.value); },
              [&](const Inputs& v) { return ref::where(mv, c.mask.to_vector(), {}, {}, v[0], c.x.to_vector(), c.out.to_vector(), c.value); });
  }
  // -inf fills exactly, as an attention mask needs.
  const Matrix m = Matrix::from_bool({3}, std::vector<bool>{false, true, false});
  const auto v = mx::masked_fill(Matrix::ones({2, 3}), m, -std::numeric_limits<float>::infinity()).to_vector();
  EXPECT_EQ(v[1], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(v[4], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(v[0], 1.0f);
  // f16 fills its largest finite value and infinities (a finite value past 65504 raises); bf16's range is f32's.
  const Matrix ones16 = mx::cast(Matrix::ones({2, 3}), DType::F16);
  EXPECT_EQ(mx::masked_fill(ones16, m, 65504.0f).to_vector()[1], 65504.0f);
  EXPECT_EQ(mx::masked_fill(ones16, m, -std::numeric_limits<float>::infinity()).to_vector()[4], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(mx::masked_fill(mx::cast(Matrix::ones({2, 3}), DType::BF16), m, 70000.0f).to_vector()[1], 70144.0f);  // to nearest even
  // i32 (token ids, say): the value truncated toward zero as torch converts it, every int32 exact.
  const std::vector<std::int32_t> ids{5, -6, 7, 8, 9, 10};
  const Matrix x32 = Matrix::from_i32({2, 3}, ids);
  for (double v : {-1.0, 50257.9, -5.9, 16777217.0, 123456789.0, 2147483647.9, -2147483648.0}) {
    SCOPED_TRACE(v);
    const Matrix y = mx::masked_fill(x32, m, v);
    EXPECT_EQ(y.dtype(), DType::I32);
    const auto got = y.to_i32();
    for (std::size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(got[i], i % 3 == 1 ? static_cast<std::int32_t>(std::trunc(v)) : ids[i]);
  }
}

TEST(MatrixIndexing, MaskedSelectTakesTheRowsOfTheLeadingAxesWithGradients) {
  // x [2, 3, 2]; a mask [2, 3] selects rows of 2, a mask of x's shape elements.
  const std::vector<bool> rows{true, false, true, false, false, true};
  const Matrix mask = Matrix::from_bool({2, 3}, rows);
  gradcheck({random_input({2, 3, 2}, 120)}, [&](const std::vector<Matrix>& v) { return mx::masked_select(v[0], mask); },
            [&](const Inputs& v) {
              std::vector<double> out;
              for (std::size_t r = 0; r < rows.size(); ++r)
                if (rows[r]) out.insert(out.end(), {v[0][2 * r], v[0][2 * r + 1]});
              return out;
            });
  const Matrix x = Matrix::from_vector({2, 2}, std::vector<float>{1, 2, 3, 4});
  const Matrix all = mx::masked_select(x, Matrix::from_bool({2, 2}, std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(all.shape(), Shape({2}));
  EXPECT_EQ(all.to_vector(), (std::vector<float>{2, 3}));
  EXPECT_EQ(mx::masked_select(x, Matrix::from_bool({2}, std::vector<bool>{false, false})).shape(), Shape({0, 2}));
  EXPECT_TRUE(oa_test::throws([&] { mx::masked_select(x, Matrix::from_bool({3}, std::vector<bool>(3, true))); },
                              ErrorKind::InvalidArgument, {"oa::matrix::masked_select", "mask [3]", "leading extents", "x [2, 2]"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::masked_select(x, Matrix::zeros({2})); }, ErrorKind::InvalidArgument,
                              {"oa::matrix::masked_select", "mask"}));
}

TEST(MatrixIndexing, ExpandBroadcastsUnitAxesWithGradients) {
  struct Case {
    Shape x;
    std::vector<std::int64_t> shape, out;
  };
  const std::vector<Case> cases = {{{1}, {5}, {5}},
                                   {{3, 1}, {-1, 4}, {3, 4}},
                                   {{4}, {2, 3, -1}, {2, 3, 4}},
                                   {{2, 1, 3}, {2, 2, 5, 3}, {2, 2, 5, 3}},
                                   {{1, 3, 1}, {4, -1, 2}, {4, 3, 2}},
                                   {{}, {2, 3}, {2, 3}}};
  std::uint64_t seed = 110;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.x.to_string());
    gradcheck({random_input(c.x, seed++)}, [&](const std::vector<Matrix>& v) { return mx::expand(v[0], c.shape); },
              [&](const Inputs& v) { return ref::expand(v[0], c.x.to_vector(), c.out); });
  }
  // The same shape is x itself; an extent of 1 may expand to 0; i32 elements.
  const Matrix x = Matrix::zeros({3, 1});
  oa::TraceCapture trace(x.engine());
  EXPECT_EQ(mx::expand(x, {3, -1}).storage(), x.storage());
  EXPECT_TRUE(trace.ops().empty());
  EXPECT_EQ(mx::expand(x, {3, 0}).shape(), Shape({3, 0}));
  const auto yi = mx::expand(Matrix::from_i32({2, 1}, std::vector<std::int32_t>{-4, 9}), {2, 3}).to_i32();
  EXPECT_EQ(yi, (std::vector<std::int32_t>{-4, -4, -4, 9, 9, 9}));
}

TEST(MatrixIndexing, SplitTakesUnevenSizesAndStackANewAxis) {
  const Shape s{3, 7, 2};
  const std::vector<std::int64_t> sizes{2, 0, 4, 1};
  for (std::size_t part = 0; part < sizes.size(); ++part) {
    SCOPED_TRACE(part);
    if (sizes[part] == 0) continue;
    std::int64_t start = 0;
    for (std::size_t p = 0; p < part; ++p) start += sizes[p];
    gradcheck({random_input(s, 130)}, [&](const std::vector<Matrix>& v) { return mx::split(v[0], sizes, -2)[part]; },
              [&](const Inputs& v) { return ref::slice(v[0], s.to_vector(), 1, start, start + sizes[part], 1); });
  }
  // An int size: parts of that extent, the last one shorter; one semantic op.
  const Matrix x = Matrix::from_vector({7, 2}, oa::test::test_values(14, 3));
  oa::TraceCapture trace(x.engine());
  const auto parts = mx::split(x, 3, 0);
  const auto ops = trace.ops();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].name, "oa::matrix::split");
  EXPECT_EQ(std::get<std::vector<std::int64_t>>(*ops[0].attribute("sizes")), (std::vector<std::int64_t>{3, 3, 1}));
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[2].shape(), Shape({1, 2}));
  EXPECT_TRUE(oa_test::near(parts[2].to_vector(), ref::slice(f64(x.to_vector()), {7, 2}, 0, 6, 7, 1), 0, 0));
  // stack on every position, negative ones too: the concatenation of unit-axis views.
  const Shape e{2, 3};
  for (int axis : {0, 1, 2, -1, -3}) {
    SCOPED_TRACE(axis);
    const std::size_t a = static_cast<std::size_t>(axis < 0 ? axis + 3 : axis);
    std::vector<std::int64_t> unit = e.to_vector();
    unit.insert(unit.begin() + static_cast<std::ptrdiff_t>(a), 1);
    gradcheck({random_input(e, 140), random_input(e, 141), random_input(e, 142)},
              [&](const std::vector<Matrix>& v) { return mx::stack(v, axis); },
              [&](const Inputs& v) { return ref::concat(v, {unit, unit, unit}, a); });
  }
}

TEST(MatrixIndexing, TrilAndTriuKeepATriangleWithGradients) {
  struct Case {
    Shape shape;
    std::int64_t diagonal;
  };
  // Square and not, batched, diagonals above, below and past the matrix.
  const std::vector<Case> cases = {{{4, 4}, 0}, {{3, 5}, 1}, {{5, 3}, -2}, {{2, 3, 4}, 0}, {{2, 1, 3, 3}, -1}, {{3, 4}, 9}, {{3, 4}, -7}};
  std::uint64_t seed = 150;
  for (const auto& c : cases) {
    for (bool upper : {false, true}) {
      SCOPED_TRACE(c.shape.to_string() + " diagonal " + std::to_string(c.diagonal) + (upper ? " triu" : " tril"));
      gradcheck({random_input(c.shape, seed++)},
                [&](const std::vector<Matrix>& x) { return upper ? mx::triu(x[0], c.diagonal) : mx::tril(x[0], c.diagonal); },
                [&](const Inputs& x) { return ref::triangle(x[0], c.shape.to_vector(), c.diagonal, upper); });
    }
  }
  // One op forward and one backward, traced with its diagonal; i32 values.
  const Matrix x = Matrix::from_vector({3, 3}, oa::test::test_values(9, 160));
  oa::set_requires_grad(x);
  oa::TraceCapture trace(x.engine());
  oa::backward(mx::sum_all(mx::triu(x, 1)));
  const auto ops = trace.ops();
  ASSERT_NO_FATAL_FAILURE(expect_op_and_backward(ops, "oa::matrix::triu"));
  EXPECT_EQ(std::get<std::int64_t>(*ops[0].attribute("diagonal")), 1);
  EXPECT_EQ(oa::grad(x).to_vector(), (std::vector<float>{0, 1, 1, 0, 0, 1, 0, 0, 0}));
  const std::vector<std::int32_t> xi = ints(6, 161, -50, 50);
  EXPECT_EQ(mx::tril(Matrix::from_i32({2, 3}, xi)).to_i32(), (std::vector<std::int32_t>{xi[0], 0, 0, xi[3], xi[4], 0}));
}

// The op table (tests/ops/indexing_ops.cpp) checks these ops on every dtype; here a causal mask, i32 beyond
// f32's 2^24, and 16-bit gradients that stay 16-bit.
TEST(MatrixIndexing, CausalMasksExactIntegersAndHalfGradients) {
  const Matrix causal = mx::triu(Matrix::from_bool({5, 5}, std::vector<bool>(25, true)), 1);
  ASSERT_EQ(causal.dtype(), DType::Bool);
  const std::vector<std::uint8_t> got = causal.to_bool();
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], i % 5 > i / 5 ? 1 : 0) << "element " << i;

  const std::vector<std::int32_t> big{16777217, 16777216, std::numeric_limits<std::int32_t>::min(),
                                      std::numeric_limits<std::int32_t>::max(), 16777217};
  const auto top = mx::topk(Matrix::from_i32({5}, big), 5);
  EXPECT_EQ(top.values.dtype(), DType::I32);
  EXPECT_EQ(top.indices.to_i32(), (std::vector<std::int32_t>{3, 0, 4, 1, 2}));
  EXPECT_EQ(top.values.to_i32(), (std::vector<std::int32_t>{big[3], big[0], big[4], big[1], big[2]}));
  EXPECT_EQ(mx::topk(Matrix::from_i32({5}, big), 2, -1, false).indices.to_i32(), (std::vector<std::int32_t>{2, 1}));

  for (DType dtype : {DType::F16, DType::BF16}) {
    SCOPED_TRACE(std::string(oa::to_string(dtype)));
    const Matrix x = Matrix::from_vector({4, 3}, oa::test::test_values(12, 240), dtype);
    oa::set_requires_grad(x);
    const Matrix index = Matrix::from_i32({3}, std::vector<std::int32_t>{3, 0, 3});
    oa::backward(mx::sum_all(mx::index_select(x, 0, index)) + mx::sum_all(mx::topk(x, 1, 0).values) +
                 mx::sum_all(mx::gather(x, 1, Matrix::from_i32({4, 1}, std::vector<std::int32_t>{2, 2, 0, 1}))) + mx::sum_all(mx::tril(x)));
    const Matrix g = oa::grad(x);
    ASSERT_EQ(g.dtype(), dtype);
    // Per element: rows 0 and 3 selected once and twice, each column's largest, the gathered column, the lower triangle.
    const std::vector<float> v = mx::cast(x, DType::F32).to_vector(), gv = mx::cast(g, DType::F32).to_vector();
    const std::vector<int> gathered{2, 2, 0, 1};
    for (std::size_t r = 0; r < 4; ++r)
      for (std::size_t c = 0; c < 3; ++c) {
        bool largest = true;
        for (std::size_t q = 0; q < 4; ++q) largest = largest && (v[q * 3 + c] < v[r * 3 + c] || (v[q * 3 + c] == v[r * 3 + c] && q >= r));
        const double want = (r == 0   ? 1
                             : r == 3 ? 2
                                      : 0) +
                            (largest ? 1 : 0) + (gathered[r] == static_cast<int>(c) ? 1 : 0) + (c <= r ? 1 : 0);
        EXPECT_EQ(gv[r * 3 + c], want) << "row " << r << " column " << c;
      }
  }
}

TEST(MatrixIndexing, OneHotMatchesTheReferenceAndRaisesOutOfRange) {
  struct Case {
    Shape shape;
    std::int64_t classes;
  };
  const std::vector<Case> cases = {{{5}, 3}, {{2, 3}, 4}, {{}, 6}, {{2, 1, 3}, 1}, {{0, 2}, 3}, {{7}, 1030}};
  std::uint64_t seed = 170;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.shape.to_string() + " classes " + std::to_string(c.classes));
    auto iv = ints(c.shape.numel(), seed++, 0, static_cast<int>(c.classes));
    const Matrix y = mx::one_hot(Matrix::from_i32(c.shape, iv), c.classes);
    std::vector<std::int64_t> out = c.shape.to_vector();
    out.push_back(c.classes);
    EXPECT_EQ(y.shape(), Shape(out));
    EXPECT_EQ(y.dtype(), oa::DType::F32);
    EXPECT_TRUE(oa_test::near(y.to_vector(), ref::one_hot(iv, c.classes), 0, 0));
    if (iv.empty()) continue;
    // -1 and classes are outside the range: zero rows, and OutOfRange at the next read.
    for (std::int32_t bad : {-1, static_cast<std::int32_t>(c.classes)}) {
      iv.back() = bad;
      const Matrix z = mx::one_hot(Matrix::from_i32(c.shape, iv), c.classes);
      const std::string index = "index " + std::to_string(bad);
      EXPECT_TRUE(oa_test::throws([&] { z.to_vector(); }, ErrorKind::OutOfRange, {"oa::matrix::one_hot", index.c_str(), "num_classes"}));
    }
  }
  // One op, not differentiable; host indices are checked, then uploaded.
  const std::vector<std::int32_t> host{2, 0, 1, 2};
  oa::TraceCapture trace(oa::Engine::default_engine());
  const Matrix y = mx::one_hot(host, {2, 2}, 3);
  const auto ops = trace.ops();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].name, "oa::matrix::one_hot");
  EXPECT_EQ(std::get<std::int64_t>(*ops[0].attribute("num_classes")), 3);
  EXPECT_FALSE(oa::requires_grad(y));
  EXPECT_TRUE(oa_test::near(y.to_vector(), ref::one_hot(host, 3), 0, 0));
}

TEST(MatrixIndexing, TakeAlongAxisBroadcastsOutsideTheAxisWithGradients) {
  struct Case {
    Shape x, indices;
    int axis;
  };
  // Equal extents; longer and shorter along the axis; indices or x broadcast
  // on other axes; negative axes.
  const std::vector<Case> cases = {{{5}, {3}, 0},         {{3, 4}, {3, 6}, 1},         {{3, 4}, {2, 4}, 0},
                                   {{3, 4}, {1, 2}, -1}, {{1, 4, 2}, {3, 2, 2}, 1}, {{2, 3, 4}, {2, 1, 2}, -1}};
  std::uint64_t seed = 190;
  for (const auto& c : cases) {
    SCOPED_TRACE(c.x.to_string() + " indices " + c.indices.to_string() + " axis " + std::to_string(c.axis));
    const RandomIndex ix = random_index(c.x, c.axis, c.indices, seed + 100);
    gradcheck({random_input(c.x, seed++)}, [&](const std::vector<Matrix>& x) { return mx::take_along_axis(x[0], ix.index, c.axis); },
              [&](const Inputs& x) { return ref::take_along_axis(x[0], c.x.to_vector(), ix.values, c.indices.to_vector(), ix.axis); });
  }
  // Same extents outside the axis: one op; each row's maximum through argmax; i32 x.
  const Matrix x = Matrix::from_vector({3, 5}, oa::test::test_values(15, 200));
  const Matrix am = mx::argmax(x, true);
  oa::TraceCapture trace(x.engine());
  const Matrix best = mx::take_along_axis(x, am, -1);
  const auto ops = trace.ops();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].name, "oa::matrix::take_along_axis");
  EXPECT_EQ(std::get<std::int64_t>(*ops[0].attribute("dim")), 1);
  EXPECT_EQ(best.shape(), Shape({3, 1}));
  EXPECT_EQ(best.to_vector(), mx::max(x, true).to_vector());
  const std::vector<std::int32_t> xi = ints(6, 201, -50, 50);
  EXPECT_EQ(mx::take_along_axis(Matrix::from_i32({2, 3}, xi), Matrix::from_i32({2, 1}, std::vector<std::int32_t>{2, 0}), 1).to_i32(),
            (std::vector<std::int32_t>{xi[2], xi[3]}));
}

TEST(MatrixIndexing, TopkGivesOrderedValuesAndIndicesWithGradients) {
  struct Case {
    Shape shape;
    std::int64_t k;
    int axis;
  };
  const std::vector<Case> cases = {{{7}, 3, 0}, {{3, 6}, 6, -1}, {{4, 5}, 2, 0}, {{2, 5, 3}, 1, 1}, {{2, 3, 9}, 4, -1}, {{3, 4}, 0, 1}};
  std::uint64_t seed = 210;
  for (const auto& c : cases) {
    for (bool largest : {true, false}) {
      SCOPED_TRACE(c.shape.to_string() + " k " + std::to_string(c.k) + " axis " + std::to_string(c.axis) + (largest ? " largest" : " smallest"));
      const std::size_t a = axis_of(c.shape, c.axis);
      Matrix indices;
      const auto input = random_input(c.shape, seed++);
      gradcheck({input},
                [&](const std::vector<Matrix>& x) {
                  const auto r = mx::topk(x[0], c.k, c.axis, largest);
                  indices = r.indices;
                  return r.values;
                },
                [&](const Inputs& x) { return ref::topk(x[0], c.shape.to_vector(), a, c.k, largest); });
      std::vector<std::int32_t> want;
      ref::topk(f64(input.values), c.shape.to_vector(), a, c.k, largest, &want);
      EXPECT_EQ(indices.dtype(), oa::DType::I32);
      EXPECT_EQ(indices.to_i32(), want);
    }
  }
  // Ties in position order, -0 and +0 tie, NaN first (largest) or last.
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const Matrix t = Matrix::from_vector({6}, std::vector<float>{1, nan, 0.0f, 1, -0.0f, 3});
  EXPECT_EQ(mx::topk(t, 6).indices.to_i32(), (std::vector<std::int32_t>{1, 5, 0, 3, 2, 4}));
  EXPECT_EQ(mx::topk(t, 6, -1, false).indices.to_i32(), (std::vector<std::int32_t>{2, 4, 0, 3, 5, 1}));
  // One op forward, one backward; the indices carry no gradient.
  const Matrix x = Matrix::from_vector({2, 4}, oa::test::test_values(8, 220));
  oa::set_requires_grad(x);
  oa::TraceCapture trace(x.engine());
  const auto r = mx::topk(x, 2);
  EXPECT_FALSE(oa::requires_grad(r.indices));
  oa::backward(mx::sum_all(r.values));
  const auto ops = trace.ops();
  ASSERT_NO_FATAL_FAILURE(expect_op_and_backward(ops, "oa::matrix::topk"));
  EXPECT_EQ(ops[0].outputs.size(), 2u);
  EXPECT_EQ(std::get<std::int64_t>(*ops[0].attribute("k")), 2);
  EXPECT_TRUE(std::get<bool>(*ops[0].attribute("largest")));
}

TEST(MatrixIndexing, BadArgumentsNameTheOpAndRecordNothing) {
  const Matrix x = Matrix::zeros({2, 3, 4});
  const Matrix i1 = Matrix::from_i32({2}, std::vector<std::int32_t>{0, 1});
  const Matrix i3 = Matrix::from_i32({2, 3, 4}, std::vector<std::int32_t>(24, 0));
  const Matrix f_index = Matrix::zeros({2});
  const Matrix cond = Matrix::from_bool({3, 4}, std::vector<bool>(12, true));
  const Matrix x16 = mx::cast(x, DType::F16), x16b = mx::cast(x, DType::BF16);
  oa::TraceCapture trace(x.engine());
  EXPECT_TRUE(oa_test::throws([&] { mx::index_select(x, 3, i1); }, ErrorKind::InvalidArgument,
                              {"oa::matrix::index_select", "dim 3", "[2, 3, 4]"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::index_select(x, 0, f_index); }, ErrorKind::InvalidArgument,
                              {"oa::matrix::index_select", "index must be i32", "f32"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::index_select(x, 0, i3); }, ErrorKind::InvalidArgument,
                              {"oa::matrix::index_select", "rank 0 or 1", "[2, 3, 4]"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::index_select(Matrix::zeros({}), 0, i1); }, ErrorKind::InvalidArgument,
                              {"oa::matrix::index_select", "rank 0"}));
  const std::vector<std::int32_t> host{0, 2, 3};
  EXPECT_TRUE(oa_test::throws([&] { mx::index_select(x, -2, host); }, ErrorKind::InvalidArgument,
                              {"oa::matrix::index_select", "index 3 at position 2", "[0, 3)", "[2, 3, 4]"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::index_select(x, 0, std::vector<std::int32_t>{-1}); }, ErrorKind::InvalidArgument,
                              {"oa::matrix::index_select", "index -1 at position 0"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::gather(x, 1, i1); }, ErrorKind::InvalidArgument, {"oa::matrix::gather", "index [2]", "rank"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::gather(x, 0, Matrix::from_i32({2, 4, 4}, std::vector<std::int32_t>(32, 0))); },
                              ErrorKind::InvalidArgument, {"oa::matrix::gather", "[2, 4, 4]", "no larger", "[2, 3, 4]"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::gather(x, -4, i3); }, ErrorKind::InvalidArgument, {"oa::matrix::gather", "dim -4"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::scatter_add(x, 0, i3, Matrix::zeros({2, 3, 3})); }, ErrorKind::InvalidArgument,
                              {"oa::matrix::scatter_add", "src [2, 3, 3]", "[2, 3, 4]"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::scatter_add(x, 0, Matrix::from_i32({2, 2, 4}, std::vector<std::int32_t>(16, 0)), x); },
                              ErrorKind::InvalidArgument, {"oa::matrix::scatter_add", "index [2, 2, 4]", "the same"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::scatter_add(x, 0, i3, i3); }, ErrorKind::InvalidArgument,
                              {"oa::matrix::scatter_add", "x f32 [2, 3, 4] and src i32 [2, 3, 4] must have the same dtype"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::scatter_add(cond, 0, i3, cond); }, ErrorKind::InvalidArgument,
                              {"oa::matrix::scatter_add", "x must be f32, f16, bf16 or i32; found bool [3, 4]"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::one_hot(i3, 4, DType::F16); }, ErrorKind::InvalidArgument,
                              {"oa::matrix::one_hot", "dtype f16 must be f32 or i32"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::where(x, x, x); }, ErrorKind::InvalidArgument, {"oa::matrix::where", "condition must be bool"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::where(cond, x, Matrix::zeros({2, 1, 3})); }, ErrorKind::InvalidArgument,
                              {"oa::matrix::where", "do not broadcast", "condition [3, 4]", "x [2, 3, 4]", "y [2, 1, 3]"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::where(cond, i3, x); }, ErrorKind::InvalidArgument, {"oa::matrix::where", "y must be i32"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::where(cond, cond, x); }, ErrorKind::InvalidArgument, {"oa::matrix::where", "y must be bool"}));
  // Operands on another engine: the message names both arguments and their shapes.
  const oa::Engine other;
  const Matrix foreign_cond = Matrix::from_bool({3, 4}, std::vector<bool>(12, true), other);
  EXPECT_TRUE(oa_test::throws([&] { mx::where(foreign_cond, x, x); }, ErrorKind::InvalidArgument,
                              {"oa::matrix::where", "x [2, 3, 4] lives on another engine than condition [3, 4]"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::masked_fill(x, foreign_cond, 1.0); }, ErrorKind::InvalidArgument,
                              {"oa::matrix::masked_fill", "mask [3, 4] lives on another engine than x [2, 3, 4]"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::gather(x, 0, Matrix::from_i32({2, 3, 4}, std::vector<std::int32_t>(24, 0), other)); },
                              ErrorKind::InvalidArgument, {"oa::matrix::gather", "index [2, 3, 4] lives on another engine than x [2, 3, 4]"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::nonzero(Matrix()); }, ErrorKind::InvalidArgument, {"oa::matrix::nonzero", "x"}));
  for (double bad : {2147483648.0, -2147483649.0, std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::infinity()})
    EXPECT_TRUE(oa_test::throws([&] { mx::masked_fill(i3, cond, bad); }, ErrorKind::InvalidArgument,
                                {"oa::matrix::masked_fill", "cannot be converted to i32 without overflow", "[2, 3, 4]"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::masked_fill(x, Matrix::from_bool({3}, std::vector<bool>(3, true)), 1.0f); },
                              ErrorKind::InvalidArgument, {"oa::matrix::masked_fill", "x [2, 3, 4]", "mask [3]"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::masked_fill(x, x, 1.0f); }, ErrorKind::InvalidArgument, {"oa::matrix::masked_fill", "mask must be bool"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::masked_fill(x16, cond, -70000.0f); }, ErrorKind::InvalidArgument,
                              {"oa::matrix::masked_fill", "value -70000", "f16 without overflow", "[2, 3, 4]"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::masked_fill(x16, cond, 65504.5); }, ErrorKind::InvalidArgument, {"f16 without overflow"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::masked_fill(x, cond, 1e39); }, ErrorKind::InvalidArgument, {"value 1e+39", "f32 without overflow"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::masked_fill(x16b, cond, 3.4e38); }, ErrorKind::InvalidArgument, {"bf16 without overflow"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::expand(x, {2, 5, 4}); }, ErrorKind::InvalidArgument,
                              {"oa::matrix::expand", "[2, 3, 4]", "2, 5, 4", "extent 3 to 5"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::expand(x, {3, 4}); }, ErrorKind::InvalidArgument, {"oa::matrix::expand", "rank"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::expand(x, {-1, 2, 3, 4}); }, ErrorKind::InvalidArgument, {"oa::matrix::expand", "new to -1"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::split(x, {1, 1}, 1); }, ErrorKind::InvalidArgument, {"oa::matrix::split", "1, 1", "extent 3"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::split(x, {4, -1}, 1); }, ErrorKind::InvalidArgument, {"oa::matrix::split", "4, -1"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::split(x, 0, 1); }, ErrorKind::InvalidArgument, {"oa::matrix::split", "size 0"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::split(x, 1, 3); }, ErrorKind::InvalidArgument, {"oa::matrix::split", "axis 3"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::stack({x, Matrix::zeros({2, 3, 5})}, 0); }, ErrorKind::InvalidArgument,
                              {"oa::matrix::stack", "xs[1] [2, 3, 5]", "[2, 3, 4]"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::stack({x}, 4); }, ErrorKind::InvalidArgument, {"oa::matrix::stack", "axis 4", "[-4, 3]"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::stack({}, 0); }, ErrorKind::InvalidArgument, {"oa::matrix::stack", "empty"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::one_hot(f_index, 3); }, ErrorKind::InvalidArgument,
                              {"oa::matrix::one_hot", "indices must be i32", "f32 [2]"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::one_hot(i1, 0); }, ErrorKind::InvalidArgument, {"oa::matrix::one_hot", "num_classes 0", "[2]"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::one_hot(Matrix::from_i32({1, 1, 1, 1, 1, 1, 1, 1}, std::vector<std::int32_t>{0}), 2); },
                              ErrorKind::InvalidArgument, {"oa::matrix::one_hot", "rank at most 7"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::one_hot(std::vector<std::int32_t>{0, 3}, {2}, 3); }, ErrorKind::InvalidArgument,
                              {"oa::matrix::one_hot", "index 3 at position 1", "[0, 3)"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::one_hot(std::vector<std::int32_t>{0, 1}, {3}, 3); }, ErrorKind::InvalidArgument,
                              {"oa::matrix::one_hot", "2 indices", "[3]"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::take_along_axis(x, i1, 0); }, ErrorKind::InvalidArgument,
                              {"oa::matrix::take_along_axis", "indices [2]", "rank of x [2, 3, 4]"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::take_along_axis(x, Matrix::from_i32({2, 2, 1}, std::vector<std::int32_t>(4, 0)), 2); },
                              ErrorKind::InvalidArgument, {"oa::matrix::take_along_axis", "[2, 2, 1]", "[2, 3, 4]", "do not broadcast"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::take_along_axis(x, i3, 3); }, ErrorKind::InvalidArgument,
                              {"oa::matrix::take_along_axis", "axis 3", "[2, 3, 4]"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::take_along_axis(x, x, 0); }, ErrorKind::InvalidArgument,
                              {"oa::matrix::take_along_axis", "indices must be i32"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::topk(x, 5); }, ErrorKind::InvalidArgument, {"oa::matrix::topk", "k 5", "[0, 4]", "[2, 3, 4]"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::topk(x, -1, 0); }, ErrorKind::InvalidArgument, {"oa::matrix::topk", "k -1", "[0, 2]"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::topk(x, 1, -4); }, ErrorKind::InvalidArgument, {"oa::matrix::topk", "axis -4"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::topk(cond, 1); }, ErrorKind::InvalidArgument,
                              {"oa::matrix::topk", "x must be f32, f16, bf16, i32; found bool [3, 4]"}));
  EXPECT_TRUE(oa_test::throws([&] { mx::tril(Matrix::zeros({4})); }, ErrorKind::InvalidArgument, {"oa::matrix::tril", "x [4]", "rank 2"}));
  EXPECT_TRUE(trace.ops().empty());
}

}  // namespace
