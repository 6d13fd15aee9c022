#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "oa/oa.hpp"
#include "support/expect.hpp"
#include "support/temp_dir.hpp"

namespace {

using oa::ErrorKind;
using oa::Matrix;
using oa::test::TempDir;
namespace ml = oa::ml;

std::vector<std::uint32_t> bits_of(const Matrix& m) {
  std::vector<std::uint32_t> out(static_cast<std::size_t>(m.numel()));
  if (out.empty()) return out;  // memcpy from an empty vector's null data() is undefined
  if (m.dtype() == oa::DType::I32) {
    const auto v = m.to_i32();
    std::memcpy(out.data(), v.data(), v.size() * 4);
  } else {
    const auto v = m.to_vector();
    std::memcpy(out.data(), v.data(), v.size() * 4);
  }
  return out;
}

float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

ml::NamedMatrices sample_tensors() {
  std::vector<float> special = {0.0f, -0.0f, 1.0f / 3.0f, std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                                from_bits(0x7FC01234u),  // a NaN with a payload
                                from_bits(0x00000001u),  // the smallest denormal
                                std::numeric_limits<float>::max(), -1e-30f};
  std::vector<float> odd(3 * 5 * 7);
  for (std::size_t i = 0; i < odd.size(); ++i) odd[i] = std::sin(static_cast<float>(i)) * 1e3f;
  std::vector<std::int32_t> ints = {0, -1, std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max(), 17};
  return {{"layer.weight", Matrix::from_vector({3, 5, 7}, odd)},
          {"special", Matrix::from_vector({9}, special)},
          {"scalar", Matrix::from_vector({}, std::vector<float>{2.5f})},
          {"empty", Matrix::zeros({0, 3})},
          {"indices", Matrix::from_i32({5, 1}, ints)}};
}

TEST(NnCheckpoint, RoundTripIsBitExact) {
  TempDir dir;
  const auto tensors = sample_tensors();
  ml::save_safetensors(dir / "model.safetensors", tensors, {{"step", "12"}, {"format", "pt"}});
  const auto c = ml::load_safetensors(dir / "model.safetensors");
  ASSERT_EQ(c.tensors.size(), tensors.size());
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    SCOPED_TRACE(tensors[i].first);
    EXPECT_EQ(c.tensors[i].first, tensors[i].first);  // data order is save order
    const Matrix& m = c.at(tensors[i].first);
    EXPECT_EQ(m.shape(), tensors[i].second.shape());
    EXPECT_EQ(m.dtype(), tensors[i].second.dtype());
    EXPECT_EQ(bits_of(m), bits_of(tensors[i].second));
  }
  EXPECT_EQ(c.metadata, (ml::Metadata{{"format", "pt"}, {"step", "12"}}));
  EXPECT_EQ(ml::read_safetensors_metadata(dir / "model.safetensors"), c.metadata);
  EXPECT_TRUE(oa_test::throws([&] { (void)c.at("nope"); }, ErrorKind::InvalidArgument, {"nope"}));

  // Into existing Matrices (a map this time): values land in place, versions move.
  std::map<std::string, Matrix> targets;
  for (const auto& [name, m] : tensors)
    targets[name] = m.dtype() == oa::DType::I32 ? Matrix::from_i32(m.shape(), std::vector<std::int32_t>(m.numel())) : Matrix::zeros(m.shape());
  const auto version = targets["special"].version();
  const auto meta = ml::load_safetensors_into(dir / "model.safetensors", targets);
  EXPECT_EQ(meta.at("step"), "12");
  EXPECT_GT(targets["special"].version(), version);
  for (const auto& [name, m] : tensors) EXPECT_EQ(bits_of(targets[name]), bits_of(m)) << name;
}

