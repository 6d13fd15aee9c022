// matmul, matmul_nt, bmm, bmm_nt, bmm_tn and linear on F16 and BF16 operands:
// results and gradients against f64 references computed from the inputs as
// rounded to their dtype (tests/reference/linalg.hpp), with a tolerance
// derived from the contraction length and the output's rounding; the refusal
// of mixed dtypes. Gradients are checked against the reference of the
// backward formula rather than by finite differences: a 16-bit output moves
// in steps of 2^-11 (f16) or 2^-8 (bf16) relative, so a difference quotient
// over any usable step is too coarse to check anything.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "oa/oa.hpp"
#include "reference/dtype.hpp"
#include "reference/linalg.hpp"
#include "support/expect.hpp"

namespace {

using oa::DType;
using oa::ErrorKind;
using oa::Matrix;
using oa::Shape;
namespace mx = oa::matrix;
namespace ml = oa::ml;
namespace ref = oa::reference;

// A 16-bit operand and its values (as rounded to its dtype). With a gradient,
// m is the cast of an f32 leaf holding the same values (a 16-bit Matrix is
// not a leaf): the leaf's gradient is the 16-bit gradient of m widened
// exactly, and autograd itself refuses a gradient whose dtype is not m's.
struct Operand {
  Matrix m;
  std::vector<float> v;
  Matrix leaf;
};

Operand make(const Shape& shape, DType d, std::uint32_t seed, bool grad = false) {
  const auto v = ref::rounded(d == DType::F16 ? ref::kF16 : ref::kBF16, oa_test::random_values(shape.numel(), seed));
  if (!grad) return {Matrix::from_vector(shape, v, d), v, Matrix()};
  Matrix leaf = Matrix::from_vector(shape, v);
  oa::set_requires_grad(leaf);
  return {mx::cast(leaf, d), v, leaf};
}

// Sums a reference computed per batch item ([batch, rows, cols]) over the batch.
ref::GemmResult over_batch(const ref::GemmResult& r, std::int64_t batch) {
  const std::size_t item = r.value.size() / static_cast<std::size_t>(batch);
  ref::GemmResult out{std::vector<double>(item, 0.0), std::vector<double>(item, 0.0)};
  for (std::size_t i = 0; i < r.value.size(); ++i) {
    out.value[i % item] += r.value[i];
    out.magnitude[i % item] += r.magnitude[i];
  }
  return out;
}

// op(A) op(B) per batch item, from the rounded values; a stride 0 broadcasts.
ref::GemmResult product(std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k, bool ta, bool tb, const Operand& a,
                        std::int64_t a_stride, const Operand& b, std::int64_t b_stride, const std::vector<float>* bias = nullptr) {
  return ref::gemm(batch, m, n, k, ta, tb, 1.0, 0.0, {&a.v, 0, a_stride}, {&b.v, 0, b_stride},
                   std::vector<float>(static_cast<std::size_t>(batch * m * n), 0.0f), 0, m * n, bias);
}

// `got` has dtype `stored` (d unless given) and matches `want` within f32
// accumulation over `terms` products, (terms + 4) 2^-24 of their magnitude,
// plus half an ulp of d's format at the result (the one rounding of the output).
void expect_close(const Matrix& got, const ref::GemmResult& want, std::int64_t terms, DType d, const std::string& what,
                  std::optional<DType> stored = {}) {
  SCOPED_TRACE(what);
  ASSERT_TRUE(got.defined());
  ASSERT_EQ(got.dtype(), stored.value_or(d));
  const auto v = got.to_vector();
  ASSERT_EQ(v.size(), want.value.size());
  for (std::size_t i = 0; i < v.size(); ++i) {
    const double acc = static_cast<double>(terms + 4) * 0x1p-24 * want.magnitude[i];
    const double tol = acc + 0.5 * ref::ulp(d == DType::F16 ? ref::kF16 : ref::kBF16, std::abs(want.value[i]) + acc);
    ASSERT_NEAR(v[i], want.value[i], tol) << "element " << i;
  }
}

// The seed of a backward pass: f32 values exactly representable in d (the
// backward rounds its f32 output gradient to the input dtype).
Operand seed_for(const Shape& shape, DType d, std::uint32_t seed) {
  Operand s = make(shape, d, seed);
  s.m = Matrix::from_vector(shape, s.v);
  return s;
}

const std::vector<DType> kDtypes = {DType::F16, DType::BF16};

// matmul and matmul_nt: skinny and tiled M, ragged edges, K = 1 and long K,
// batched a with shared b (folded into M), both batched, shared a with batched
// b (its gradient summed over the batch); forward and both gradients.
TEST(MatrixHalfProducts, MatmulAndMatmulNtWithGradients) {
  struct Case {
    std::int64_t batch, m, k, n;
    bool a_batched, b_batched;
  };
  const std::vector<Case> cases = {{1, 1, 5, 7, false, false}, {1, 67, 129, 65, false, false}, {3, 5, 64, 130, true, false},
                                   {2, 17, 31, 33, true, true}, {3, 9, 40, 12, false, true},     {1, 3, 1, 4, false, false}};
  std::uint32_t seed = 1;
  for (DType d : kDtypes)
    for (bool nt : {false, true})
      for (const Case& c : cases) {
        if (d == DType::BF16 && c.m != 67 && c.batch != 3) continue;  // fewer pipelines to compile on lavapipe
        const std::string what = std::string(nt ? "matmul_nt " : "matmul ") + std::string(oa::to_string(d)) + " batch " +
                                 std::to_string(c.batch) + " M " + std::to_string(c.m) + " K " + std::to_string(c.k) + " N " +
                                 std::to_string(c.n);
        auto dims = [&](bool batched, std::int64_t r, std::int64_t s) {
          return batched && c.batch > 1 ? Shape{c.batch, r, s} : (batched ? Shape{1, r, s} : Shape{r, s});
        };
        const Operand a = make(dims(c.a_batched, c.m, c.k), d, seed++, true);
        const Operand b = make(nt ? dims(c.b_batched, c.n, c.k) : dims(c.b_batched, c.k, c.n), d, seed++, true);
        const Matrix y = nt ? mx::matmul_nt(a.m, b.m) : mx::matmul(a.m, b.m);
        const std::int64_t as = c.a_batched ? c.m * c.k : 0, bs = c.b_batched ? c.k * c.n : 0;
        expect_close(y, product(c.batch, c.m, c.n, c.k, false, nt, a, as, b, bs), c.k, d, what + " forward");

        const Operand g = seed_for(y.shape(), d, seed++);
        oa::backward(mx::cast(y, DType::F32), g.m);  // the cast hands y a 16-bit gradient
        // ga = g op(b)^T; gb = a^T g (matmul) or g^T a (matmul_nt); shared operands sum over the batch.
        auto ga = product(c.batch, c.m, c.k, c.n, false, !nt, g, c.m * c.n, b, bs);
        auto gb = nt ? product(c.batch, c.n, c.k, c.m, true, false, g, c.m * c.n, a, as)
                     : product(c.batch, c.k, c.n, c.m, true, false, a, as, g, c.m * c.n);
        if (!c.a_batched) ga = over_batch(ga, c.batch);
        if (!c.b_batched) gb = over_batch(gb, c.batch);
        expect_close(oa::grad(a.leaf), ga, c.n, d, what + " grad a", DType::F32);
        expect_close(oa::grad(b.leaf), gb, c.m * c.batch, d, what + " grad b", DType::F32);
      }
}

// bmm, bmm_nt and bmm_tn: forward and both gradients over skinny and tiled shapes.
TEST(MatrixHalfProducts, BmmEveryLayoutWithGradients) {
  struct Case {
    std::int64_t batch, m, k, p;
  };
  const std::vector<Case> cases = {{2, 1, 17, 9}, {2, 65, 66, 33}};
  std::uint32_t seed = 100;
  for (DType d : kDtypes)
    for (int layout = 0; layout < 3; ++layout)
      for (const Case& c : cases) {
        const bool nt = layout == 1, tn = layout == 2;
        const std::string what = std::string(layout == 0 ? "bmm " : nt ? "bmm_nt " : "bmm_tn ") + std::string(oa::to_string(d)) +
                                 " M " + std::to_string(c.m) + " K " + std::to_string(c.k) + " P " + std::to_string(c.p);
        const Operand a = make(tn ? Shape{c.batch, c.k, c.m} : Shape{c.batch, c.m, c.k}, d, seed++, true);
        const Operand b = make(nt ? Shape{c.batch, c.p, c.k} : Shape{c.batch, c.k, c.p}, d, seed++, true);
        const Matrix y = layout == 0 ? ml::bmm(a.m, b.m) : nt ? ml::bmm_nt(a.m, b.m) : ml::bmm_tn(a.m, b.m);
        const std::int64_t as = c.m * c.k, bs = c.k * c.p, gs = c.m * c.p;
        expect_close(y, product(c.batch, c.m, c.p, c.k, tn, nt, a, as, b, bs), c.k, d, what + " forward");

        const Operand g = seed_for(y.shape(), d, seed++);
        oa::backward(mx::cast(y, DType::F32), g.m);  // the cast hands y a 16-bit gradient
        // bmm: dA = G B^T, dB = A^T G; bmm_nt: dA = G B, dB = G^T A; bmm_tn: dA = B G^T, dB = A G.
        const auto ga = tn ? product(c.batch, c.k, c.m, c.p, false, true, b, bs, g, gs)
                           : product(c.batch, c.m, c.k, c.p, false, !nt, g, gs, b, bs);
        const auto gb = nt   ? product(c.batch, c.p, c.k, c.m, true, false, g, gs, a, as)
                        : tn ? product(c.batch, c.k, c.p, c.m, false, false, a, as, g, gs)
                             : product(c.batch, c.k, c.p, c.m, true, false, a, as, g, gs);
        expect_close(oa::grad(a.leaf), ga, c.p, d, what + " grad a", DType::F32);
        expect_close(oa::grad(b.leaf), gb, c.m, d, what + " grad b", DType::F32);
      }
}

// linear with and without a bias of the input's dtype (as torch.nn.functional.linear):
// y = x W^T + b rounded once; gx = g W, gW = g^T x, gb = the column sums of g.
TEST(MatrixHalfProducts, LinearWithGradients) {
  struct Case {
    Shape x;
    std::int64_t out;
    bool bias;
  };
  const std::vector<Case> cases = {{{2, 3, 33}, 17, true}, {{70, 40}, 66, false}, {{9}, 130, true}};
  std::uint32_t seed = 200;
  for (DType d : kDtypes)
    for (const Case& c : cases) {
      const std::int64_t in = c.x.dim(-1), rows = c.x.numel() / in;
      const std::string what = std::string("linear ") + std::string(oa::to_string(d)) + " rows " + std::to_string(rows) + " in " +
                               std::to_string(in) + " out " + std::to_string(c.out);
      const Operand x = make(c.x, d, seed++, true), w = make({c.out, in}, d, seed++, true);
      const Operand bias = c.bias ? make({c.out}, d, seed++, true) : Operand{};
      const Matrix y = ml::linear(x.m, w.m, bias.m);
      expect_close(y, product(1, rows, c.out, in, false, true, x, 0, w, 0, c.bias ? &bias.v : nullptr), in, d, what + " forward");

      const Operand g = seed_for(y.shape(), d, seed++);
      oa::backward(mx::cast(y, DType::F32), g.m);  // the cast hands y a 16-bit gradient
      expect_close(oa::grad(x.leaf), product(1, rows, in, c.out, false, false, g, 0, w, 0), c.out, d, what + " grad x", DType::F32);
      expect_close(oa::grad(w.leaf), product(1, c.out, in, rows, true, false, g, 0, x, 0), rows, d, what + " grad weight", DType::F32);
      if (c.bias) {
        ref::GemmResult gb{std::vector<double>(c.out, 0.0), std::vector<double>(c.out, 0.0)};
        for (std::int64_t r = 0; r < rows; ++r)
          for (std::int64_t o = 0; o < c.out; ++o) {
            gb.value[o] += g.v[r * c.out + o];
            gb.magnitude[o] += std::abs(g.v[r * c.out + o]);
          }
        expect_close(oa::grad(bias.leaf), gb, rows, d, what + " grad bias", DType::F32);
      }
    }
}

// K = 0: the products are zeros, linear gives its bias; all in the input dtype.
TEST(MatrixHalfProducts, EmptyInnerExtent) {
  for (DType d : kDtypes) {
    SCOPED_TRACE(std::string(oa::to_string(d)));
    const Operand a = make({3, 0}, d, 1), b = make({0, 4}, d, 2), bias = make({4}, d, 3);
    const Matrix y = mx::matmul(a.m, b.m);
    EXPECT_EQ(y.dtype(), d);
    EXPECT_EQ(y.to_vector(), std::vector<float>(12, 0.0f));
    const Matrix z = ml::bmm(make({2, 3, 0}, d, 4).m, make({2, 0, 5}, d, 5).m);
    EXPECT_EQ(z.dtype(), d);
    EXPECT_EQ(z.to_vector(), std::vector<float>(30, 0.0f));
    const Matrix l = ml::linear(a.m, make({4, 0}, d, 6).m, bias.m);
    EXPECT_EQ(l.dtype(), d);
    std::vector<float> want;
    for (int r = 0; r < 3; ++r) want.insert(want.end(), bias.v.begin(), bias.v.end());
    EXPECT_EQ(l.to_vector(), want);
  }
}

// Operands of different dtypes are refused (as torch.matmul refuses them),
// naming the op, both arguments and their dtypes and shapes, before anything is recorded.
TEST(MatrixHalfProducts, MixedDtypesAreRefused) {
  const Matrix f23 = Matrix::ones({2, 3}), h34 = mx::cast(Matrix::ones({3, 4}), DType::F16);
  const Matrix b34 = mx::cast(Matrix::ones({3, 4}), DType::BF16), h43 = mx::cast(Matrix::ones({4, 3}), DType::F16);
  const Matrix h23 = mx::cast(f23, DType::F16), f4 = Matrix::ones({4}), f43 = Matrix::ones({4, 3});
  const Matrix h223 = mx::cast(Matrix::ones({2, 2, 3}), DType::F16), f233 = Matrix::ones({2, 3, 3});
  const Matrix h233 = mx::cast(f233, DType::F16), bf4 = mx::cast(f4, DType::BF16), h4 = mx::cast(f4, DType::F16);
  struct Case {
    std::function<void()> call;
    std::vector<const char*> fragments;
  };
  const std::vector<Case> cases = {
      {[&] { mx::matmul(f23, h34); }, {"oa::matrix::matmul", "a f32 [2, 3]", "b f16 [3, 4]", "same dtype"}},
      {[&] { mx::matmul(h23, b34); }, {"oa::matrix::matmul", "a f16 [2, 3]", "b bf16 [3, 4]"}},
      {[&] { mx::matmul_nt(h23, f43); }, {"oa::matrix::matmul_nt", "a f16 [2, 3]", "b f32 [4, 3]"}},
      {[&] { ml::bmm(h223, f233); }, {"oa::ml::bmm", "a f16 [2, 2, 3]", "b f32 [2, 3, 3]"}},
      {[&] { ml::bmm_nt(f233, h233); }, {"oa::ml::bmm_nt", "a f32 [2, 3, 3]", "b f16 [2, 3, 3]"}},
      {[&] { ml::bmm_tn(h233, f233); }, {"oa::ml::bmm_tn", "a f16 [2, 3, 3]", "b f32 [2, 3, 3]"}},
      {[&] { ml::linear(h23, f43); }, {"oa::ml::linear", "x f16 [2, 3]", "weight f32 [4, 3]"}},
      // An f32 bias is taken with 16-bit operands (autocast's form); another 16-bit dtype is not, nor a 16-bit one with f32.
      {[&] { ml::linear(h23, h43, bf4); }, {"oa::ml::linear", "x f16 [2, 3]", "bias bf16 [4]"}},
      {[&] { ml::linear(f23, f43, h4); }, {"oa::ml::linear", "x f32 [2, 3]", "bias f16 [4]"}},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.fragments[0]);
    const auto before = f23.engine().stats().semantic_ops;
    try {
      c.call();
      ADD_FAILURE() << "expected an error";
    } catch (const oa::Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::InvalidArgument);
      for (const char* f : c.fragments) EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what() << " lacks " << f;
    }
    EXPECT_EQ(f23.engine().stats().semantic_ops, before);
  }
}

}  // namespace
