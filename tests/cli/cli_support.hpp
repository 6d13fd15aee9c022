#pragma once
// Running the oa command line from tests (the Cli group): a working directory
// per test, one-line error checks, and small text inputs and checkpoints.
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <zlib.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "models.hpp"
#include "oa/oa.hpp"
#include "support/temp_dir.hpp"

extern "C" char** environ;

namespace oa::test::cli {

namespace fs = std::filesystem;

struct OaRun {
  int status = -1;  // the raw wait status
  std::string out, err;
};

inline std::string quote(const std::string& s) {
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
inline std::string oa_binary() {
  if (fs::exists(OA_CLI_PATH)) return OA_CLI_PATH;
  return (fs::read_symlink("/proc/self/exe").parent_path() / "oa").string();
}

inline std::string read_text(const fs::path& p) {
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
  OaRun oa(const std::vector<std::string>& args) const { return finished(std::system(command(args).c_str())); }
  // Runs oa with `args` in work() as `ranks` MPI processes (OpenMPI's mpirun).
  OaRun mpirun(int ranks, const std::vector<std::string>& args) const {
    const std::string launcher = "mpirun -np " + std::to_string(ranks) + " --oversubscribe --allow-run-as-root ";
    return finished(std::system(command(args, launcher).c_str()));
  }

  // Starts oa with `args` in work() and returns its process id; wait() ends it.
  pid_t start(const std::vector<std::string>& args) const {
    const std::string shell = command(args, "exec ");
    const char* argv[] = {"sh", "-c", shell.c_str(), nullptr};
    pid_t pid = -1;
    if (posix_spawn(&pid, "/bin/sh", nullptr, nullptr, const_cast<char* const*>(argv), environ) != 0) return -1;
    return pid;
  }
  OaRun wait(pid_t pid) const {
    int status = -1;
    if (waitpid(pid, &status, 0) != pid) status = -1;
    return finished(status);
  }

  // Every file and directory under work(), with file sizes.
  std::map<std::string, std::uintmax_t> listing() const {
    std::map<std::string, std::uintmax_t> out;
    for (const auto& e : fs::recursive_directory_iterator(work()))
      out[fs::relative(e.path(), work()).string()] = e.is_regular_file() ? e.file_size() : 0;
    return out;
  }

 private:
  // The shell command that runs oa (after `prefix`) in work().
  std::string command(const std::vector<std::string>& args, const std::string& prefix = "") const {
    std::string c = "cd " + quote(work().string()) + " && " + prefix + quote(oa_binary());
    for (const auto& a : args) c.append(" ").append(quote(a));
    return c + " </dev/null >" + quote((dir_ / "stdout").string()) + " 2>" + quote((dir_ / "stderr").string());
  }
  OaRun finished(int status) const { return {status, read_text(dir_ / "stdout"), read_text(dir_ / "stderr")}; }

  TempDir dir_;
};

// oa exited with a nonzero code and printed one line "oa: ..." on stderr
// holding every fragment.
inline ::testing::AssertionResult fails_cleanly(const OaRun& r, std::initializer_list<std::string> fragments) {
  if (!WIFEXITED(r.status)) return ::testing::AssertionFailure() << "oa did not exit normally (status " << r.status << "): " << r.err;
  if (WEXITSTATUS(r.status) == 0) return ::testing::AssertionFailure() << "oa exited 0; stdout: " << r.out;
  if (r.err.rfind("oa: ", 0) != 0 || r.err.empty() || r.err.back() != '\n' || r.err.find('\n') != r.err.size() - 1)
    return ::testing::AssertionFailure() << "stderr is not one line \"oa: ...\": " << r.err;
  for (const auto& f : fragments)
    if (r.err.find(f) == std::string::npos) return ::testing::AssertionFailure() << "stderr lacks \"" << f << "\": " << r.err;
  return ::testing::AssertionSuccess();
}

// oa exited with 2 (a usage error), printed nothing on stdout and one line on
// stderr holding every fragment.
inline ::testing::AssertionResult usage_error(const OaRun& r, std::initializer_list<std::string> fragments) {
  auto clean = fails_cleanly(r, fragments);
  if (!clean) return clean;
  if (WEXITSTATUS(r.status) != 2) return ::testing::AssertionFailure() << "exit code " << WEXITSTATUS(r.status) << ", not 2: " << r.err;
  if (!r.out.empty()) return ::testing::AssertionFailure() << "stdout is not empty: " << r.out;
  return ::testing::AssertionSuccess();
}

// A small text for `oa train text`: long enough for context 8.
inline void write_text(const fs::path& p) {
  std::string text;
  for (int i = 0; i < 40; ++i) text += "The quick brown fox jumps over the lazy dog.\n";
  write_file(p, std::vector<std::uint8_t>(text.begin(), text.end()));
}

// The flags of a tiny text model.
inline const std::vector<std::string> kTinyText = {"--context", "8", "--layers", "1", "--heads", "2", "--width", "16", "--steps", "2"};

inline std::vector<std::string> operator+(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Starts (CliDir::start) `oa train text` on a write_text fox.txt in `d`, into
// run/, with one layer, two heads, 100000 steps and `flags` (context, width,
// batch size, validation interval): a run that lasts until it is stopped.
inline pid_t start_endless_text_run(const CliDir& d, const std::vector<std::string>& flags) {
  write_text(d / "fox.txt");
  return d.start(std::vector<std::string>{"train", "text", "--input", "fox.txt", "--out", "run", "--layers", "1", "--heads", "2", "--steps",
                                          "100000"} +
                 flags);
}

// Waits (at most two minutes) until `file` exists and is not empty: for a run
// started with CliDir::start, its first validation's line in metrics.jsonl.
inline void wait_until_written(const fs::path& file) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!(fs::exists(file) && fs::file_size(file) > 0) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

// Waits (at most two minutes) until `file` exists: for a run started with
// CliDir::start, until it holds its run directory's lock and has begun.
inline void wait_until_exists(const fs::path& file) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!fs::exists(file) && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

// The safetensors metadata of an oa train checkpoint: `meta` under "oa.run".
inline oa::ml::Metadata run_metadata(const nlohmann::json& meta) { return {{"oa.run", meta.dump()}}; }

// Rewrites the "oa.run" metadata of the checkpoint `file` with `edit`
// applied, keeping its tensors (a tampered checkpoint).
inline void edit_run_metadata(const fs::path& file, const std::function<void(nlohmann::json&)>& edit) {
  auto checkpoint = oa::ml::load_safetensors(file);
  auto meta = nlohmann::json::parse(checkpoint.metadata.at("oa.run"));
  edit(meta);
  oa::ml::save_safetensors(file, checkpoint.tensors, run_metadata(meta));
}

// The "model" of a checkpoint of the tiny text model (context 8).
inline const nlohmann::json kTinyTextModel = {{"context", 8}, {"layers", 1}, {"heads", 2}, {"width", 16}};

// A text checkpoint of the tiny model (context 8) saved at `step` (no step
// when negative), with a fresh AdamW state (step 0) if `optimizer`: that of
// `oa train text --input fox.txt` (a write_text file) with kTinyText's flags
// and the default --lr, --seed and --batch-size, each tensor filled with
// `fill` if given.
inline void write_text_checkpoint(const fs::path& dir, std::int64_t step, bool optimizer, std::optional<float> fill = std::nullopt) {
  const oa::Engine engine = oa::Engine::default_engine();
  oa::ml::Generator generator(0);
  auto model = oa_cli::make_text_model({8, 1, 2, 16}, generator, engine);
  nlohmann::json meta = {{"task", "text"},
                         {"model", kTinyTextModel},
                         {"training", {{"input", "fox.txt"}, {"lr", 1e-3}, {"seed", 0u}, {"batch_size", 64}, {"steps", 2}}},
                         {"data_size", 1800u},
                         {"total_steps", 2},
                         {"lr_cycles", {0}}};
  if (step >= 0) meta["step"] = step;
  auto tensors = model->named_tensors();
  if (fill)
    for (auto& [name, m] : tensors) m = oa::Matrix::full(m.shape(), *fill, engine);
  fs::create_directories(dir);
  oa::ml::save_safetensors(dir / "model.safetensors", tensors, run_metadata(meta));
  if (optimizer) oa::ml::optim::AdamW(model->parameters()).save_state(dir / "optimizer.safetensors");
}

// An IDX header (magic 00 00 08 <rank>, big-endian extents) and `data` bytes, gzip-compressed.
inline void write_idx_gz(const fs::path& p, std::vector<std::uint8_t> header_and_data) {
  gzFile f = gzopen(p.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, header_and_data.data(), static_cast<unsigned>(header_and_data.size())), static_cast<int>(header_and_data.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

// An IDX file of extents `dims` whose bytes are `data` (all 1 when empty).
inline std::vector<std::uint8_t> idx(std::vector<std::uint32_t> dims, const std::vector<std::uint8_t>& data = {}) {
  std::vector<std::uint8_t> b = {0, 0, 0x08, static_cast<std::uint8_t>(dims.size())};
  std::size_t count = 1;
  for (auto d : dims) {
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<std::uint8_t>(d >> s));
    count *= d;
  }
  if (data.empty()) {
    b.resize(b.size() + count, 1);
  } else {
    b.insert(b.end(), data.begin(), data.end());
  }
  return b;
}

// A Fashion-MNIST-like directory of `train` and `test` 28x28 images: with
// the defaults two per split, all bytes 1; otherwise learnable ones (label
// i % 10, a bright row at 2 * label, pseudo-random noise).
inline void write_fashion_mnist(const fs::path& dir, std::uint32_t train = 2, std::uint32_t test = 2) {
  fs::create_directories(dir);
  for (auto [split, n] : {std::pair<const char*, std::uint32_t>{"train", train}, {"t10k", test}}) {
    std::vector<std::uint8_t> images, labels;
    if (n > 2) {
      std::uint32_t r = n;
      for (std::uint32_t i = 0; i < n; ++i) {
        labels.push_back(static_cast<std::uint8_t>(i % 10));
        for (std::uint32_t p = 0; p < 28 * 28; ++p) {
          r = r * 1664525u + 1013904223u;
          images.push_back(p / 28 == 2 * (i % 10) + 4 ? 255 : static_cast<std::uint8_t>(r >> 26));
        }
      }
    }
    write_idx_gz(dir / (std::string(split) + "-images-idx3-ubyte.gz"), idx({n, 28, 28}, images));
    write_idx_gz(dir / (std::string(split) + "-labels-idx1-ubyte.gz"), idx({n}, labels));
  }
}

// A checkpoint of oa train fashion-mnist with the "oa.run" metadata `meta`
// (its tensors are not the model's).
inline void write_image_checkpoint(const fs::path& dir, const nlohmann::json& meta) {
  fs::create_directories(dir);
  oa::ml::save_safetensors(dir / "model.safetensors", {{"w", oa::Matrix::ones({4})}}, run_metadata(meta));
}

}  // namespace oa::test::cli
