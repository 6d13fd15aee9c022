#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <new>
#include <set>

#include "oa/oa.hpp"
#include "support/expect.hpp"
#include "support/temp_dir.hpp"

namespace {

using oa::ErrorKind;
using oa::test::TempDir;
using oa::test::write_file;
namespace data = oa::ml::data;

// An IDX file of unsigned bytes, written from the format description.
std::vector<std::uint8_t> idx_bytes(const std::vector<std::uint32_t>& dims, const std::vector<std::uint8_t>& values) {
  std::vector<std::uint8_t> out = {0, 0, 0x08, static_cast<std::uint8_t>(dims.size())};
  for (auto d : dims)
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<std::uint8_t>(d >> s));
  out.insert(out.end(), values.begin(), values.end());
  return out;
}

void write_gzip(const std::filesystem::path& p, const std::vector<std::uint8_t>& bytes) {
  gzFile f = gzopen(p.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())), static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

std::vector<std::uint8_t> pattern(std::size_t n) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>((i * 37 + 11) % 256);
  return v;
}

// read_idx(p) fails with InvalidArgument naming the op, the file and `fault`.
::testing::AssertionResult idx_error(const std::filesystem::path& p, const char* fault) {
  const std::string file = p.filename().string();
  return oa_test::throws([&] { data::read_idx(p); }, ErrorKind::InvalidArgument, {"oa::ml::data::read_idx", file.c_str(), fault});
}

TEST(DataGenerator, MatchesSplitMix64AndIsUnbiasedInRange) {
  // The published SplitMix64 sequence for seed 1234567.
  oa::ml::Generator g(1234567);
  EXPECT_EQ(g.next_u64(), 6457827717110365317ull);
  EXPECT_EQ(g.next_u64(), 3203168211198807973ull);
  EXPECT_EQ(g.next_u64(), 9817491932198370423ull);
  EXPECT_EQ(g.counter(), 3u);
  oa::ml::Generator h(7);
  std::vector<int> hits(5);
  for (int i = 0; i < 5000; ++i) ++hits[h.next_below(5)];
  for (int c : hits) EXPECT_NEAR(c, 1000, 150);
  EXPECT_EQ(oa::ml::Generator(3).fork(9).next_u64(), oa::ml::Generator(3).fork(9).next_u64());
  EXPECT_NE(oa::ml::Generator(3).fork(9).next_u64(), oa::ml::Generator(3).fork(10).next_u64());
  EXPECT_THROW(h.next_below(0), oa::Error);
}

TEST(DataIdx, ReadsRawAndGzippedFiles) {
  TempDir dir;
  const auto values = pattern(5 * 3 * 7);
  const auto bytes = idx_bytes({5, 3, 7}, values);
  write_file(dir / "raw-idx3-ubyte", bytes);
  write_gzip(dir / "packed-idx3-ubyte.gz", bytes);
  write_gzip(dir / "packed-without-suffix", bytes);  // recognised by its magic
  for (const char* name : {"raw-idx3-ubyte", "packed-idx3-ubyte.gz", "packed-without-suffix"}) {
    SCOPED_TRACE(name);
    const auto a = data::read_idx(dir / name);
    EXPECT_EQ(a.dims, (std::vector<std::int64_t>{5, 3, 7}));
    EXPECT_EQ(a.data, values);
  }
  // Two gzip members concatenated read as one stream (as gunzip does).
  const auto first = idx_bytes({6}, {1, 2, 3});
  write_gzip(dir / "a.gz", first);
  write_gzip(dir / "b.gz", {4, 5, 6});
  auto joined = oa::test::read_file(dir / "a.gz");
  const auto second = oa::test::read_file(dir / "b.gz");
  joined.insert(joined.end(), second.begin(), second.end());
  write_file(dir / "joined.gz", joined);
  EXPECT_EQ(data::read_idx(dir / "joined.gz").data, (std::vector<std::uint8_t>{1, 2, 3, 4, 5, 6}));
}

