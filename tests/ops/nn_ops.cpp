// Op table cases of the nn ops: norms, pools, losses, log_softmax, embedding
// and dropout (oa/ml/{norm,pool,loss,activation,embedding,dropout}.hpp).
#include "ops/op_table.hpp"
#include "reference/layout.hpp"
#include "reference/nn.hpp"

namespace oa::test {
namespace {

// ── Norms ────────────────────────────────────────────────────────────────────

OA_OP_CASES(layer_norm, "oa::ml::layer_norm") {
  std::vector<OpCase> cases;
  std::uint64_t seed = 301;
  for (const Shape& shape : {Shape{3, 8}, Shape{2, 3, 33}})
    for (bool affine : {true, false}) {
      const std::int64_t D = shape.cols();
      std::vector<GradInput> inputs = {random_input(shape, seed, -2, 2)};
      if (affine) inputs.insert(inputs.end(), {random_input({D}, seed + 1, 0.5, 1.5), random_input({D}, seed + 2)});
      cases.push_back({label(affine ? "affine_x" : "plain_x", shape.numel()), inputs,
                       [affine](const Inputs& x) {
                         return affine ? oa::ml::layer_norm(x[0], x[1], x[2], 1e-5) : oa::ml::layer_norm(x[0], Matrix(), Matrix(), 1e-5);
                       },
                       [affine, D](const RefInputs& x) {
                         return reference::layer_norm(x[0], D, affine ? x[1] : std::vector<double>{}, affine ? x[2] : std::vector<double>{},
                                                      1e-5);
                       }});
      seed += 3;
    }
  // f16 and bf16 x, computed in f32 as torch's: with weight and bias of x's
  // dtype, with f32 ones (torch's mixed-dtype form), and without.
  const std::vector<OpCase> f32_cases = cases;
  for (const OpCase& c : f32_cases)
    for (DType dtype : {DType::F16, DType::BF16}) {
      cases.push_back(half_variant("oa::ml::layer_norm", c, dtype));
      if (c.inputs.size() == 3) cases.push_back(half_variant("oa::ml::layer_norm", c, dtype, 1));
    }
  return cases;
}

OA_OP_CASES(rms_norm, "oa::ml::rms_norm") {
  std::vector<OpCase> cases;
  std::uint64_t seed = 311;
  for (const Shape& shape : {Shape{3, 8}, Shape{2, 3, 33}})
    for (bool weight : {true, false}) {
      const std::int64_t D = shape.cols();
      std::vector<GradInput> inputs = {random_input(shape, seed, -2, 2)};
      if (weight) inputs.push_back(random_input({D}, seed + 1, 0.5, 1.5));
      cases.push_back({label(weight ? "weight_x" : "plain_x", shape.numel()), inputs,
                       [weight](const Inputs& x) { return oa::ml::rms_norm(x[0], weight ? x[1] : Matrix(), 1e-6); },
                       [weight, D](const RefInputs& x) { return reference::rms_norm(x[0], D, weight ? x[1] : std::vector<double>{}, 1e-6); }});
      seed += 2;
    }
  return cases;
}

// [N, C, S] with several groups (S = 6; S = 4: four columns of a channel a
// vec4), instance norm (G = C), one group (layer norm over [C, S]) and a
// rank-2 input, with and without weight and bias.
OA_OP_CASES(group_norm, "oa::ml::group_norm") {
  struct Case {
    const char* label;
    Shape shape;
    std::int64_t groups;
    bool affine;
  };
  std::vector<OpCase> cases;
  std::uint64_t seed = 331;
  for (const Case& k : {Case{"groups2_affine", {2, 4, 3, 2}, 2, true}, Case{"instance_plain", {2, 3, 5}, 3, false},
                        Case{"one_group_affine", {3, 6, 4}, 1, true}, Case{"rank2_affine", {3, 4}, 2, true},
                        Case{"s4_affine", {2, 4, 2, 2}, 2, true}, Case{"empty_batch_affine", {0, 4, 2, 2}, 2, true}}) {
    std::int64_t S = 1;
    for (std::size_t a = 2; a < k.shape.rank(); ++a) S *= k.shape[a];
    const std::int64_t N = k.shape[0], C = k.shape[1], G = k.groups;
    const bool affine = k.affine;
    std::vector<GradInput> inputs = {random_input(k.shape, seed, -2, 2)};
    if (affine) inputs.insert(inputs.end(), {random_input({C}, seed + 1, 0.5, 1.5), random_input({C}, seed + 2)});
    cases.push_back({k.label, inputs,
                     [G, affine](const Inputs& x) {
                       return oa::ml::group_norm(x[0], G, affine ? x[1] : Matrix(), affine ? x[2] : Matrix(), 1e-5);
                     },
                     [N, C, S, G, affine](const RefInputs& x) {
                       return reference::group_norm(x[0], N, C, S, G, affine ? x[1] : std::vector<double>{},
                                                    affine ? x[2] : std::vector<double>{}, 1e-5);
                     }});
    seed += 3;
  }
  return cases;
}

// [B, H, S, D] with an offset, a rank-2 input from position 0, and another base.
OA_OP_CASES(rope, "oa::ml::rope") {
  struct Case {
    const char* label;
    Shape shape;
    std::int64_t offset;
    double base;
  };
  std::vector<OpCase> cases;
  std::uint64_t seed = 341;
  for (const Case& k : {Case{"bhsd_offset3", {2, 2, 5, 8}, 3, 10000.0}, Case{"sd_start", {4, 6}, 0, 10000.0},
                        Case{"base100_offset40", {1, 3, 4, 4}, 40, 100.0}}) {
    const std::int64_t S = k.shape.dim(-2), D = k.shape.dim(-1), offset = k.offset;
    const double base = k.base;
    cases.push_back({k.label, {random_input(k.shape, seed++, -2, 2)},
                     [offset, base](const Inputs& x) { return oa::ml::rope(x[0], offset, base); },
                     [S, D, offset, base](const RefInputs& x) { return reference::rope(x[0], S, D, offset, base); }});
  }
  return cases;
}

// Training (batch statistics; the running ones are updated) and evaluation
// (running statistics), with and without weight and bias, and an empty batch
// (N = 0: an empty y, zero weight and bias gradients) in both modes.
OA_OP_CASES(batch_norm_2d, "oa::ml::batch_norm_2d") {
  std::vector<OpCase> cases;
  std::uint64_t seed = 321;
  const std::int64_t C = 3, H = 2, W = 3;
  for (std::int64_t N : {2, 0})
    for (bool training : {true, false})
      for (bool affine : {true, false}) {
        if (N == 0 && !affine) continue;
        std::vector<GradInput> inputs = {random_input({N, C, H, W}, seed, -2, 2)};
        if (affine) inputs.insert(inputs.end(), {random_input({C}, seed + 1, 0.5, 1.5), random_input({C}, seed + 2)});
        inputs.insert(inputs.end(), {random_input({C}, seed + 3, -0.5, 0.5, false), random_input({C}, seed + 4, 0.5, 1.5, false)});
        const std::string name = std::string(N == 0 ? "empty_batch_" : "") + (training ? "training" : "eval") + (affine ? "_affine" : "_plain");
        cases.push_back({name, inputs,
                         [training, affine](const Inputs& x) {
                           const std::size_t r = affine ? 3 : 1;
                           return oa::ml::batch_norm_2d(x[0], affine ? x[1] : Matrix(), affine ? x[2] : Matrix(), x[r], x[r + 1], training,
                                                        0.1, 1e-5);
                         },
                         [N, training, affine](const RefInputs& x) {
                           const std::size_t r = affine ? 3 : 1;
                           std::vector<double> mean = x[r], var = x[r + 1];
                           return reference::batch_norm_2d(x[0], N, C, H * W, affine ? x[1] : std::vector<double>{},
                                                           affine ? x[2] : std::vector<double>{}, &mean, &var, training, 0.1, 1e-5);
                         }});
        seed += 5;
      }
  return cases;
}

// ── Pools ────────────────────────────────────────────────────────────────────

std::vector<OpCase> pools(bool max) {
  struct Case {
    const char* label;
    reference::PoolShape p;
  };
  const std::vector<Case> cs = {{"k2_odd", {2, 3, 5, 7, {2, 2}, {2, 2}, {0, 0}}},
                                {"k3_s2_p1", {1, 2, 6, 5, {3, 3}, {2, 2}, {1, 1}}},
                                {"k3x2_s1x2_p1x0", {1, 1, 7, 4, {3, 2}, {1, 2}, {1, 0}}},
                                {"k4_p2", {2, 1, 4, 4, {4, 4}, {1, 1}, {2, 2}}},
                                {"k1_s3x1", {1, 3, 3, 3, {1, 1}, {3, 1}, {0, 0}}},
                                {"empty_batch", {0, 3, 4, 4, {2, 2}, {2, 2}, {0, 0}}}};
  std::vector<OpCase> cases;
  std::uint64_t seed = max ? 331 : 341;
  for (const auto& c : cs) {
    const reference::PoolShape p = c.p;
    const oa::ml::Pool2dOptions o{p.kernel, p.stride, p.padding};
    cases.push_back({c.label, {random_input({p.N, p.C, p.H, p.W}, seed++)},
                     [o, max](const Inputs& x) { return max ? oa::ml::max_pool_2d(x[0], o) : oa::ml::avg_pool_2d(x[0], o); },
                     [p, max](const RefInputs& x) { return reference::pool_2d(x[0], p, max); }});
  }
  return cases;
}

OA_OP_CASES(max_pool_2d, "oa::ml::max_pool_2d") { return pools(true); }
OA_OP_CASES(avg_pool_2d, "oa::ml::avg_pool_2d") { return pools(false); }

OA_OP_CASES(global_avg_pool_2d, "oa::ml::global_avg_pool_2d") {
  std::vector<OpCase> cases;
  std::uint64_t seed = 351;
  for (const Shape& shape : {Shape{2, 3, 2, 2}, Shape{1, 2, 7, 9}})
    cases.push_back({label("x", shape.numel()), {random_input(shape, seed++)},
                     [](const Inputs& x) { return oa::ml::global_avg_pool_2d(x[0]); },
                     [shape](const RefInputs& x) { return reference::global_avg_pool_2d(x[0], shape[0] * shape[1], shape[2] * shape[3]); }});
  return cases;
}

// ── Losses and activations ───────────────────────────────────────────────────

reference::LossReduction reference_of(oa::ml::Reduction r) {
  return r == oa::ml::Reduction::None ? reference::LossReduction::None
         : r == oa::ml::Reduction::Sum ? reference::LossReduction::Sum
                                       : reference::LossReduction::Mean;
}
const char* name_of(oa::ml::Reduction r) {
  return r == oa::ml::Reduction::None ? "none" : r == oa::ml::Reduction::Sum ? "sum" : "mean";
}

// Every reduction, an ignored target, label smoothing and, for every
// reduction, no rows (Mean gives NaN, Sum 0, None an empty loss).
OA_OP_CASES(cross_entropy, "oa::ml::cross_entropy") {
  std::vector<OpCase> cases;
  std::uint64_t seed = 361;
  const std::int64_t N = 4, C = 5;
  struct Case {
    std::string label;
    oa::ml::CrossEntropyOptions o;
  };
  std::vector<Case> cs;
  for (auto r : {oa::ml::Reduction::Mean, oa::ml::Reduction::Sum, oa::ml::Reduction::None}) cs.push_back({name_of(r), {r, -100, 0.0}});
  cs.push_back({"ignore_index", {oa::ml::Reduction::Mean, 2, 0.0}});
  cs.push_back({"smoothing", {oa::ml::Reduction::Mean, -100, 0.1}});
  for (const auto& c : cs) {
    const oa::ml::CrossEntropyOptions o = c.o;
    cases.push_back({c.label, {random_input({N, C}, seed++, -3, 3), ints({N}, {1, 2, 4, 0})},
                     [o](const Inputs& x) { return oa::ml::cross_entropy(x[0], x[1], o); },
                     [o](const RefInputs& x) {
                       return reference::cross_entropy(x[0], as_ints(x[1]), C, reference_of(o.reduction), o.ignore_index, o.label_smoothing);
                     }});
  }
  for (auto r : {oa::ml::Reduction::Mean, oa::ml::Reduction::Sum, oa::ml::Reduction::None})
    cases.push_back({std::string("empty_") + name_of(r), {random_input({0, C}, seed++), ints({0}, {})},
                     [r](const Inputs& x) { return oa::ml::cross_entropy(x[0], x[1], {r, -100, 0.0}); },
                     [r](const RefInputs& x) { return reference::cross_entropy(x[0], {}, C, reference_of(r), -100, 0.0); }});
  return cases;
}

OA_OP_CASES(mse_loss, "oa::ml::mse_loss") {
  std::vector<OpCase> cases;
  std::uint64_t seed = 371;
  for (auto r : {oa::ml::Reduction::Mean, oa::ml::Reduction::Sum, oa::ml::Reduction::None}) {
    cases.push_back({name_of(r), {random_input({4, 5}, seed), random_input({4, 5}, seed + 1)},
                     [r](const Inputs& x) { return oa::ml::mse_loss(x[0], x[1], r); },
                     [r](const RefInputs& x) { return reference::mse_loss(x[0], x[1], reference_of(r)); }});
    seed += 2;
  }
  // No elements: Mean gives NaN, Sum 0, None an empty loss.
  for (auto r : {oa::ml::Reduction::Mean, oa::ml::Reduction::Sum, oa::ml::Reduction::None})
    cases.push_back({std::string("empty_") + name_of(r), {random_input({0, 5}, seed), random_input({0, 5}, seed + 1)},
                     [r](const Inputs& x) { return oa::ml::mse_loss(x[0], x[1], r); },
                     [r](const RefInputs& x) { return reference::mse_loss(x[0], x[1], reference_of(r)); }});
  return cases;
}

OA_OP_CASES(accuracy, "oa::ml::accuracy") {
  std::vector<OpCase> cases;
  cases.push_back({"n6", {random_input({6, 4}, 381, -1, 1, false), ints({6}, {0, 1, 2, 3, 1, 2})},
                   [](const Inputs& x) { return oa::ml::accuracy(x[0], x[1]); },
                   [](const RefInputs& x) { return std::vector<double>{reference::accuracy(x[0], as_ints(x[1]), 4)}; }});
  return cases;
}

OA_OP_CASES(log_softmax, "oa::ml::log_softmax") {
  std::vector<OpCase> cases;
  std::uint64_t seed = 391;
  for (const Shape& shape : {Shape{3, 5}, Shape{2, 2, 300}})
    cases.push_back({label("x", shape.numel()), {random_input(shape, seed++, -3, 3)},
                     [](const Inputs& x) { return oa::ml::log_softmax(x[0]); },
                     [L = shape.cols()](const RefInputs& x) { return reference::log_softmax(x[0], L); }});
  // Along another axis: a transpose before and after.
  for (int dim : {0, -2})
    cases.push_back({label("dim", (dim + 3) % 3), {random_input({4, 3, 5}, seed++, -3, 3)},
                     [dim](const Inputs& x) { return oa::ml::log_softmax(x[0], dim); },
                     [dim](const RefInputs& x) {
                       return reference::along_axis(x[0], {4, 3, 5}, static_cast<std::size_t>(dim + 3) % 3, reference::log_softmax);
                     },
                     kGradTolerance,
                     {"oa::matrix::permute", "oa::ml::log_softmax", "oa::matrix::permute"}});
  // f16 and bf16 x along the last axis and another, computed in f32.
  const std::vector<OpCase> f32_cases = {cases[0], cases[2]};
  for (const OpCase& c : f32_cases)
    for (DType dtype : {DType::F16, DType::BF16}) cases.push_back(half_variant("oa::ml::log_softmax", c, dtype));
  return cases;
}

// Repeated indices (their gradients add up).
OA_OP_CASES(embedding, "oa::ml::embedding") {
  std::vector<OpCase> cases;
  const std::int64_t V = 5, D = 3;
  cases.push_back({"v5", {ints({2, 3}, {4, 0, 4, 2, 3, 1}), random_input({V, D}, 401)},
                   [](const Inputs& x) { return oa::ml::embedding(x[0], x[1]); },
                   [](const RefInputs& x) { return reference::embedding(as_ints(x[0]), x[1], V, D); }});
  return cases;
}

OA_OP_CASES(dropout, "oa::ml::dropout") {
  std::vector<OpCase> cases;
  std::uint64_t seed = 411;
  for (double p : {0.25, 0.5})
    cases.push_back({label("p", static_cast<int>(p * 100)), {random_input({3, 37}, seed++)},
                     [p](const Inputs& x) { return oa::ml::dropout(x[0], p, 1234); },
                     [p](const RefInputs& x) { return reference::dropout(x[0], p, 1234); }});
  return cases;
}

}  // namespace
}  // namespace oa::test
