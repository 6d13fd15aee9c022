// Tuning tables (oa/runtime/tuning.hpp): parsing and the errors of bad
// tables, lookup by shape bucket and through the layers, the shipped tables'
// rules for the H200 and lavapipe, and every variant of the GEMM and
// attention points forced by a table against the f64 references.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "oa/oa.hpp"
#include "oa/runtime/tuning.hpp"
#include "reference/attention.hpp"
#include "reference/conv.hpp"
#include "reference/linalg.hpp"
#include "support/expect.hpp"
#include "support/forced_tuning.hpp"

namespace {

using oa::ErrorKind;
using oa::Matrix;
using oa::Tuning;
using oa::TuningTable;
namespace ref = oa::reference;

TuningTable parse(const std::string& json) { return TuningTable::parse(json, "test.json"); }

oa::DeviceInfo device_named(const std::string& name, oa::DeviceType type, const std::string& driver = "") {
  oa::DeviceInfo d;
  d.name = name;
  d.type = type;
  d.driver_name = driver;
  return d;
}

using oa_test::Forced;

TEST(RuntimeTuning, ShippedTablesParseAndEndInTheGenericOne) {
  const auto& tables = oa::shipped_tuning_tables();
  ASSERT_GE(tables.size(), 3u);
  EXPECT_TRUE(tables.back().any_device());
  for (std::size_t i = 0; i + 1 < tables.size(); ++i) EXPECT_FALSE(tables[i].any_device()) << tables[i].source();
  // Every point of the generic table ends with a rule for every problem.
  for (const oa::TuningPoint& p : oa::tuning_points()) {
    const auto& rules = tables.back().rules(p.name);
    ASSERT_FALSE(rules.empty()) << p.name;
    for (const auto& [lo, hi] : rules.back().when) EXPECT_TRUE(!lo && !hi) << p.name;
  }
}

TEST(RuntimeTuning, BadTablesNameTheFileAndTheEntry) {
  const auto bad = [](const std::string& json, std::initializer_list<const char*> fragments) {
    return oa_test::throws([&] { (void)parse(json); }, ErrorKind::InvalidArgument, fragments);
  };
  EXPECT_TRUE(bad("{", {"test.json", "not JSON"}));
  EXPECT_TRUE(bad("[]", {"test.json", "not a JSON object"}));
  EXPECT_TRUE(bad(R"({"oa_tuning": 2})", {"test.json", "oa_tuning"}));
  EXPECT_TRUE(bad(R"({"oa_tuning": 1, "colour": 1})", {"test.json", "unknown field \"colour\""}));
  EXPECT_TRUE(bad(R"({"oa_tuning": 1, "points": {"gemm.tiles": []}})", {"test.json", "points.gemm.tiles", "unknown decision point", "gemm.tile"}));
  EXPECT_TRUE(bad(R"({"oa_tuning": 1, "points": {"gemm.tile": [{"use": "huge"}]}})",
                  {"test.json", "points.gemm.tile[0]", "unknown variant \"huge\"", "busy-square"}));
  EXPECT_TRUE(bad(R"({"oa_tuning": 1, "points": {"gemm.tile": [{"use": "busy"}, {"when": {"q": 3}, "use": "busy"}]}})",
                  {"test.json", "points.gemm.tile[1].when.q", "unknown key", "batch, m, n, k"}));
  EXPECT_TRUE(bad(R"({"oa_tuning": 1, "points": {"gemm.tile": [{"when": {"k": [9, 3]}, "use": "busy"}]}})",
                  {"test.json", "points.gemm.tile[0]", "key k has lower bound 9 above upper bound 3"}));
  EXPECT_TRUE(bad(R"({"oa_tuning": 1, "points": {"gemm.tile": [{"when": {"k": "big"}, "use": "busy"}]}})",
                  {"test.json", "points.gemm.tile[0].when.k", "neither an integer nor [lo, hi]"}));
  EXPECT_TRUE(bad(R"({"oa_tuning": 1, "points": {"gemm.tile": [{"when": {"k": [1.5, null]}, "use": "busy"}]}})",
                  {"test.json", "points.gemm.tile[0].when.k", "not an integer or null"}));
  EXPECT_TRUE(bad(R"({"oa_tuning": 1, "points": {"gemm.tile": [{"when": {}}]}})", {"test.json", "points.gemm.tile[0]", "no \"use\""}));
  EXPECT_TRUE(bad(R"({"oa_tuning": 1, "device": {"vendor": "x"}})", {"test.json", "device.vendor", "unknown filter"}));
  EXPECT_TRUE(oa_test::throws([] { (void)TuningTable::load("/nonexistent/table.json"); }, ErrorKind::InvalidArgument,
                              {"/nonexistent/table.json", "cannot be read"}));
}

TEST(RuntimeTuning, LookupByShapeBucketThroughTheLayers) {
  const TuningTable user = parse(R"({"oa_tuning": 1, "points": {"gemm.tile": [
      {"when": {"m": [1024, 2047], "k": 64}, "use": "32x32"},
      {"when": {"n": [null, 100]}, "use": "64x64"}]}})");
  const Tuning t({user});
  EXPECT_EQ(t.choose("gemm.tile", {1, 1024, 4096, 64}), "32x32");
  EXPECT_EQ(t.choose("gemm.tile", {1, 2047, 4096, 64}), "32x32");
  EXPECT_EQ(t.choose("gemm.tile", {1, 2048, 50, 64}), "64x64");  // the second rule
  // No rule of the user table matches: the generic table's rules (K <= 1024 or not).
  EXPECT_EQ(t.choose("gemm.tile", {1, 2048, 4096, 64}), "busy");
  EXPECT_EQ(t.choose("gemm.tile", {1, 2048, 4096, 8192}), "busy-square");
  // A point the user table leaves out.
  EXPECT_EQ(t.choose("gemm.skinny", {1, 1, 4096, 4096}), "skinny");
  EXPECT_TRUE(oa_test::throws([&] { (void)t.choose("gemm.tile", {1, 2}); }, ErrorKind::Internal, {"gemm.tile", "2 keys"}));
  // to_json reads back to the same rules.
  const TuningTable again = TuningTable::parse(user.to_json(), "again.json");
  EXPECT_EQ(Tuning({again}).choose("gemm.tile", {1, 1500, 4096, 64}), "32x32");
  EXPECT_EQ(Tuning({again}).choose("gemm.tile", {1, 1500, 99, 65}), "64x64");
}

