#include "run_dir.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <exception>
#include <functional>

#include <fmt/format.h>

#include "oa/core/error.hpp"
#include "oa/dist/communicator.hpp"

namespace oa_cli {

std::filesystem::path prepare_run_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::path created;  // the outermost missing directory
  for (auto p = std::filesystem::absolute(dir, ec); !ec && !p.empty() && !std::filesystem::exists(p, ec); p = p.parent_path()) {
    created = p;
    if (p == p.parent_path()) break;
  }
  std::filesystem::create_directories(dir, ec);
  if (ec) oa::fail(oa::ErrorKind::InvalidArgument, "cannot create the output directory {}: {}", dir.string(), ec.message());
  return created;
}

RunDirLock::RunDirLock(const std::filesystem::path& dir) : fd_(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
  if (fd_ < 0) {
    const int error = errno;
    oa::fail(oa::ErrorKind::InvalidArgument, "cannot open the output directory {}: {}", dir.string(), std::strerror(error));
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(fd_);
    if (error == EWOULDBLOCK)
      oa::fail(oa::ErrorKind::FailedPrecondition, "{} is in use by another oa train run; wait for it to end or choose another --out",
               dir.string());
    oa::fail(oa::ErrorKind::InvalidArgument, "cannot lock the output directory {}: {}", dir.string(), std::strerror(error));
  }
  const std::filesystem::path probe = dir / fmt::format(".oa-write-test-{}", ::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int error = errno;
    ::close(fd_);
    oa::fail(oa::ErrorKind::InvalidArgument, "cannot write in the output directory {}: {}", dir.string(), std::strerror(error));
  }
  ::close(fd);
  ::unlink(probe.c_str());
}

RunDirLock::~RunDirLock() { ::close(fd_); }

