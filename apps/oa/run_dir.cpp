#include "run_dir.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "oa/core/error.hpp"

namespace oa_cli {

void prepare_run_dir(const std::filesystem::path& dir) {
  std::error_code ec;
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
}

}  // namespace oa_cli