// conv points: a rule bounding `transposed` decides for one direction only.
TEST(RuntimeTuning, ConvRulesCanTellTheTransposedDirectionApart) {
  const Tuning t({parse(R"({"oa_tuning": 1, "points": {"conv.igemm_tile": [
      {"when": {"transposed": [1, 1], "channels": [1, 63]}, "use": "64x16"}]}})")});
  EXPECT_EQ(t.choose("conv.igemm_tile", {8, 32, 1, 4096, 16, 1}), "64x16");
  EXPECT_NE(t.choose("conv.igemm_tile", {8, 32, 1, 4096, 16, 0}), "64x16");
}

TEST(RuntimeTuning, ShippedTablesKeepTheMeasuredRules) {
  const Tuning h200 = Tuning::for_device(device_named("NVIDIA H200", oa::DeviceType::Discrete, "NVIDIA"));
  const Tuning lavapipe = Tuning::for_device(device_named("llvmpipe (LLVM 15.0.6, 256 bits)", oa::DeviceType::Cpu, "llvmpipe"));
  const Tuning other = Tuning::for_device(device_named("Some GPU", oa::DeviceType::Discrete, "other"));
  EXPECT_EQ(h200.choose("gemm.tile", {1, 8192, 256, 1024}), "128x128");
  EXPECT_EQ(other.choose("gemm.tile", {1, 8192, 256, 1024}), "busy");
  for (const Tuning* gpu : {&h200, &other}) {
    EXPECT_EQ(gpu->choose("gemm.tile", {1, 768, 3072, 8192}), "busy-square");
    EXPECT_EQ(gpu->choose("attention.forward_lowering", {64, 2048, 2048, 128, 128, 1}), "gemm");
    EXPECT_EQ(gpu->choose("attention.forward_lowering", {64, 2048, 2048, 64, 64, 1}), "fused");
    EXPECT_EQ(gpu->choose("attention.forward_lowering", {64, 32, 2048, 128, 128, 1}), "fused");
    EXPECT_EQ(gpu->choose("attention.backward_lowering", {64, 64, 64, 32, 32, 0}), "gemm");
    EXPECT_EQ(gpu->choose("attention.backward_lowering", {64, 49, 49, 32, 32, 0}), "fused");
    EXPECT_EQ(gpu->choose("attention.flash_plan", {64, 49, 49, 32, 32, 0}), "wide");
    // The tensor-core attention: the subgroup-scope forward to head dim 128 (64-row tiles to 80, 128-row above),
    // the workgroup-scope one beyond; the workgroup-scope backward.
    EXPECT_EQ(gpu->choose("attention.coopmat_forward", {96, 1024, 1024, 64, 64, 1}), "on");
    EXPECT_EQ(gpu->choose("attention.coopmat_tile", {96, 1024, 1024, 64, 64, 1}), "sg64x32");
    EXPECT_EQ(gpu->choose("attention.coopmat_tile", {64, 1024, 1024, 80, 80, 0}), "sg64x32");
    EXPECT_EQ(gpu->choose("attention.coopmat_tile", {96, 1024, 1024, 96, 96, 1}), "sg128x64");
    EXPECT_EQ(gpu->choose("attention.coopmat_tile", {64, 2048, 2048, 128, 128, 1}), "sg128x64");
    EXPECT_EQ(gpu->choose("attention.coopmat_tile", {16, 2048, 2048, 256, 256, 1}), "wg64x16");
    EXPECT_EQ(gpu->choose("attention.coopmat_backward", {96, 1024, 1024, 64, 64, 1}), "wg64x16");
    EXPECT_EQ(gpu->choose("conv.igemm_tile", {32, 96, 1, 3136, 9, 0}), "128x128");
    EXPECT_EQ(gpu->choose("conv.igemm_tile", {32, 95, 1, 3136, 9, 0}), "128x64");
    EXPECT_EQ(gpu->choose("conv.igemm_tile", {32, 24, 1, 3136, 9, 0}), "128x32");
    EXPECT_EQ(gpu->choose("conv.igemm_tile", {32, 23, 1, 3136, 9, 0}), "64x16");
    EXPECT_EQ(gpu->choose("conv.igemm_tile", {32, 3, 1, 50176, 16, 1}), "1024x4");
    EXPECT_EQ(gpu->choose("conv.kernel", {32, 1, 144, 3136, 9, 0}), "depthwise");
    EXPECT_EQ(gpu->choose("conv.wgrad_tile", {512, 1536, 63996}), "128x128");
    EXPECT_EQ(gpu->choose("conv.wgrad_tile", {512, 1024, 1996}), "64x64");
    EXPECT_EQ(gpu->choose("conv.wgrad_tile", {4, 36, 100352}), "16x32");
  }
  EXPECT_EQ(lavapipe.choose("conv.wgrad_tile", {512, 1536, 63996}), "64x64");
  // The Hopper table serves the H100 too. 17-48 rows with a long K take 64x128 tiles elsewhere; on Hopper 17-32
  // rows take 32x128.
  const Tuning h100 = Tuning::for_device(device_named("NVIDIA H100 80GB HBM3", oa::DeviceType::Discrete, "NVIDIA"));
  EXPECT_EQ(h100.choose("conv.kernel", {32, 128, 1, 784, 9, 0}), "winograd");
  EXPECT_EQ(other.choose("conv.kernel", {32, 128, 1, 784, 9, 0}), "depthwise");
  // Stride equal to the kernel: the patch GEMM computing the wide side (U-Net's k2 s2 up-convolution, ViT's k16
  // patch embedding's input gradient), the general kernels computing the narrow one (ViT's forward, wav2vec2's k2 s2
  // convolution, ConvNeXt's k4 stem).
  for (const Tuning* t : {&h100, &other}) {
    EXPECT_EQ(t->choose("conv.patch", {8, 512, 1, 4096, 4, 1}), "patch");
    EXPECT_EQ(t->choose("conv.patch", {32, 3, 1, 50176, 256, 1}), "patch");
    EXPECT_EQ(t->choose("conv.patch", {32, 768, 1, 196, 256, 0}), "general");
    EXPECT_EQ(t->choose("conv.patch", {4, 512, 1, 999, 2, 0}), "general");
    EXPECT_EQ(t->choose("conv.patch", {32, 96, 1, 3136, 16, 0}), "general");
  }
  for (const Tuning* t : {&h200, &h100}) {
    EXPECT_EQ(t->choose("gemm.tile", {1, 24, 4096, 11008}), "32x128");
    EXPECT_EQ(t->choose("gemm.tile", {1, 32, 4096, 4096}), "32x128");
    EXPECT_EQ(t->choose("gemm.tile", {1, 40, 4096, 4096}), "64x128");
  }
  EXPECT_EQ(other.choose("gemm.tile", {1, 24, 4096, 11008}), "64x128");
  for (const Tuning* t : {&h200, &h100, &other}) EXPECT_EQ(t->choose("gemm.tile", {1, 32, 2304, 768}), "busy");
  // Rules measured by oa tune come before the general rules: GPT-2's layers take 64x128w8, the character
  // transformer's weight gradients 128x128.
  EXPECT_EQ(h200.choose("gemm.tile", {1, 128, 3072, 768}), "64x128");
  EXPECT_EQ(other.choose("gemm.tile", {1, 128, 3072, 768}), "busy");
  EXPECT_EQ(h200.choose("gemm.tile", {1, 4096, 2304, 768}), "64x128w8");
  EXPECT_EQ(h200.choose("gemm.tile", {1, 8192, 768, 3072}), "64x128w8");
  EXPECT_EQ(h200.choose("gemm.tile", {1, 1024, 256, 8192}), "128x128");
  EXPECT_EQ(other.choose("gemm.tile", {1, 4096, 2304, 768}), "busy");
  EXPECT_EQ(h200.choose("gemm.tile", {1, 1024, 1024, 2048}), "busy-square");
  // Large GEMMs (M >= 2048, N >= 1024, K >= 1024) take 128x128w on Hopper, ahead of the bucket rules (measured on
  // an H100): Llama 3's MLP up-projection, 4096^3, a batched one; elsewhere the general rules.
  for (const Tuning* t : {&h200, &h100}) {
    EXPECT_EQ(t->choose("gemm.tile", {1, 4096, 14336, 4096}), "128x128w");
    EXPECT_EQ(t->choose("gemm.tile", {1, 4096, 4096, 4096}), "128x128w");
    EXPECT_EQ(t->choose("gemm.tile", {8, 2048, 1024, 1024}), "128x128w");
    EXPECT_NE(t->choose("gemm.tile", {1, 1024, 1024, 1024}), "128x128w");
    EXPECT_NE(t->choose("gemm.tile", {1, 2047, 4096, 4096}), "128x128w");
    EXPECT_NE(t->choose("gemm.tile", {1, 4096, 4096, 1023}), "128x128w");
  }
  EXPECT_EQ(other.choose("gemm.tile", {1, 4096, 4096, 4096}), "busy-square");
  EXPECT_EQ(lavapipe.choose("gemm.tile", {1, 4096, 4096, 4096}), "busy-square");
  EXPECT_EQ(h200.choose("conv.igemm_tile", {32, 512, 1, 49, 9, 0}), "128x64");
  EXPECT_EQ(other.choose("conv.igemm_tile", {32, 512, 1, 49, 9, 0}), "128x128");
  EXPECT_EQ(h200.choose("attention.forward_lowering", {256, 4, 4096, 128, 128, 1}), "gemm");
  EXPECT_EQ(other.choose("attention.forward_lowering", {256, 4, 4096, 128, 128, 1}), "fused");
  EXPECT_EQ(lavapipe.choose("attention.forward_lowering", {64, 2048, 2048, 128, 128, 1}), "fused");
  EXPECT_EQ(lavapipe.choose("attention.backward_lowering", {64, 2048, 2048, 128, 128, 1}), "fused");
  EXPECT_EQ(lavapipe.choose("attention.flash_plan", {64, 2048, 2048, 128, 128, 1}), "narrow");
  EXPECT_EQ(lavapipe.choose("gemm.tile", {1, 768, 3072, 8192}), "busy-square");
  // Winograd only where a device's own measurements chose it: lavapipe's large ungrouped 3x3 problems, the
  // H200's ungrouped 3x3 problems in both directions.
  EXPECT_EQ(lavapipe.choose("conv.kernel", {32, 256, 1, 196, 9, 0}), "winograd");
  EXPECT_EQ(lavapipe.choose("conv.kernel", {1, 256, 1, 196, 9, 0}), "depthwise");
  EXPECT_EQ(lavapipe.choose("conv.kernel", {32, 64, 1, 3136, 9, 0}), "depthwise");
  EXPECT_EQ(h200.choose("conv.kernel", {32, 256, 1, 196, 9, 0}), "winograd");
  EXPECT_EQ(h200.choose("conv.kernel", {1, 256, 1, 196, 9, 1}), "winograd");
  EXPECT_EQ(h200.choose("conv.kernel", {32, 4, 32, 3136, 9, 0}), "depthwise");
  EXPECT_EQ(h200.choose("conv.kernel", {32, 256, 1, 196, 1, 0}), "depthwise");
  EXPECT_EQ(other.choose("conv.kernel", {32, 256, 1, 196, 9, 0}), "depthwise");
  // The 16-bit convolution forward: the tensor-core implicit GEMM on GPUs for up to 256 channels from 784 positions
  // (ResNet-50 layer 2, VGG-16 conv3, the 1x1 expansion to 256 channels), the columns path for fewer positions
  // (ResNet-50 layer 3), more channels (VGG-16 conv4_3) and on lavapipe.
  for (const Tuning* t : {&h200, &h100, &other}) {
    EXPECT_EQ(t->choose("conv.half_forward", {16, 256, 1, 3136, 9, 0}), "implicit");
    EXPECT_EQ(t->choose("conv.half_forward", {32, 128, 1, 784, 9, 0}), "implicit");
    EXPECT_EQ(t->choose("conv.half_forward", {32, 256, 1, 196, 9, 0}), "columns");
    EXPECT_EQ(t->choose("conv.half_forward", {16, 512, 1, 784, 9, 0}), "columns");
    EXPECT_EQ(t->choose("conv.half_forward", {32, 256, 1, 3136, 1, 0}), "implicit");
    // The implicit weight gradient for 3x3 problems to 64 output channels (ResNet-50 layer 1, VGG-16 conv1_2); columns
    // for wider outputs and 1x1 kernels.
    EXPECT_EQ(t->choose("conv.half_wgrad", {32, 64, 1, 3136, 9, 0}), "implicit");
    EXPECT_EQ(t->choose("conv.half_wgrad", {8, 64, 1, 50176, 9, 0}), "implicit");
    EXPECT_EQ(t->choose("conv.half_wgrad", {16, 256, 1, 3136, 9, 0}), "columns");
    EXPECT_EQ(t->choose("conv.half_wgrad", {32, 128, 1, 784, 9, 0}), "columns");
    EXPECT_EQ(t->choose("conv.half_wgrad", {32, 256, 1, 3136, 1, 0}), "columns");
    // The transposed direction (wide from narrow): the gather for 3x3 problems to 64 wide-side channels from 3000
    // positions (ResNet-50 layer 1's and VGG-16 conv1_2's input gradients), columns for Darknet-53's 128 channels, the
    // 2x2 up-convolutions and 512 channels; the forward's rules do not reach it.
    EXPECT_EQ(t->choose("conv.half_forward", {32, 64, 1, 3136, 9, 1}), "implicit");
    EXPECT_EQ(t->choose("conv.half_forward", {8, 64, 1, 50176, 9, 1}), "implicit");
    EXPECT_EQ(t->choose("conv.half_forward", {32, 64, 1, 784, 9, 1}), "columns");
    EXPECT_EQ(t->choose("conv.half_forward", {16, 128, 1, 2704, 9, 1}), "columns");
    EXPECT_EQ(t->choose("conv.half_forward", {16, 128, 1, 3136, 4, 1}), "columns");
    EXPECT_EQ(t->choose("conv.half_forward", {16, 512, 1, 784, 9, 1}), "columns");
    // High float32 matmul precision splits the large GEMMs only (4096^3 1.81x FP32; GPT-2's 768-wide ones lose).
    EXPECT_EQ(t->choose("gemm.f32_high", {1, 4096, 4096, 4096}), "split-f16");
    EXPECT_EQ(t->choose("gemm.f32_high", {1, 4096, 2304, 768}), "fp32");
    EXPECT_EQ(t->choose("gemm.f32_high", {1, 8, 4096, 4096}), "fp32");
  }
  EXPECT_EQ(lavapipe.choose("conv.half_forward", {16, 256, 1, 3136, 9, 0}), "columns");
  EXPECT_EQ(lavapipe.choose("conv.half_forward", {16, 128, 1, 12544, 9, 1}), "columns");
  EXPECT_EQ(oa::tuning_file_name(device_named("NVIDIA H200", oa::DeviceType::Discrete)), "nvidia-h200.json");
}