namespace {

namespace fs = std::filesystem;
constexpr const char* kFiles[] = {"model.safetensors", "optimizer.safetensors"};
constexpr const char* kMarker = "checkpoint.commit";

fs::path pending(const fs::path& dir, const char* file) { return dir / (std::string(file) + ".new"); }

// Makes the directory entries of `dir` (created, renamed, removed files) durable.
void sync_dir(const fs::path& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

// Renames every pending file of `dir` over its target and removes the marker.
void commit(const fs::path& dir) {
  for (const char* file : kFiles) {
    std::error_code ec;
    if (!fs::exists(pending(dir, file), ec)) continue;
    fs::rename(pending(dir, file), dir / file, ec);
    if (ec) oa::fail(oa::ErrorKind::InvalidArgument, "cannot write {}: {}", (dir / file).string(), ec.message());
  }
  sync_dir(dir);
  std::error_code ec;
  fs::remove(dir / kMarker, ec);
  sync_dir(dir);
}

}  // namespace

void save_checkpoint(const fs::path& dir, const oa::ml::NamedMatrices& model, const oa::ml::Metadata& metadata,
                     const oa::ml::optim::Optimizer& optimizer) {
  auto discard = [&] {
    std::error_code ec;
    for (const char* file : kFiles) fs::remove(pending(dir, file), ec);
  };
  try {
    about("cannot write " + (dir / kFiles[0]).string(), [&] { oa::ml::save_safetensors(pending(dir, kFiles[0]), model, metadata); });
    about("cannot write " + (dir / kFiles[1]).string(), [&] { optimizer.save_state(pending(dir, kFiles[1])); });
    const int fd = ::open((dir / kMarker).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0 || ::fsync(fd) != 0) {
      const int error = errno;
      if (fd >= 0) ::close(fd);
      oa::fail(oa::ErrorKind::InvalidArgument, "cannot write {}: {}", (dir / kMarker).string(), std::strerror(error));
    }
    ::close(fd);
    sync_dir(dir);
  } catch (...) {
    discard();
    throw;
  }
  commit(dir);
}

void recover_checkpoint(const fs::path& dir) {
  std::error_code ec;
  // Temporary files of a save_safetensors that a second Ctrl-C cut short.
  for (const auto& entry : fs::directory_iterator(dir, ec))
    for (const char* file : kFiles)
      if (entry.path().filename().string().starts_with(fmt::format(".{}.tmp-", pending(dir, file).filename().string())))
        fs::remove(entry.path(), ec);
  if (fs::exists(dir / kMarker, ec)) {
    commit(dir);
    return;
  }
  for (const char* file : kFiles) fs::remove(pending(dir, file), ec);
}

void require_finite_weights(const fs::path& file, const oa::ml::NamedMatrices& tensors, std::string_view used) {
  for (const auto& [name, tensor] : tensors) {
    const std::vector<float> values = tensor.to_vector();
    if (!std::all_of(values.begin(), values.end(), [](float v) { return std::isfinite(v); }))
      oa::fail(oa::ErrorKind::FailedPrecondition, "{} holds non-finite weights in {} (a diverged run?); it cannot be {}", file.string(),
               name, used);
  }
}

bool has_checkpoint(const fs::path& dir) {
  std::error_code ec;
  for (const char* file : kFiles)
    if (fs::exists(dir / file, ec)) return true;
  return false;
}

void remove_checkpoint(const fs::path& dir) {
  std::error_code ec;
  for (const char* file : kFiles) fs::remove(dir / file, ec);
  fs::remove(dir / "plot.png", ec);
}

double cycle_lr(const std::vector<std::int64_t>& starts, std::int64_t total, std::int64_t step, double peak, double floor) {
  std::size_t i = 0;
  while (i + 1 < starts.size() && starts[i + 1] <= step) ++i;
  const std::int64_t end = i + 1 < starts.size() ? starts[i + 1] : total;
  const std::int64_t length = end - starts[i];
  return oa::ml::optim::warmup_cosine_lr(step - starts[i], peak, length / 20, length, floor);
}

std::vector<std::int64_t> lr_cycles(const nlohmann::json& meta, std::int64_t recorded_total, std::int64_t total, const fs::path& file) {
  std::vector<std::int64_t> starts;
  bool ok = true;
  if (meta.contains("lr_cycles")) {
    ok = meta["lr_cycles"].is_array();
    for (const auto& c : ok ? meta["lr_cycles"] : nlohmann::json::array()) {
      ok = ok && c.is_number_integer();
      if (ok) starts.push_back(c.get<std::int64_t>());
    }
  } else {
    starts.push_back(0);
  }
  if (total > recorded_total) starts.push_back(recorded_total);
  ok = ok && !starts.empty() && starts.front() == 0 && starts.back() < total &&
       std::adjacent_find(starts.begin(), starts.end(), std::greater_equal<>()) == starts.end();
  if (!ok) oa::fail(oa::ErrorKind::InvalidArgument, "--resume: {} holds malformed lr_cycles metadata", file.string());
  return starts;
}

oa::Engine make_engine(const std::string& device) {
  // Under MPI each process of a machine takes a device of its own (OA_DEVICE still overrides).
  if (device.empty()) return oa::Engine(oa::EngineOptions{.local_rank = static_cast<std::uint32_t>(oa::dist::Communicator::world().local_rank())});
  return about("--device " + device, [&] { return oa::Engine(oa::EngineOptions{.device = device}); });
}

std::string_view without_function(std::string_view message) {
  if (!message.starts_with("oa::")) return message;
  const auto colon = message.find(": ");
  if (colon == std::string_view::npos || message.substr(0, colon).find(' ') != std::string_view::npos) return message;
  return message.substr(colon + 2);
}

RunDirCleanup::RunDirCleanup(std::filesystem::path dir, std::filesystem::path created)
    : dir_(std::filesystem::absolute(dir)),
      created_(std::move(created)),
      had_metrics_(std::filesystem::exists(dir_ / "metrics.jsonl")),
      exceptions_(std::uncaught_exceptions()) {}

RunDirCleanup::~RunDirCleanup() {
  if (std::uncaught_exceptions() <= exceptions_) return;
  std::error_code ec;
  const auto metrics = dir_ / "metrics.jsonl";
  if (!had_metrics_ && std::filesystem::is_regular_file(metrics, ec) && std::filesystem::file_size(metrics, ec) == 0)
    std::filesystem::remove(metrics, ec);
  if (created_.empty()) return;
  for (auto p = dir_; std::filesystem::is_empty(p, ec) && !ec && std::filesystem::remove(p, ec); p = p.parent_path())
    if (p == created_) break;
}

std::vector<nlohmann::json> read_metrics(const std::filesystem::path& file, const char* key, std::int64_t last,
                                         const std::vector<const char*>& numbers) {
  std::vector<nlohmann::json> rows;
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    auto row = nlohmann::json::parse(line, nullptr, false);
    bool ok = row.is_object() && row.contains(key) && row[key].is_number_integer() && row[key].get<std::int64_t>() <= last;
    for (const char* n : numbers) ok = ok && row.contains(n) && row[n].is_number();
    if (ok) rows.push_back(std::move(row));
  }
  return rows;
}

std::ofstream rewrite_metrics(const std::filesystem::path& file, const std::vector<nlohmann::json>& rows) {
  const std::filesystem::path temporary = file.string() + ".tmp";
  {
    std::ofstream tmp(temporary, std::ios::trunc);
    for (const auto& row : rows) tmp << row.dump() << "\n";
    if (!(tmp << std::flush)) {
      std::filesystem::remove(temporary);
      oa::fail(oa::ErrorKind::InvalidArgument, "cannot write {}", file.string());
    }
  }
  std::error_code ec;
  std::filesystem::rename(temporary, file, ec);
  if (ec) {
    std::filesystem::remove(temporary);
    oa::fail(oa::ErrorKind::InvalidArgument, "cannot write {}: {}", file.string(), ec.message());
  }
  std::ofstream metrics(file, std::ios::app);
  if (!metrics) oa::fail(oa::ErrorKind::InvalidArgument, "cannot write {}", file.string());
  return metrics;
}

void append_metrics(std::ofstream& out, const std::filesystem::path& file, const nlohmann::json& row) {
  if (!(out << row.dump() << "\n" << std::flush)) oa::fail(oa::ErrorKind::InvalidArgument, "cannot write {}", file.string());
}

}  // namespace oa_cli
