#pragma once
// The shipped tuning tables (tuning/*.json), embedded at build time by
// cmake/EmbedTuning.cmake into tuning_tables.cpp of the build tree.
#include <span>
#include <string_view>

namespace oa::runtime {

struct EmbeddedTable {
  std::string_view file;  // "nvidia-hopper.json"
  std::string_view json;
};

std::span<const EmbeddedTable> embedded_tuning_tables();

}  // namespace oa::runtime