TEST(RuntimeTuning, AUserTableFromOaTuningOverridesAndABadOneNamesItself) {
  const std::string dir = ::testing::TempDir();
  const std::string good = dir + "/oa_tuning_good.json", bad = dir + "/oa_tuning_bad.json";
  {
    std::ofstream(good) << R"({"oa_tuning": 1, "points": {"attention.flash_plan": [{"use": "wide"}]}})";
    std::ofstream(bad) << R"({"oa_tuning": 1, "points": {"attention.flash_plan": [{"use": "medium"}]}})";
  }
  const auto lavapipe = device_named("llvmpipe", oa::DeviceType::Cpu);
  ::setenv("OA_TUNING", good.c_str(), 1);
  EXPECT_EQ(Tuning::for_device(lavapipe).choose("attention.flash_plan", {1, 8, 8, 8, 8, 0}), "wide");
  ::setenv("OA_TUNING", bad.c_str(), 1);
  EXPECT_TRUE(oa_test::throws([&] { (void)Tuning::for_device(lavapipe); }, ErrorKind::InvalidArgument,
                              {"oa_tuning_bad.json", "points.attention.flash_plan[0]", "unknown variant \"medium\""}));
  ::unsetenv("OA_TUNING");
}

// C = A B^T through each forced variant of each GEMM point, against the f64
// reference: skinny rows, tiles that fill the device or not, and K split or not.
TEST(MatrixTuning, EveryGemmVariantMatchesTheReference) {
  struct Shape {
    std::int64_t m, n, k;
  };
  for (const oa::TuningPoint* p : {&oa::tuning_point("gemm.skinny"), &oa::tuning_point("gemm.tile"), &oa::tuning_point("gemm.split_k")})
    for (std::string_view variant : p->variants)
      for (const Shape s : {Shape{3, 70, 600}, Shape{130, 90, 40}, Shape{40, 200, 1100}}) {
        SCOPED_TRACE(fmt::format("{} = {}, M {} N {} K {}", p->name, variant, s.m, s.n, s.k));
        const Forced forced(std::string(p->name), std::string(variant));
        const auto a = oa_test::random_values(s.m * s.k, 1), b = oa_test::random_values(s.n * s.k, 2);
        const Matrix c = oa::matrix::matmul_nt(Matrix::from_vector({s.m, s.k}, a), Matrix::from_vector({s.n, s.k}, b));
        const auto want = ref::gemm(1, s.m, s.n, s.k, false, true, 1.0, 0.0, {&a, 0, 0}, {&b, 0, 0},
                                    std::vector<float>(static_cast<std::size_t>(s.m * s.n)), 0, 0);
        EXPECT_TRUE(oa_test::near(c.to_vector(), want.value, 1e-4, 1e-4));
      }
}