TEST(NnCheckpoint, HeaderParsesIndependentlyOfTheWriter) {
  TempDir dir;
  const auto w = Matrix::from_vector({2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6});
  const auto idx = Matrix::from_i32({3}, std::vector<std::int32_t>{7, -8, 9});
  ml::save_safetensors(dir / "t.safetensors", {{"w", w}, {"idx", idx}}, {{"note", "hi"}});
  const auto bytes = oa::test::read_file(dir / "t.safetensors");
  ASSERT_GE(bytes.size(), 8u);
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<std::uint64_t>(bytes[static_cast<std::size_t>(i)]) << (8 * i);
  EXPECT_EQ(n % 8, 0u);
  ASSERT_LE(8 + n, bytes.size());
  const auto header = nlohmann::json::parse(bytes.begin() + 8, bytes.begin() + 8 + static_cast<std::ptrdiff_t>(n));
  ASSERT_TRUE(header.is_object());
  EXPECT_EQ(header.size(), 3u);
  EXPECT_EQ(header["__metadata__"], nlohmann::json({{"note", "hi"}}));
  EXPECT_EQ(header["w"]["dtype"], "F32");
  EXPECT_EQ(header["w"]["shape"], nlohmann::json({2, 3}));
  EXPECT_EQ(header["w"]["data_offsets"], nlohmann::json({0, 24}));
  EXPECT_EQ(header["idx"]["dtype"], "I32");
  EXPECT_EQ(header["idx"]["shape"], nlohmann::json({3}));
  EXPECT_EQ(header["idx"]["data_offsets"], nlohmann::json({24, 36}));
  ASSERT_EQ(bytes.size(), 8 + n + 36);
  const std::uint8_t* data = bytes.data() + 8 + n;
  float f[6];
  std::memcpy(f, data, 24);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(f[i], static_cast<float>(i + 1));
  std::int32_t k[3];
  std::memcpy(k, data + 24, 12);
  EXPECT_EQ(k[0], 7);
  EXPECT_EQ(k[1], -8);
  EXPECT_EQ(k[2], 9);
}

TEST(NnCheckpoint, MissingExtraAndMismatchedTensorsAreNamed) {
  TempDir dir;
  const auto file = dir / "m.safetensors";
  ml::save_safetensors(file, {{"a", Matrix::ones({2, 2})}, {"b", Matrix::ones({3})}});
  const auto a = Matrix::full({2, 2}, 5.0f);
  const auto b = Matrix::full({3}, 5.0f);
  const auto op = "oa::ml::load_safetensors_into";
  EXPECT_TRUE(oa_test::throws([&] { ml::load_safetensors_into(file, {{"a", a}}); }, ErrorKind::InvalidArgument, {op, "extra tensor 'b'"}));
  EXPECT_TRUE(oa_test::throws([&] { ml::load_safetensors_into(file, {{"a", a}, {"b", b}, {"c", Matrix::ones({1})}}); }, ErrorKind::InvalidArgument,
               {op, "tensor 'c'", "missing"}));
  EXPECT_TRUE(oa_test::throws([&] { ml::load_safetensors_into(file, {{"a", Matrix::ones({4})}, {"b", b}}); }, ErrorKind::InvalidArgument,
               {op, "tensor 'a' mismatches", "[2, 2]", "[4]"}));
  EXPECT_TRUE(oa_test::throws([&] { ml::load_safetensors_into(file, {{"a", a}, {"b", Matrix::from_i32({3}, std::vector<std::int32_t>{1, 2, 3})}}); },
               ErrorKind::InvalidArgument, {op, "tensor 'b' mismatches", "I32"}));
  // Nothing was written by the failed loads.
  EXPECT_EQ(a.to_vector(), std::vector<float>(4, 5.0f));
  EXPECT_EQ(b.to_vector(), std::vector<float>(3, 5.0f));
  ml::load_safetensors_into(file, {{"b", b}, {"a", a}});
  EXPECT_EQ(a.to_vector(), std::vector<float>(4, 1.0f));

  EXPECT_TRUE(oa_test::throws([&] { ml::save_safetensors(dir / "x", {{"a", a}, {"a", b}}); }, ErrorKind::InvalidArgument, {"'a' is named twice"}));
  EXPECT_TRUE(oa_test::throws([&] { ml::save_safetensors(dir / "x", {{"__metadata__", a}}); }, ErrorKind::InvalidArgument, {"reserved"}));
  EXPECT_TRUE(oa_test::throws([&] { ml::save_safetensors(dir / "x", {{"u", Matrix()}}); }, ErrorKind::InvalidArgument, {"'u'", "undefined"}));
}