TEST(DataIdx, CorruptAndTruncatedFilesNameTheFileAndTheFault) {
  TempDir dir;
  const auto good = idx_bytes({4, 2, 3}, pattern(24));
  auto bad_magic = good;
  bad_magic[0] = 0x12;
  write_file(dir / "bad-magic", bad_magic);
  EXPECT_TRUE(idx_error(dir / "bad-magic", "bad magic"));
  auto float_type = good;
  float_type[2] = 0x0D;
  write_file(dir / "float-type", float_type);
  EXPECT_TRUE(idx_error(dir / "float-type", "unsupported element type 0x0d"));
  write_file(dir / "short-data", {good.begin(), good.end() - 1});
  EXPECT_TRUE(idx_error(dir / "short-data", "truncated data"));
  write_file(dir / "short-header", {good.begin(), good.begin() + 9});
  EXPECT_TRUE(idx_error(dir / "short-header", "truncated header"));
  auto longer = good;
  longer.push_back(0);
  write_file(dir / "trailing", longer);
  EXPECT_TRUE(idx_error(dir / "trailing", "1 trailing bytes"));
  EXPECT_TRUE(idx_error(dir / "missing-file", "cannot open"));

  const auto big = idx_bytes({64, 64}, pattern(64 * 64));
  write_gzip(dir / "whole.gz", big);
  const auto packed = oa::test::read_file(dir / "whole.gz");
  write_file(dir / "cut.gz", {packed.begin(), packed.begin() + static_cast<std::ptrdiff_t>(packed.size() / 2)});
  EXPECT_TRUE(idx_error(dir / "cut.gz", "gzip stream truncated"));
  auto flipped = packed;
  flipped[packed.size() - 6] ^= 0xFF;  // inside the CRC-32 trailer
  write_file(dir / "crc.gz", flipped);
  EXPECT_TRUE(idx_error(dir / "crc.gz", "gzip error"));
  // A gzip stream holding a truncated IDX file.
  write_gzip(dir / "short.gz", {big.begin(), big.end() - 10});
  EXPECT_TRUE(idx_error(dir / "short.gz", "truncated data"));
}

// A gzip file whose trailer claims 2^30 - 1 bytes is rejected (its length
// check fails) without reserving what the trailer claims: a child process
// reads it with its address space capped 512 MiB above what it uses.
TEST(DataIdx, ForgedGzipLengthReservesNoMoreThanTheFileCanHold) {
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
  GTEST_SKIP() << "AddressSanitizer needs more address space than the cap; fuzz_idx covers this there";
#endif
#endif
  TempDir dir;
  const auto path = dir.path() / "forged.gz";
  write_gzip(path, idx_bytes({4}, {1, 2, 3, 4}));
  std::vector<std::uint8_t> bytes = oa::test::read_file(path);
  ASSERT_GE(bytes.size(), 18u);
  const std::uint32_t isize = (1u << 30) - 1;  // ISIZE: the last 4 bytes, little-endian
  for (int i = 0; i < 4; ++i) bytes[bytes.size() - 4 + i] = static_cast<std::uint8_t>(isize >> (8 * i));
  write_file(path, bytes);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::size_t pages = 0;
    std::ifstream("/proc/self/statm") >> pages;
    const rlim_t cap = static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE)) + (rlim_t{512} << 20);
    const rlimit limit{cap, cap};
    if (setrlimit(RLIMIT_AS, &limit) != 0) _exit(5);
    try {
      data::read_idx(path);
      _exit(3);
    } catch (const oa::Error& e) {
      _exit(std::string_view(e.what()).find("gzip error") != std::string_view::npos ? 0 : 4);
    } catch (const std::bad_alloc&) {
      _exit(2);
    }
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "2: out of memory, 3: accepted, 4: another error, 5: setrlimit failed";
}