// A 3x3 convolution (stride 1, padding 1) and its input gradient through
// each forced variant of each convolution point, against the f64 reference
// (the input gradient as the transposed convolution of the output gradient):
// depthwise, grouped with few channels per group, dense, and dense over more
// positions and channels than the largest tile (several partial tiles).
TEST(ConvTuning, EveryConvVariantMatchesTheReference) {
  struct Case {
    std::int64_t c, o, groups, size;
  };
  for (const oa::TuningPoint* p : {&oa::tuning_point("conv.kernel"), &oa::tuning_point("conv.igemm_tile")})
    for (std::string_view variant : p->variants)
      for (const Case c : {Case{8, 8, 8, 6}, Case{16, 16, 4, 5}, Case{6, 40, 1, 4}, Case{20, 136, 1, 17}}) {
        SCOPED_TRACE(fmt::format("{} = {}, C {} O {} groups {} size {}", p->name, variant, c.c, c.o, c.groups, c.size));
        const Forced forced(std::string(p->name), std::string(variant));
        const std::array<std::int64_t, 4> xs{1, c.c, c.size, c.size}, ws{c.o, c.c / c.groups, 3, 3};
        const auto x = oa_test::random_values(c.c * c.size * c.size, 7), w = oa_test::random_values(c.o * (c.c / c.groups) * 9, 8),
                   b = oa_test::random_values(c.o, 9), g = oa_test::random_values(c.o * c.size * c.size, 10);
        const Matrix mx = Matrix::from_vector({1, c.c, c.size, c.size}, x);
        oa::set_requires_grad(mx);
        const Matrix y = oa::ml::conv_2d(mx, Matrix::from_vector({c.o, c.c / c.groups, 3, 3}, w), Matrix::from_vector({c.o}, b),
                                         {.padding = {1, 1}, .groups = c.groups});
        oa::backward(y, Matrix::from_vector({1, c.o, c.size, c.size}, g));
        const ref::ConvParams rp{.padding = {1, 1}, .groups = c.groups};
        std::array<std::int64_t, 4> shape{};
        EXPECT_TRUE(oa_test::near(y.to_vector(), ref::conv2d(oa_test::f64(x), xs, oa_test::f64(w), ws, oa_test::f64(b), rp, shape), 1e-4, 1e-4));
        EXPECT_TRUE(oa_test::near(oa::grad(mx).to_vector(),
                                  ref::conv_transpose2d(oa_test::f64(g), {1, c.o, c.size, c.size}, oa_test::f64(w), ws, {}, rp, shape), 1e-4,
                                  1e-4));
      }
}

