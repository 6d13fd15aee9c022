// The oa command line on bad input (issue 7): a missing dataset or input
// file, a corrupt IDX header, an unreadable or mismatched checkpoint, a bad
// flag value, an unwritable output. Each run must exit nonzero with exactly
// one line on stderr that says what is wrong, fail before any training, and
// leave nothing behind in its working directory.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models.hpp"
#include "oa/oa.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
using oa::test::TempDir;
using oa::test::write_file;

struct OaRun {
  int status = -1;  // the raw wait status
  std::string out, err;
};

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) {
    if (c == '\'') {
      q.append("'\\''");
    } else {
      q.push_back(c);
    }
  }
  q.push_back('\'');
  return q;
}

// The oa binary CMake built, or else the `oa` beside this test binary (as in
// scripts/device-pack.sh's bundle).
std::string oa_binary() {
  if (fs::exists(OA_CLI_PATH)) return OA_CLI_PATH;
  return (fs::read_symlink("/proc/self/exe").parent_path() / "oa").string();
}

std::string read_text(const fs::path& p) {
  const auto bytes = oa::test::read_file(p);
  return {bytes.begin(), bytes.end()};
}

// A test's directory: `work` is where oa runs (its inputs go there too); the
// captured output lives beside it.
class CliDir {
 public:
  CliDir() { fs::create_directories(work()); }
  fs::path work() const { return dir_ / "work"; }
  fs::path operator/(const std::string& name) const { return work() / name; }

  // Runs oa with `args` in work().
  OaRun oa(const std::vector<std::string>& args) const {
    std::string command = "cd " + quote(work().string()) + " && " + quote(oa_binary());
    for (const auto& a : args) command.append(" ").append(quote(a));
    command += " </dev/null >" + quote((dir_ / "stdout").string()) + " 2>" + quote((dir_ / "stderr").string());
    OaRun r;
    r.status = std::system(command.c_str());
    r.out = read_text(dir_ / "stdout");
    r.err = read_text(dir_ / "stderr");
    return r;
  }

  // Every file and directory under work(), with file sizes.
  std::map<std::string, std::uintmax_t> listing() const {
    std::map<std::string, std::uintmax_t> out;
    for (const auto& e : fs::recursive_directory_iterator(work()))
      out[fs::relative(e.path(), work()).string()] = e.is_regular_file() ? e.file_size() : 0;
    return out;
  }

 private:
  TempDir dir_;
};

// oa exited with a nonzero code and printed one line "oa: ..." on stderr
// holding every fragment.
::testing::AssertionResult fails_cleanly(const OaRun& r, std::initializer_list<std::string> fragments) {
  if (!WIFEXITED(r.status)) return ::testing::AssertionFailure() << "oa did not exit normally (status " << r.status << "): " << r.err;
  if (WEXITSTATUS(r.status) == 0) return ::testing::AssertionFailure() << "oa exited 0; stdout: " << r.out;
  if (r.err.rfind("oa: ", 0) != 0 || r.err.empty() || r.err.back() != '\n' || r.err.find('\n') != r.err.size() - 1)
    return ::testing::AssertionFailure() << "stderr is not one line \"oa: ...\": " << r.err;
  for (const auto& f : fragments)
    if (r.err.find(f) == std::string::npos) return ::testing::AssertionFailure() << "stderr lacks \"" << f << "\": " << r.err;
  return ::testing::AssertionSuccess();
}

// A small text for `oa train text`: long enough for context 8.
void write_text(const fs::path& p) {
  std::string text;
  for (int i = 0; i < 40; ++i) text += "The quick brown fox jumps over the lazy dog.\n";
  write_file(p, std::vector<std::uint8_t>(text.begin(), text.end()));
}

// The flags of a tiny text model.
const std::vector<std::string> kTinyText = {"--context", "8", "--layers", "1", "--heads", "2", "--width", "16", "--steps", "2"};

