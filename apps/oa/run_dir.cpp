#include "run_dir.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>

#include "oa/core/error.hpp"

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
  const std::filesystem::path probe = dir / fmt::format(".oa-write-test-{}", ::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    const int error = errno;
    oa::fail(oa::ErrorKind::InvalidArgument, "cannot write in the output directory {}: {}", dir.string(), std::strerror(error));
  }
  ::close(fd);
  ::unlink(probe.c_str());
  return created;
}

RunDirCleanup::RunDirCleanup(std::filesystem::path dir, std::filesystem::path created)
    : dir_(std::filesystem::absolute(dir)), created_(std::move(created)), exceptions_(std::uncaught_exceptions()) {}

RunDirCleanup::~RunDirCleanup() {
  if (std::uncaught_exceptions() <= exceptions_) return;
  std::error_code ec;
  const auto metrics = dir_ / "metrics.jsonl";
  if (std::filesystem::is_regular_file(metrics, ec) && std::filesystem::file_size(metrics, ec) == 0) std::filesystem::remove(metrics, ec);
  if (created_.empty()) return;
  for (auto p = dir_; std::filesystem::is_empty(p, ec) && !ec && std::filesystem::remove(p, ec); p = p.parent_path())
    if (p == created_) break;
}

std::vector<nlohmann::json> read_metrics(const std::filesystem::path& file, const char* key, std::int64_t last,
                                         std::initializer_list<const char*> numbers) {
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