TEST(DataIdx, LoadsImagesWithLabelsAndChecksDimensions) {
  TempDir dir;
  write_gzip(dir / "images.gz", idx_bytes({3, 2, 2}, pattern(12)));
  write_gzip(dir / "labels.gz", idx_bytes({3}, {2, 0, 7}));
  write_file(dir / "labels4", idx_bytes({4}, {1, 2, 3, 4}));
  write_file(dir / "images2d", idx_bytes({3, 4}, pattern(12)));
  const auto d = data::load_idx_images(dir / "images.gz", dir / "labels.gz");
  EXPECT_EQ(d.count, 3);
  EXPECT_EQ(d.height, 2);
  EXPECT_EQ(d.width, 2);
  EXPECT_EQ(d.pixels, pattern(12));
  EXPECT_EQ(d.labels, (std::vector<std::int32_t>{2, 0, 7}));
  EXPECT_EQ(d.classes, 8);
  for (auto [images, labels, file] : {std::tuple{"images.gz", "labels4", "labels4"}, std::tuple{"images2d", "labels.gz", "images2d"}})
    EXPECT_TRUE(oa_test::throws([&, images = images, labels = labels] { data::load_idx_images(dir / images, dir / labels); }, ErrorKind::InvalidArgument,
                                {"dimension mismatch", file}));
}

data::ImageDataset tiny_images(std::int64_t count) {
  data::ImageDataset d;
  d.count = count;
  d.height = 2;
  d.width = 3;
  d.pixels = pattern(static_cast<std::size_t>(count * 6));
  for (std::int64_t i = 0; i < count; ++i) d.labels.push_back(static_cast<std::int32_t>(i % 4));
  d.classes = 4;
  return d;
}

TEST(DataImageLoader, UploadsNormalisedBatchesInOrder) {
  const auto d = tiny_images(7);
  data::ImageLoader loader(d, {.batch_size = 3, .shuffle = false}, {0.25f, 0.5f});
  ASSERT_EQ(loader.batches(), 3);
  for (std::int64_t b = 0; b < 3; ++b) {
    const auto batch = loader.batch(b);
    const std::int64_t n = b < 2 ? 3 : 1;
    ASSERT_EQ(batch.images.shape(), (oa::Shape{n, 1, 2, 3}));
    ASSERT_EQ(batch.labels.shape(), (oa::Shape{n}));
    EXPECT_EQ(batch.images.dtype(), oa::DType::F32);
    EXPECT_EQ(batch.labels.dtype(), oa::DType::I32);
    const auto x = batch.images.to_vector();
    const auto y = batch.labels.to_i32();
    for (std::int64_t i = 0; i < n; ++i) {
      const std::int64_t s = b * 3 + i;
      EXPECT_EQ(y[static_cast<std::size_t>(i)], s % 4);
      for (std::int64_t k = 0; k < 6; ++k)
        EXPECT_NEAR(x[static_cast<std::size_t>(i * 6 + k)], (d.pixels[static_cast<std::size_t>(s * 6 + k)] / 255.0 - 0.25) / 0.5, 1e-6);
    }
  }
  data::ImageLoader dropping(d, {.batch_size = 3, .shuffle = false, .drop_last = true});
  EXPECT_EQ(dropping.batches(), 2);
  EXPECT_TRUE(oa_test::throws([&] { dropping.batch(2); }, ErrorKind::InvalidArgument, {"ImageLoader::batch", "index 2"}));
  EXPECT_TRUE(oa_test::throws([&] { data::ImageLoader(d, {.batch_size = 0}); }, ErrorKind::InvalidArgument, {"batch_size 0"}));
  EXPECT_TRUE(oa_test::throws([&] { data::ImageLoader(d, {}, {0.0f, 0.0f}); }, ErrorKind::InvalidArgument, {"std"}));
  EXPECT_TRUE(oa_test::throws([&] { data::ImageLoader(data::ImageDataset{}, {}); }, ErrorKind::InvalidArgument, {"empty"}));
}