TEST(NnCheckpoint, F16AndBF16TensorsRoundTripBitForBit) {
  TempDir dir;
  const auto v = oa_test::random_values(7, 11);
  const ml::NamedMatrices tensors = {{"h", Matrix::from_vector({7}, v, oa::DType::F16)},
                                     {"b", Matrix::from_vector({7, 1}, v, oa::DType::BF16)}};
  ml::save_safetensors(dir / "half.safetensors", tensors);
  const auto c = ml::load_safetensors(dir / "half.safetensors");
  ASSERT_EQ(c.tensors.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(c.tensors[i].second.dtype(), tensors[i].second.dtype());
    EXPECT_EQ(c.tensors[i].second.shape(), tensors[i].second.shape());
    EXPECT_EQ(bits_of(c.tensors[i].second), bits_of(tensors[i].second));
  }
  const Matrix into = Matrix::from_vector({7}, std::vector<float>(7), oa::DType::F16);
  EXPECT_TRUE(oa_test::throws([&] { ml::load_safetensors_into(dir / "half.safetensors", {{"h", into}, {"b", Matrix::zeros({7, 1})}}); },
                              ErrorKind::InvalidArgument, {"tensor 'b'", "BF16 [7, 1] in the file", "F32 [7, 1] in the target"}));
  ml::load_safetensors_into(dir / "half.safetensors", {{"h", into}, {"b", Matrix::from_vector({7, 1}, v, oa::DType::BF16)}});
  EXPECT_EQ(bits_of(into), bits_of(tensors[0].second));
}

