#pragma once
// The run directory `oa train` writes its checkpoints, metrics and plot to.
#include <filesystem>

namespace oa_cli {

// Creates `dir` (with its parents) and checks that a file can be created in
// it, so that an unusable --out fails before any training. Throws oa::Error
// (InvalidArgument) naming the directory and the reason.
void prepare_run_dir(const std::filesystem::path& dir);

}  // namespace oa_cli