TEST(DataImageLoader, ShufflesDeterministicallyPerEpoch) {
  const auto d = tiny_images(9);
  data::ImageLoader a(d, {.batch_size = 4, .seed = 42});
  data::ImageLoader b(d, {.batch_size = 4, .seed = 42});
  data::ImageLoader c(d, {.batch_size = 4, .seed = 43});
  const auto order0 = a.order();
  EXPECT_EQ(std::set<std::int64_t>(order0.begin(), order0.end()).size(), 9u);
  EXPECT_EQ(a.order(), b.order());
  EXPECT_NE(a.order(), c.order());
  a.set_epoch(1);
  EXPECT_NE(a.order(), order0);
  b.set_epoch(1);
  EXPECT_EQ(a.order(), b.order());
  a.set_epoch(0);
  EXPECT_EQ(a.order(), order0);
  EXPECT_EQ(data::epoch_order(9, true, 42, 0), order0);
  EXPECT_EQ(data::epoch_order(9, false, 42, 3), (std::vector<std::int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
  EXPECT_TRUE(data::epoch_order(0, true, 42, 0).empty());
  EXPECT_TRUE(oa_test::throws([] { data::epoch_order(-1, true, 0, 0); }, ErrorKind::InvalidArgument, {"epoch_order", "-1"}));
  // The batch follows the order.
  const auto labels = a.batch(1).labels.to_i32();
  for (std::size_t i = 0; i < labels.size(); ++i) EXPECT_EQ(labels[i], order0[4 + i] % 4);
  // It is image_batch of the order's slice.
  const auto direct = data::image_batch(d, std::span<const std::int64_t>(order0).subspan(4, 4));
  EXPECT_EQ(direct.images.to_vector(), a.batch(1).images.to_vector());
  EXPECT_EQ(direct.labels.to_i32(), labels);
  const std::vector<std::int64_t> outside = {0, 9};
  EXPECT_TRUE(oa_test::throws([&] { data::image_batch(d, outside); }, ErrorKind::InvalidArgument, {"image_batch", "index 9"}));
  EXPECT_TRUE(oa_test::throws([&] { data::image_batch(d, {}); }, ErrorKind::InvalidArgument, {"image_batch", "no indices"}));
}

// DistributedSampler's sharding: disjoint parts of each epoch's order, padded
// by wrapping around; batch k of the shards together is the one-loader batch k
// of num_replicas x batch_size.
TEST(DataImageLoader, ShardsEachEpochOverReplicas) {
  const auto d = tiny_images(11);
  for (std::uint64_t epoch : {0u, 3u}) {
    data::ImageLoader whole(d, {.batch_size = 6, .seed = 5});
    whole.set_epoch(epoch);
    std::vector<std::int64_t> joined(12, -1);
    for (std::int64_t r = 0; r < 3; ++r) {
      data::ImageLoader shard(d, {.batch_size = 2, .seed = 5, .num_replicas = 3, .rank = r});
      shard.set_epoch(epoch);
      ASSERT_EQ(shard.order().size(), 4u);
      EXPECT_EQ(shard.batches(), 2);
      for (std::size_t j = 0; j < 4; ++j) joined[static_cast<std::size_t>(r) + 3 * j] = shard.order()[j];
      EXPECT_EQ(shard.batch(1).labels.numel(), 2);
    }
    for (std::size_t i = 0; i < 11; ++i) EXPECT_EQ(joined[i], whole.order()[i]) << "position " << i;
    EXPECT_EQ(joined[11], whole.order()[0]);  // the padding wraps around
  }
  data::ImageLoader unshuffled(d, {.batch_size = 8, .shuffle = false, .num_replicas = 2, .rank = 1});
  EXPECT_EQ(unshuffled.order(), (std::vector<std::int64_t>{1, 3, 5, 7, 9, 0}));
  EXPECT_TRUE(oa_test::throws([&] { data::ImageLoader(d, {.num_replicas = 2, .rank = 2}); }, ErrorKind::InvalidArgument,
                              {"rank 2", "num_replicas = 2"}));
  EXPECT_TRUE(oa_test::throws([&] { data::ImageLoader(d, {.num_replicas = 0}); }, ErrorKind::InvalidArgument, {"num_replicas = 0"}));
}

// A run resumed at position q of an epoch with another number of replicas:
// the shards of set_epoch(e, q) are the rest of the epoch's whole order,
// q .. count - 1, sharded as at the epoch's start (padded by wrapping around
// within the rest).
TEST(DataImageLoader, ResumesAnEpochAtAPositionWithOtherReplicas) {
  const auto d = tiny_images(11);
  data::ImageLoader whole(d, {.batch_size = 4, .seed = 7});
  whole.set_epoch(2);
  for (std::int64_t replicas : {1, 2, 3}) {
    std::vector<std::int64_t> joined;
    std::vector<data::ImageLoader> shards;
    for (std::int64_t r = 0; r < replicas; ++r) {
      shards.emplace_back(d, data::LoaderOptions{.batch_size = 2, .seed = 7, .num_replicas = replicas, .rank = r});
      shards.back().set_epoch(2, 5);
      ASSERT_EQ(shards.back().order().size(), static_cast<std::size_t>((6 + replicas - 1) / replicas)) << replicas;
    }
    for (std::size_t j = 0; j < shards[0].order().size(); ++j)
      for (const auto& s : shards) joined.push_back(s.order()[j]);
    for (std::size_t i = 0; i < joined.size(); ++i) EXPECT_EQ(joined[i], whole.order()[5 + i % 6]) << replicas << " position " << i;
  }
  data::ImageLoader one(d, {.batch_size = 4, .seed = 7});
  one.set_epoch(2, 10);
  EXPECT_EQ(one.order(), (std::vector<std::int64_t>{whole.order()[10]}));
  EXPECT_EQ(one.batches(), 1);
  EXPECT_TRUE(oa_test::throws([&] { one.set_epoch(0, -1); }, ErrorKind::InvalidArgument, {"ImageLoader::set_epoch", "start -1", "[0, 11)"}));
  EXPECT_TRUE(oa_test::throws([&] { one.set_epoch(0, 11); }, ErrorKind::InvalidArgument, {"start 11 outside [0, 11)"}));
}

TEST(DataImageLoader, ComputesNormalisation) {
  data::ImageDataset d;
  d.count = 1;
  d.height = 1;
  d.width = 4;
  d.pixels = {0, 255, 255, 0};
  d.labels = {0};
  const auto n = data::compute_normalization(d);
  EXPECT_NEAR(n.mean, 0.5, 1e-7);
  EXPECT_NEAR(n.std, 0.5, 1e-7);
  d.pixels = {3, 3, 3, 3};
  EXPECT_THROW(data::compute_normalization(d), oa::Error);
}

TEST(DataText, ReadsSplitsAndDrawsWindows) {
  TempDir dir;
  std::vector<std::uint8_t> first(120), second(80);
  for (std::size_t i = 0; i < first.size(); ++i) first[i] = static_cast<std::uint8_t>(i);
  for (std::size_t i = 0; i < second.size(); ++i) second[i] = static_cast<std::uint8_t>(120 + i);
  write_file(dir / "one", first);
  write_file(dir / "two", second);
  auto bytes = data::read_bytes({dir / "one", dir / "two"});
  ASSERT_EQ(bytes.size(), 200u);
  for (std::size_t i = 0; i < bytes.size(); ++i) ASSERT_EQ(bytes[i], i);
  const auto split = data::split_text(bytes, 0.05);
  ASSERT_EQ(split.train.size(), 190u);
  ASSERT_EQ(split.validation.size(), 10u);
  EXPECT_EQ(split.validation.front(), 190);
  EXPECT_THROW(data::split_text(bytes, 1.0), oa::Error);

  data::TextLoader loader(split.train, 5, 11, 99);
  const auto batch = loader.batch(3);
  ASSERT_EQ(batch.tokens.shape(), (oa::Shape{5, 11}));
  ASSERT_EQ(batch.targets.shape(), (oa::Shape{5, 11}));
  ASSERT_EQ(batch.tokens.dtype(), oa::DType::I32);
  const auto x = batch.tokens.to_i32(), y = batch.targets.to_i32();
  std::set<int> starts;
  for (int b = 0; b < 5; ++b) {
    const int start = x[static_cast<std::size_t>(b * 11)];
    starts.insert(start);
    EXPECT_LE(start + 11, 189);  // the last target is a train byte
    for (int t = 0; t < 11; ++t) {
      EXPECT_EQ(x[static_cast<std::size_t>(b * 11 + t)], start + t);
      EXPECT_EQ(y[static_cast<std::size_t>(b * 11 + t)], start + t + 1);
    }
  }
  EXPECT_GT(starts.size(), 1u);
  EXPECT_EQ(loader.batch(3).tokens.to_i32(), x);
  EXPECT_NE(loader.batch(4).tokens.to_i32(), x);
  // Every start position is reachable, including the last (n - T - 1).
  data::TextLoader tight(std::vector<std::uint8_t>{1, 2, 3, 4}, 64, 2, 5);
  const auto t = tight.batch(0).tokens.to_i32();
  std::set<int> firsts;
  for (int b = 0; b < 64; ++b) firsts.insert(t[static_cast<std::size_t>(b * 2)]);
  EXPECT_EQ(firsts, (std::set<int>{1, 2}));
}

// bench/twins/common.py re-creates oa's data order for the PyTorch twins; the
// values below come from it (text_window_starts, epoch_order, split_text,
// warmup_cosine_lr), so that the twins and oa stay in step.
TEST(DataTwins, PythonTwinsSeeTheSameDataOrder) {
  std::vector<std::uint8_t> bytes(200);
  for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::uint8_t>(i);
  const auto split = data::split_text(bytes, 0.05);
  ASSERT_EQ(split.validation.size(), 10u);
  EXPECT_EQ(data::split_text(std::vector<std::uint8_t>(213), 0.05).validation.size(), 10u);
  // text_window_starts(190, 11, 5, 99, 3): a window's first token is its start here.
  const auto x = data::TextLoader(split.train, 5, 11, 99).batch(3).tokens.to_i32();
  const std::vector<int> starts = {173, 30, 156, 101, 153};
  for (std::size_t b = 0; b < starts.size(); ++b) EXPECT_EQ(x[b * 11], starts[b]) << b;
  // text_window_starts(1000, 7, 6, 12345, step) for steps 0 and 41, modulo 256.
  std::vector<std::uint8_t> long_text(1000);
  for (std::size_t i = 0; i < long_text.size(); ++i) long_text[i] = static_cast<std::uint8_t>(i % 256);
  const data::TextLoader loader(long_text, 6, 7, 12345);
  const std::vector<std::vector<int>> want = {{124, 289, 909, 256, 874, 855}, {969, 933, 223, 740, 167, 954}};
  for (int k = 0; k < 2; ++k) {
    const auto t = loader.batch(k == 0 ? 0 : 41).tokens.to_i32();
    for (std::size_t b = 0; b < 6; ++b) EXPECT_EQ(t[b * 7], want[static_cast<std::size_t>(k)][b] % 256) << k << " " << b;
  }
  // epoch_order(9, 42, 1).
  data::ImageLoader images(tiny_images(9), {.batch_size = 4, .seed = 42});
  images.set_epoch(1);
  EXPECT_EQ(images.order(), (std::vector<std::int64_t>{2, 8, 6, 7, 0, 5, 3, 4, 1}));
  // epoch_order(60000, seed, epoch) at Fashion-MNIST's size: the first and last four.
  data::ImageDataset fashion;
  fashion.count = 60000;
  fashion.height = fashion.width = 1;
  fashion.pixels.assign(60000, 0);
  fashion.labels.assign(60000, 0);
  fashion.classes = 1;
  auto ends = [](const data::ImageLoader& l) {
    const auto& o = l.order();
    return std::vector<std::int64_t>{o[0], o[1], o[2], o[3], o[59996], o[59997], o[59998], o[59999]};
  };
  data::ImageLoader seed0(fashion, {.batch_size = 128, .seed = 0});
  EXPECT_EQ(ends(seed0), (std::vector<std::int64_t>{39055, 47653, 45002, 16059, 22368, 16769, 50219, 12753}));
  seed0.set_epoch(1);
  EXPECT_EQ(ends(seed0), (std::vector<std::int64_t>{1564, 9078, 1967, 21042, 1183, 43568, 49018, 22525}));
  data::ImageLoader seed5(fashion, {.batch_size = 128, .seed = 5});
  seed5.set_epoch(3);
  EXPECT_EQ(ends(seed5), (std::vector<std::int64_t>{41828, 5532, 33930, 42476, 13910, 11649, 31029, 44701}));
  // warmup_cosine_lr(step, 1e-3, 150, 3000, 1e-4): oa train text's default schedule.
  const std::vector<std::pair<std::int64_t, double>> lr = {{0, 0.0},
                                                           {1, 6.666666666666667e-06},
                                                           {149, 0.0009933333333333333},
                                                           {150, 0.001},
                                                           {151, 0.000999999726603784},
                                                           {1575, 0.00055},
                                                           {2999, 0.00010000027339621613},
                                                           {3000, 0.0001}};
  for (const auto& [step, want_lr] : lr)
    EXPECT_NEAR(oa::ml::optim::warmup_cosine_lr(step, 1e-3, 150, 3000, 1e-4), want_lr, 1e-18) << step;
}

TEST(DataText, ErrorsNameTheFileOrTheProblem) {
  TempDir dir;
  EXPECT_TRUE(oa_test::throws([&] { data::read_bytes({dir / "absent.txt"}); }, ErrorKind::InvalidArgument,
                              {"oa::ml::data::read_bytes", "cannot open", "absent.txt"}));
  EXPECT_TRUE(oa_test::throws([&] { data::read_bytes({dir.path()}); }, ErrorKind::InvalidArgument, {"is a directory"}));
  EXPECT_TRUE(oa_test::throws([&] { data::read_bytes({}); }, ErrorKind::InvalidArgument, {"no files"}));
  EXPECT_THROW(data::TextLoader(std::vector<std::uint8_t>{1, 2}, 1, 2, 0), oa::Error);
  EXPECT_NO_THROW(data::TextLoader(std::vector<std::uint8_t>{1, 2, 3}, 1, 2, 0));
  EXPECT_THROW(data::TextLoader(std::vector<std::uint8_t>{1, 2, 3}, 0, 2, 0), oa::Error);
  EXPECT_TRUE(oa_test::throws([] { data::TextLoader(std::vector<std::uint8_t>{1, 2, 3}, 1, 2, 0, {}, 2, 2); },
                              ErrorKind::InvalidArgument, {"TextLoader", "rank 2", "num_replicas = 2"}));
}

// Sharded, the replicas' batches of a step together are the one-loader batch
// of num_replicas x B windows, rank by rank.
TEST(DataText, ShardsEachStepsWindowsOverReplicas) {
  std::vector<std::uint8_t> text(300);
  for (std::size_t i = 0; i < text.size(); ++i) text[i] = static_cast<std::uint8_t>(i * 7 % 256);
  const data::TextLoader whole(text, 6, 5, 3);
  for (std::uint64_t step : {0u, 9u}) {
    const auto want = whole.batch(step).targets.to_i32();
    std::vector<std::int32_t> joined;
    for (std::int64_t r = 0; r < 3; ++r) {
      const auto part = data::TextLoader(text, 2, 5, 3, {}, 3, r).batch(step).targets.to_i32();
      joined.insert(joined.end(), part.begin(), part.end());
    }
    EXPECT_EQ(joined, want) << "step " << step;
  }
}

TEST(DataFashionMnist, ReadsTheInstalledTestSplit) {
  if (!std::filesystem::exists(data::kFashionMnistDir / "t10k-labels-idx1-ubyte.gz"))
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  const auto d = data::load_fashion_mnist("t10k");
  EXPECT_EQ(d.count, 10000);
  EXPECT_EQ(d.height, 28);
  EXPECT_EQ(d.width, 28);
  EXPECT_EQ(d.classes, 10);
  const auto n = data::compute_normalization(d);
  EXPECT_NEAR(n.mean, data::kFashionMnistNormalization.mean, 0.01);
  EXPECT_NEAR(n.std, data::kFashionMnistNormalization.std, 0.01);
  EXPECT_THROW(data::load_fashion_mnist("validation"), oa::Error);
}

TEST(DataText, ListsFortuneFiles) {
  if (!std::filesystem::is_directory("/usr/share/games/fortunes")) GTEST_SKIP() << "fortunes are not installed";
  const auto files = data::fortune_files();
  ASSERT_FALSE(files.empty());
  for (const auto& f : files) EXPECT_FALSE(f.has_extension()) << f;
  EXPECT_TRUE(std::is_sorted(files.begin(), files.end()));
}

}  // namespace