TEST(NnCheckpoint, F16AndBF16ReadAFileWrittenByHand) {
  TempDir dir;
  // f16 1, -2, inf, 2^-24 (the smallest subnormal), then bf16 1, 3.140625, -0; little-endian.
  const std::string json =
      R"({"h":{"dtype":"F16","shape":[4],"data_offsets":[0,8]},"b":{"dtype":"BF16","shape":[3],"data_offsets":[8,14]}})";
  const std::vector<std::uint8_t> data = {0x00, 0x3c, 0x00, 0xc0, 0x00, 0x7c, 0x01, 0x00, 0x80, 0x3f, 0x49, 0x40, 0x00, 0x80};
  std::vector<std::uint8_t> file(8);
  for (int i = 0; i < 8; ++i) file[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(json.size() >> (8 * i));
  file.insert(file.end(), json.begin(), json.end());
  file.insert(file.end(), data.begin(), data.end());
  oa::test::write_file(dir / "hand.safetensors", file);
  const auto c = ml::load_safetensors(dir / "hand.safetensors");
  EXPECT_EQ(c.at("h").dtype(), oa::DType::F16);
  EXPECT_EQ(c.at("h").to_vector(), (std::vector<float>{1.0f, -2.0f, INFINITY, 0x1p-24f}));
  EXPECT_EQ(c.at("b").dtype(), oa::DType::BF16);
  const auto b = c.at("b").to_vector();
  EXPECT_EQ(b, (std::vector<float>{1.0f, 3.140625f, -0.0f}));
  EXPECT_TRUE(std::signbit(b[2]));
  // Written back, the data bytes are the same.
  ml::save_safetensors(dir / "again.safetensors", c.tensors);
  const auto again = oa::test::read_file(dir / "again.safetensors");
  ASSERT_GE(again.size(), data.size());
  EXPECT_EQ(std::vector<std::uint8_t>(again.end() - static_cast<std::ptrdiff_t>(data.size()), again.end()), data);
}

// BOOL is one byte an element (torch's bool); a byte other than 0 reads as true.
TEST(NnCheckpoint, BoolTensorsRoundTripAndReadAFileWrittenByHand) {
  TempDir dir;
  const Matrix mask = Matrix::from_bool({2, 3}, std::vector<bool>{true, false, false, true, true, false});
  ml::save_safetensors(dir / "mask.safetensors", {{"mask", mask}, {"one", Matrix::from_bool({1}, std::vector<bool>{true})}});
  const auto c = ml::load_safetensors(dir / "mask.safetensors");
  EXPECT_EQ(c.at("mask").dtype(), oa::DType::Bool);
  EXPECT_EQ(c.at("mask").shape(), mask.shape());
  EXPECT_EQ(c.at("mask").to_bool(), mask.to_bool());
  EXPECT_EQ(c.at("one").to_bool(), std::vector<std::uint8_t>{1});
  const Matrix into = Matrix::from_bool({2, 3}, std::vector<bool>(6));
  ml::load_safetensors_into(dir / "mask.safetensors", {{"mask", into}, {"one", Matrix::from_bool({1}, std::vector<bool>{false})}});
  EXPECT_EQ(into.to_bool(), mask.to_bool());
  const std::string json = R"({"b":{"dtype":"BOOL","shape":[5],"data_offsets":[0,5]}})";
  std::vector<std::uint8_t> file(8);
  for (int i = 0; i < 8; ++i) file[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(json.size() >> (8 * i));
  file.insert(file.end(), json.begin(), json.end());
  file.insert(file.end(), {1, 0, 2, 255, 0});
  oa::test::write_file(dir / "hand.safetensors", file);
  EXPECT_EQ(ml::load_safetensors(dir / "hand.safetensors").at("b").to_bool(), (std::vector<std::uint8_t>{1, 0, 1, 1, 0}));
}

TEST(NnCheckpoint, TruncatedAndMalformedFilesFailClearly) {
  TempDir dir;
  const auto good = dir / "good.safetensors";
  ml::save_safetensors(good, {{"w", Matrix::ones({4, 4})}});
  const auto bytes = oa::test::read_file(good);
  const auto op = "oa::ml::load_safetensors";
  auto write = [&](const std::string& name, std::vector<std::uint8_t> b) {
    oa::test::write_file(dir / name, b);
    return dir / name;
  };
  for (std::size_t cut : {std::size_t{3}, std::size_t{20}, bytes.size() - 1}) {
    SCOPED_TRACE(cut);
    const auto p = write("cut", {bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(cut)});
    EXPECT_TRUE(oa_test::throws([&] { ml::load_safetensors(p); }, ErrorKind::InvalidArgument, {op, "cut", "truncated"}));
  }
  auto longer = bytes;
  longer.push_back(0);
  EXPECT_TRUE(oa_test::throws([&] { ml::load_safetensors(write("long", longer)); }, ErrorKind::InvalidArgument, {"long", "1 trailing bytes"}));

  auto with_header = [&](const std::string& name, std::string json, std::size_t data_bytes) {
    std::vector<std::uint8_t> b(8);
    for (int i = 0; i < 8; ++i) b[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(json.size() >> (8 * i));
    b.insert(b.end(), json.begin(), json.end());
    b.resize(b.size() + data_bytes);
    return write(name, b);
  };
  EXPECT_TRUE(oa_test::throws([&] { ml::load_safetensors(with_header("json", "{\"w\": [", 0)); }, ErrorKind::InvalidArgument, {"not valid JSON"}));
  EXPECT_TRUE(oa_test::throws([&] { ml::load_safetensors(with_header("f64", R"({"h":{"dtype":"F64","shape":[2],"data_offsets":[0,16]}})", 16)); },
               ErrorKind::Unsupported, {"'h'", "F64"}));
  EXPECT_TRUE(oa_test::throws([&] { ml::load_safetensors(with_header("size", R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8)); },
               ErrorKind::InvalidArgument, {"tensor 'w'", "not 12 bytes"}));
  EXPECT_TRUE(oa_test::throws(
      [&] {
        ml::load_safetensors(with_header(
            "gap", R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})", 12));
      },
      ErrorKind::InvalidArgument, {"tensor 'b'", "gap"}));
  EXPECT_TRUE(oa_test::throws([&] { ml::load_safetensors(with_header("shape", R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4)); },
               ErrorKind::InvalidArgument, {"tensor 'w'", "shape"}));
  EXPECT_TRUE(oa_test::throws([&] { ml::load_safetensors(dir / "absent"); }, ErrorKind::InvalidArgument, {"cannot open", "absent"}));
}

TEST(NnCheckpoint, ParametersSaveAndLoadByName) {
  TempDir dir;
  const ml::Parameter w("net.0.weight", Matrix::from_vector({2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6}));
  const ml::Parameter b("net.0.bias", Matrix::from_vector({2}, std::vector<float>{-1, 1}));
  ml::save_parameters(dir / "model.safetensors", {w, b}, {{"epoch", "3"}});
  const ml::Parameter w2("net.0.weight", Matrix::zeros({2, 3}));
  const ml::Parameter b2("net.0.bias", Matrix::zeros({2}));
  const auto version = w2.version();
  EXPECT_EQ(ml::load_parameters(dir / "model.safetensors", {b2, w2}).at("epoch"), "3");
  EXPECT_EQ(bits_of(w2.value()), bits_of(w.value()));
  EXPECT_EQ(bits_of(b2.value()), bits_of(b.value()));
  EXPECT_GT(w2.version(), version);
  EXPECT_TRUE(oa_test::throws([&] { ml::load_parameters(dir / "model.safetensors", {w2}); }, ErrorKind::InvalidArgument,
                              {"extra tensor 'net.0.bias'"}));
}

TEST(NnCheckpoint, SavingReplacesAtomically) {
  TempDir dir;
  const auto file = dir / "ckpt.safetensors";
  ml::save_safetensors(file, {{"w", Matrix::full({3}, 1.0f)}});
  const auto before = oa::test::read_file(file);
  // A save that fails validation leaves the old file as it was.
  EXPECT_THROW(ml::save_safetensors(file, {{"w", Matrix::full({3}, 2.0f)}, {"v", Matrix()}}), oa::Error);
  EXPECT_EQ(oa::test::read_file(file), before);
  ml::save_safetensors(file, {{"w", Matrix::full({3}, 2.0f)}});
  EXPECT_EQ(ml::load_safetensors(file).at("w").to_vector(), std::vector<float>(3, 2.0f));
  // No temporary file is left behind.
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 1u);
  EXPECT_TRUE(oa_test::throws([&] { ml::save_safetensors(dir / "no-such-dir" / "x.safetensors", {{"w", Matrix::ones({1})}}); },
               ErrorKind::InvalidArgument, {"oa::ml::save_safetensors", "no-such-dir"}));
}

TEST(NnCheckpoint, AnInterruptedWriteLeavesTheOldFile) {
  TempDir dir;
  const auto file = dir / "ckpt.safetensors";
  ml::save_safetensors(file, {{"w", Matrix::full({3}, 1.0f)}});
  const auto before = oa::test::read_file(file);
  const Matrix big = Matrix::full({1 << 14}, 2.0f);  // 64 KiB
  ASSERT_EQ(big.to_vector().size(), 1u << 14);
  // A file-size limit makes the write fail part-way (EFBIG), as a full disk would.
  rlimit old{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
  rlimit limit = old;
  limit.rlim_cur = 4096;
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limit), 0);
  std::string message;
  try {
    ml::save_safetensors(file, {{"w", big}});
  } catch (const oa::Error& e) {
    message = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_NE(message.find("oa::ml::save_safetensors"), std::string::npos) << message;
  EXPECT_NE(message.find("ckpt.safetensors"), std::string::npos) << message;
  // The old file is untouched and no temporary file is left.
  EXPECT_EQ(oa::test::read_file(file), before);
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.path())) ++entries;
  EXPECT_EQ(entries, 1u);
}

}  // namespace