// The few-channel tile (1024x4) on what it is for: a forward to 3 channels
// over K = 270 (two shared weight chunks) with stride and padding, a
// transposed convolution to 3 channels (4 phases), the input gradient of a
// one-channel signal (k 10, stride 5: 5 phases, 2406 positions, 3 workgroups),
// and 6 channels (two column tiles); forward and input gradient against the
// f64 references (the input gradient as the transposed convolution of the
// output gradient, and the reverse).
TEST(ConvTuning, FewChannelTileMatchesTheReference) {
  struct Case {
    std::array<std::int64_t, 4> x, w;
    std::array<std::int64_t, 2> stride, padding;
    bool transposed;
  };
  const Forced forced("conv.igemm_tile", "1024x4");
  const Case cases[] = {{{2, 30, 9, 11}, {3, 30, 3, 3}, {2, 2}, {1, 1}, false},
                        {{2, 6, 5, 5}, {6, 3, 4, 4}, {2, 2}, {1, 1}, true},
                        {{2, 1, 1, 1203}, {8, 1, 1, 10}, {1, 5}, {0, 0}, false},
                        {{1, 4, 7, 6}, {6, 4, 3, 3}, {1, 1}, {1, 1}, false}};
  for (const Case& c : cases) {
    SCOPED_TRACE(fmt::format("case {}", &c - cases));
    const auto size = [](const auto& s) { return s[0] * s[1] * s[2] * s[3]; };
    const auto x = oa_test::random_values(size(c.x), 21), w = oa_test::random_values(size(c.w), 22);
    const Matrix mx = oa::set_requires_grad(Matrix::from_vector({c.x[0], c.x[1], c.x[2], c.x[3]}, x));
    const Matrix mw = Matrix::from_vector({c.w[0], c.w[1], c.w[2], c.w[3]}, w);
    const Matrix y = c.transposed ? oa::ml::conv_transpose_2d(mx, mw, Matrix(), {.stride = c.stride, .padding = c.padding})
                                  : oa::ml::conv_2d(mx, mw, Matrix(), {.stride = c.stride, .padding = c.padding});
    const auto g = oa_test::random_values(y.numel(), 23);
    oa::backward(y, Matrix::from_vector(y.shape(), g));
    const oa::Shape ys = y.shape();
    const std::array<std::int64_t, 4> gs{ys[0], ys[1], ys[2], ys[3]};
    // The input gradient's reference: the other direction of the relation, with
    // output padding that restores the input's extent where a stride drops a tail.
    ref::ConvParams p{.stride = c.stride, .padding = c.padding};
    std::array<std::int64_t, 4> shape{};
    const auto want_y = c.transposed ? ref::conv_transpose2d(oa_test::f64(x), c.x, oa_test::f64(w), c.w, {}, p, shape)
                                     : ref::conv2d(oa_test::f64(x), c.x, oa_test::f64(w), c.w, {}, p, shape);
    EXPECT_TRUE(oa_test::near(y.to_vector(), want_y, 1e-4, 1e-4));
    std::vector<double> want_dx;
    if (c.transposed) {
      want_dx = ref::conv2d(oa_test::f64(g), gs, oa_test::f64(w), c.w, {}, p, shape);
    } else {
      for (int a = 0; a < 2; ++a)
        p.output_padding[a] = (c.x[2 + a] + 2 * c.padding[a] - c.w[2 + a]) % c.stride[a];
      want_dx = ref::conv_transpose2d(oa_test::f64(g), gs, oa_test::f64(w), c.w, {}, p, shape);
    }
    EXPECT_TRUE(oa_test::near(oa::grad(mx).to_vector(), want_dx, 1e-4, 1e-4));
  }
}