std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// An IDX header (magic 00 00 08 <rank>, big-endian extents) and `data` bytes, gzip-compressed.
void write_idx_gz(const fs::path& p, std::vector<std::uint8_t> header_and_data) {
  gzFile f = gzopen(p.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, header_and_data.data(), static_cast<unsigned>(header_and_data.size())), static_cast<int>(header_and_data.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

std::vector<std::uint8_t> idx(std::vector<std::uint32_t> dims) {
  std::vector<std::uint8_t> b = {0, 0, 0x08, static_cast<std::uint8_t>(dims.size())};
  std::size_t count = 1;
  for (auto d : dims) {
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<std::uint8_t>(d >> s));
    count *= d;
  }
  b.resize(b.size() + count, 1);
  return b;
}

// A Fashion-MNIST-like directory of two 28x28 images per split, good or not.
void write_fashion_mnist(const fs::path& dir) {
  fs::create_directories(dir);
  for (const char* split : {"train", "t10k"}) {
    write_idx_gz(dir / (std::string(split) + "-images-idx3-ubyte.gz"), idx({2, 28, 28}));
    write_idx_gz(dir / (std::string(split) + "-labels-idx1-ubyte.gz"), idx({2}));
  }
}

TEST(Cli, MissingDatasetOrInputFile) {
  CliDir d;
  const auto before = d.listing();
  EXPECT_TRUE(fails_cleanly(d.oa({"train", "fashion-mnist", "--data", "absent-dir", "--out", "run"}), {"absent-dir"}));
  EXPECT_TRUE(fails_cleanly(d.oa({"eval", "--checkpoint", "run"}), {"run"}));
  EXPECT_TRUE(fails_cleanly(d.oa(std::vector<std::string>{"train", "text", "--input", "absent.txt", "--out", "run"} + kTinyText),
                            {"absent.txt", "cannot open"}));
  EXPECT_TRUE(fails_cleanly(d.oa({"sample", "--checkpoint", "run"}), {"no checkpoint", "run"}));
  EXPECT_EQ(d.listing(), before);
}

TEST(Cli, TextTooShortForTheContext) {
  CliDir d;
  write_file(d / "short.txt", std::vector<std::uint8_t>(100, 'a'));
  const auto before = d.listing();
  EXPECT_TRUE(fails_cleanly(d.oa({"train", "text", "--input", "short.txt", "--context", "64", "--out", "run"}), {"short.txt", "--context"}));
  EXPECT_EQ(d.listing(), before);
}

TEST(Cli, CorruptIdxHeader) {
  CliDir d;
  write_fashion_mnist(d / "data");
  // Bad magic: the element-type byte says 0x0d (f32).
  auto bad = idx({2, 28, 28});
  bad[2] = 0x0d;
  write_idx_gz(d / "data" / "train-images-idx3-ubyte.gz", bad);
  auto before = d.listing();
  EXPECT_TRUE(fails_cleanly(d.oa({"train", "fashion-mnist", "--data", "data", "--out", "run"}),
                            {"train-images-idx3-ubyte.gz", "element type"}));
  // A header cut short: rank 3 but one extent.
  write_idx_gz(d / "data" / "train-images-idx3-ubyte.gz", {0, 0, 0x08, 3, 0, 0, 0, 2});
  before = d.listing();
  EXPECT_TRUE(fails_cleanly(d.oa({"train", "fashion-mnist", "--data", "data", "--out", "run"}),
                            {"train-images-idx3-ubyte.gz", "truncated header"}));
  // Not gzip, not IDX: text in a .gz file.
  write_fashion_mnist(d / "data2");
  write_file(d / "data2" / "t10k-labels-idx1-ubyte.gz", {'h', 'e', 'l', 'l', 'o', '\n', 'x', 'y'});
  before = d.listing();
  EXPECT_TRUE(fails_cleanly(d.oa({"train", "fashion-mnist", "--data", "data2", "--out", "run"}), {"t10k-labels-idx1-ubyte.gz", "magic"}));
  EXPECT_EQ(d.listing(), before);
}

TEST(Cli, UnreadableCheckpoint) {
  CliDir d;
  fs::create_directories(d / "run");
  std::vector<std::uint8_t> garbage(300);
  for (std::size_t i = 0; i < garbage.size(); ++i) garbage[i] = static_cast<std::uint8_t>(i * 37 + 11);
  write_file(d / "run" / "model.safetensors", garbage);
  const auto before = d.listing();
  EXPECT_TRUE(fails_cleanly(d.oa({"eval", "--checkpoint", "run"}), {"model.safetensors"}));
  EXPECT_TRUE(fails_cleanly(d.oa({"sample", "--checkpoint", "run"}), {"model.safetensors"}));
  // A valid header with a truncated payload.
  oa::ml::save_safetensors(d / "run" / "model.safetensors", {{"w", oa::Matrix::ones({64})}},
                           {{"oa.text", R"({"context": 8, "layers": 1, "heads": 2, "width": 16})"}});
  fs::resize_file(d / "run" / "model.safetensors", fs::file_size(d / "run" / "model.safetensors") - 10);
  EXPECT_TRUE(fails_cleanly(d.oa({"sample", "--checkpoint", "run"}), {"model.safetensors", "truncated"}));
  EXPECT_EQ(d.listing().size(), before.size());
}

TEST(Cli, CheckpointThatDoesNotMatch) {
  CliDir d;
  const oa::Engine engine = oa::Engine::default_engine();
  oa::ml::Generator generator(0);
  fs::create_directories(d / "text");
  fs::create_directories(d / "images");
  // A text checkpoint whose metadata says width 32 but whose tensors are width 16.
  auto text_model = oa_cli::make_text_model({8, 1, 2, 16}, generator, engine);
  oa::ml::save_safetensors(d / "text" / "model.safetensors", text_model->named_tensors(),
                           {{"oa.text", nlohmann::json{{"context", 8}, {"layers", 1}, {"heads", 2}, {"width", 32}}.dump()}});
  // The quick convnet's weights under metadata of the full one.
  auto image_model = oa_cli::make_image_model({"convnet", true}, generator, engine);
  oa::ml::save_safetensors(d / "images" / "model.safetensors", image_model->named_tensors(),
                           {{"oa.train", nlohmann::json{{"epoch", 1}, {"model", "convnet"}, {"quick", false}}.dump()}});
  write_fashion_mnist(d / "data");
  const auto before = d.listing();
  EXPECT_TRUE(fails_cleanly(d.oa({"sample", "--checkpoint", "text"}), {"model.safetensors", "mismatches"}));
  EXPECT_TRUE(fails_cleanly(d.oa({"eval", "--checkpoint", "images", "--data", "data"}), {"model.safetensors"}));
  // Each command refuses the other's checkpoints.
  EXPECT_TRUE(fails_cleanly(d.oa({"sample", "--checkpoint", "images"}), {"not written by oa train text"}));
  EXPECT_TRUE(fails_cleanly(d.oa({"eval", "--checkpoint", "text", "--data", "data"}), {"not written by oa train"}));
  // --resume from a checkpoint whose tensors are not the model's, or of another model.
  EXPECT_TRUE(fails_cleanly(d.oa({"train", "fashion-mnist", "--resume", "--out", "images", "--data", "data"}), {"model.safetensors"}));
  EXPECT_TRUE(fails_cleanly(d.oa({"train", "fashion-mnist", "--resume", "--out", "images", "--quick", "--data", "data"}),
                            {"--resume", "images"}));
  EXPECT_EQ(d.listing(), before);
}

TEST(Cli, BadFlagValues) {
  CliDir d;
  write_text(d / "fox.txt");
  const auto before = d.listing();
  const std::vector<std::vector<std::string>> cases = {
      {"train", "fashion-mnist", "--epochs", "-1"},
      {"train", "fashion-mnist", "--epochs", "0"},
      {"train", "fashion-mnist", "--lr", "abc"},
      {"train", "fashion-mnist", "--lr", "-0.1"},
      {"train", "fashion-mnist", "--batch-size", "0"},
      {"train", "fashion-mnist", "--model", "resnet"},
      {"train", "fashion-mnist", "--seed", "x"},
      {"train", "fashion-mnist", "--no-such-flag"},
      {"train", "text", "--input", "fox.txt", "--lr", "abc"},
      {"train", "text", "--input", "fox.txt", "--batch-size", "0"},
      {"train", "text", "--input", "fox.txt", "--context", "0"},
      {"train", "text", "--input", "fox.txt", "--steps", "-5"},
      {"sample", "--checkpoint"},
      {"sample", "--checkpoint", "run", "--temperature", "0"},
      {"frobnicate"},
      {},
  };
  for (const auto& args : cases) {
    std::string joined;
    for (const auto& a : args) joined += " " + a;
    SCOPED_TRACE("oa" + joined);
    const OaRun r = d.oa(args);
    EXPECT_TRUE(fails_cleanly(r, {}));
    EXPECT_EQ(WEXITSTATUS(r.status), 2);  // a usage error
    EXPECT_EQ(r.out, "");
  }
  // The flag's name is in the message.
  EXPECT_TRUE(fails_cleanly(d.oa({"train", "fashion-mnist", "--lr", "abc"}), {"--lr", "must be a number"}));
  EXPECT_TRUE(fails_cleanly(d.oa({"train", "text", "--input", "fox.txt", "--lr", "abc"}), {"--lr", "must be a number"}));
  EXPECT_TRUE(fails_cleanly(d.oa({"train", "fashion-mnist", "--model", "resnet"}), {"--model", "resnet"}));
  // Values that only the model can judge fail before training too.
  EXPECT_TRUE(fails_cleanly(d.oa({"train", "text", "--input", "fox.txt", "--out", "run", "--context", "8", "--width", "30", "--heads", "4"}),
                            {"--width 30", "--heads 4"}));
  EXPECT_EQ(d.listing(), before);
  // --help is not an error.
  const OaRun help = d.oa({"train", "text", "--help"});
  ASSERT_TRUE(WIFEXITED(help.status));
  EXPECT_EQ(WEXITSTATUS(help.status), 0);
  EXPECT_NE(help.out.find("--context"), std::string::npos);
  EXPECT_NE(help.out.find("3000"), std::string::npos);  // defaults are shown
}

TEST(Cli, UnwritableOutput) {
  CliDir d;
  write_text(d / "fox.txt");
  write_file(d / "a-file", {'x'});
  // A run directory under a regular file.
  auto before = d.listing();
  EXPECT_TRUE(fails_cleanly(d.oa(std::vector<std::string>{"train", "text", "--input", "fox.txt", "--out", "a-file/run"} + kTinyText),
                            {"a-file/run"}));
  EXPECT_EQ(d.listing(), before);
  // A run directory whose metrics file cannot be created (a directory holds its name).
  fs::create_directories(d / "run" / "metrics.jsonl");
  before = d.listing();
  EXPECT_TRUE(fails_cleanly(d.oa(std::vector<std::string>{"train", "text", "--input", "fox.txt", "--out", "run"} + kTinyText),
                            {"metrics.jsonl"}));
  EXPECT_EQ(d.listing(), before);
  // The same for oa train fashion-mnist.
  write_fashion_mnist(d / "data");
  before = d.listing();
  EXPECT_TRUE(fails_cleanly(d.oa({"train", "fashion-mnist", "--quick", "--data", "data", "--out", "a-file/run"}), {"a-file/run"}));
  EXPECT_EQ(d.listing(), before);
}

}  // namespace