// The weight gradient through each forced tile of conv.wgrad_tile, against
// an f64 sum over narrow positions (the relation of geometry.glsl: narrow is
// the convolution's output gradient or the transposed convolution's input):
// partial tiles on both axes, two groups, strides, padding and dilation, a
// reduction long enough to split, and a transposed convolution.
TEST(ConvTuning, EveryWeightGradientTileMatchesTheReference) {
  struct Case {
    std::array<std::int64_t, 4> x, w;  // input [N, C, H, W]; weight (torch's layout)
    std::array<std::int64_t, 2> stride, padding, dilation;
    std::int64_t groups;
    bool transposed;
  };
  const Case cases[] = {{{2, 6, 9, 10}, {130, 6, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, false},
                        {{1, 8, 12, 11}, {100, 4, 3, 2}, {1, 1}, {1, 0}, {2, 1}, 2, false},
                        {{3, 40, 1, 700}, {64, 40, 1, 3}, {1, 1}, {0, 1}, {1, 1}, 1, false},
                        {{2, 70, 4, 5}, {70, 9, 3, 3}, {2, 2}, {1, 1}, {1, 1}, 1, true}};
  for (std::string_view variant : oa::tuning_point("conv.wgrad_tile").variants)
    for (const Case& c : cases) {
      SCOPED_TRACE(fmt::format("conv.wgrad_tile = {}, case {}", variant, &c - cases));
      const Forced forced("conv.wgrad_tile", std::string(variant));
      const auto size = [](const auto& s) { return s[0] * s[1] * s[2] * s[3]; };
      const auto x = oa_test::random_values(size(c.x), 11), w = oa_test::random_values(size(c.w), 12);
      const Matrix mw = oa::set_requires_grad(Matrix::from_vector({c.w[0], c.w[1], c.w[2], c.w[3]}, w));
      const Matrix mx = Matrix::from_vector({c.x[0], c.x[1], c.x[2], c.x[3]}, x);
      const Matrix y = c.transposed ? oa::ml::conv_transpose_2d(mx, mw, Matrix(),
                                                                {.stride = c.stride, .padding = c.padding, .dilation = c.dilation,
                                                                 .groups = c.groups})
                                    : oa::ml::conv_2d(mx, mw, Matrix(),
                                                      {.stride = c.stride, .padding = c.padding, .dilation = c.dilation, .groups = c.groups});
      const auto g = oa_test::random_values(y.numel(), 13);
      oa::backward(y, Matrix::from_vector(y.shape(), g));
      // The relation's narrow and wide sides (reference::conv_weight_grad).
      const oa::Shape ys = y.shape();
      const std::array<std::int64_t, 4> gs{ys[0], ys[1], ys[2], ys[3]};
      const auto want = ref::conv_weight_grad(oa_test::f64(c.transposed ? x : g), c.transposed ? c.x : gs,
                                              oa_test::f64(c.transposed ? g : x), c.transposed ? gs : c.x, c.w[2], c.w[3],
                                              {.stride = c.stride, .padding = c.padding, .dilation = c.dilation, .groups = c.groups});
      EXPECT_TRUE(oa_test::near(oa::grad(mw).to_vector(), want, 1e-4, 1e-4));
    }
}

// Attention forward and backward through each forced variant of each
// attention point, against the f64 reference (causal, Sq != Sk, 64 rows so
// that the GEMM lowerings apply, and a decoding row).
TEST(AttentionTuning, EveryAttentionVariantMatchesTheReference) {
  struct Case {
    std::int64_t bh, sq, sk, d;
    bool causal;
  };
  for (const oa::TuningPoint* p : {&oa::tuning_point("attention.forward_lowering"), &oa::tuning_point("attention.backward_lowering"),
                                   &oa::tuning_point("attention.flash_plan")}) {
    std::set<std::uint64_t> dispatches;  // of the first case, per variant
    for (std::string_view variant : p->variants)
      for (const Case c : {Case{1, 64, 72, 16, true}, Case{1, 1, 40, 16, false}}) {
        SCOPED_TRACE(fmt::format("{} = {}, BH {} Sq {} Sk {} D {} causal {}", p->name, variant, c.bh, c.sq, c.sk, c.d, c.causal));
        const Forced forced(std::string(p->name), std::string(variant));
        const auto q = oa_test::random_values(c.bh * c.sq * c.d, 3), k = oa_test::random_values(c.bh * c.sk * c.d, 4),
                   v = oa_test::random_values(c.bh * c.sk * c.d, 5), g = oa_test::random_values(c.bh * c.sq * c.d, 6);
        const Matrix mq = Matrix::from_vector({c.bh, c.sq, c.d}, q), mk = Matrix::from_vector({c.bh, c.sk, c.d}, k),
                     mv = Matrix::from_vector({c.bh, c.sk, c.d}, v);
        for (const Matrix& m : {mq, mk, mv}) oa::set_requires_grad(m);
        const double scale = 1.0 / std::sqrt(static_cast<double>(c.d));
        const Matrix dout = Matrix::from_vector({c.bh, c.sq, c.d}, g);
        const std::uint64_t before = oa::Engine::default_engine().stats().dispatches;
        const Matrix out = oa::ml::scaled_dot_product_attention(mq, mk, mv, Matrix(), std::nullopt, c.causal);
        oa::backward(out, dout);
        oa::Engine::default_engine().synchronize();
        if (c.sq > 1) dispatches.insert(oa::Engine::default_engine().stats().dispatches - before);
        ref::AttentionProblem rp{.bh = c.bh, .sq = c.sq, .sk = c.sk, .dh = c.d, .dv = c.d, .scale = scale, .causal = c.causal};
        const auto want = ref::attention(rp, oa_test::f64(q), oa_test::f64(k), oa_test::f64(v));
        const auto grads = ref::attention_backward(rp, oa_test::f64(q), oa_test::f64(k), oa_test::f64(v), oa_test::f64(g));
        EXPECT_TRUE(oa_test::near(out.to_vector(), want.out, 1e-5, 1e-4));
        EXPECT_TRUE(oa_test::near(oa::grad(mq).to_vector(), grads.dq, 1e-4, 1e-3));
        EXPECT_TRUE(oa_test::near(oa::grad(mk).to_vector(), grads.dk, 1e-4, 1e-3));
        EXPECT_TRUE(oa_test::near(oa::grad(mv).to_vector(), grads.dv, 1e-4, 1e-3));
      }
    // The lowerings differ in their dispatches, so the table did steer them.
    if (p->name != "attention.flash_plan") {
      EXPECT_EQ(dispatches.size(), 2u) << p->name;
    }
  }
}

}  // namespace
