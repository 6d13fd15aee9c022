#pragma once
// Checkpoints in the safetensors format (Hugging Face, "safetensors" file
// format): an 8-byte little-endian u64 N, then N bytes of a JSON object (padded
// with spaces to a multiple of 8) mapping each tensor name to
// {"dtype": "F32" | "I32" | "F16" | "BF16" | "BOOL", "shape": [...], "data_offsets": [begin, end]}
// plus an optional "__metadata__" map of strings to strings, then the raw
// little-endian data; offsets are relative to the first data byte, and the
// tensors cover the data without gaps or overlaps.
//
// Saving writes a temporary file in the target's directory, flushes it to disk
// and renames it over the target, so an existing file is either the old one or
// the new one, never half-overwritten.
//
// Errors: oa::Error(InvalidArgument) naming the function, the file and, where
// one is at fault, the tensor: unreadable or unwritable file, truncated file,
// malformed header, a missing, extra or mismatched tensor. An element type oa
// cannot hold (F64, I64, ...) throws Unsupported naming the tensor. F16 and
// BF16 data (IEEE binary16 and bfloat16, 2 bytes an element) are copied
// bit for bit both ways; BOOL is one byte an element, 0 or 1 (a nonzero byte
// of a file reads as 1, true).
#include <concepts>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "oa/matrix/matrix.hpp"
#include "oa/ml/parameter.hpp"

namespace oa::ml {

using NamedMatrices = std::vector<std::pair<std::string, Matrix>>;
using Metadata = std::map<std::string, std::string>;

struct Checkpoint {
  NamedMatrices tensors;  // in the order of their data in the file
  Metadata metadata;
  // The tensor called `name`; throws InvalidArgument naming it when absent.
  const Matrix& at(std::string_view name) const;
};

// Writes `tensors` (data in the given order) and `metadata` to `path`. Throws
// InvalidArgument before writing anything for an empty or duplicated name, the
// reserved name "__metadata__" or an undefined Matrix, and naming the file
// when it cannot be written (the temporary file is removed; an existing file
// at `path` is left as it was).
void save_safetensors(const std::filesystem::path& path, const NamedMatrices& tensors, const Metadata& metadata = {});
// The same for a std::map (a template so that braced lists pick NamedMatrices).
template <typename Map>
  requires std::same_as<Map, std::map<std::string, Matrix>>
void save_safetensors(const std::filesystem::path& path, const Map& tensors, const Metadata& metadata = {}) {
  save_safetensors(path, NamedMatrices(tensors.begin(), tensors.end()), metadata);
}

// Reads every tensor of `path` into new Matrices on `engine`.
Checkpoint load_safetensors(const std::filesystem::path& path, std::optional<Engine> engine = {});

// Reads `path` into existing Matrices, matched by name: the file must hold
// exactly the names of `targets`, each with the same shape and dtype. All of
// it is checked before any target is written; each target is overwritten in
// place (its version is bumped). Returns the file's metadata.
Metadata load_safetensors_into(const std::filesystem::path& path, const NamedMatrices& targets);
template <typename Map>
  requires std::same_as<Map, std::map<std::string, Matrix>>
Metadata load_safetensors_into(const std::filesystem::path& path, const Map& targets) {
  return load_safetensors_into(path, NamedMatrices(targets.begin(), targets.end()));
}

// Model weights by parameter name: each Parameter's value under its name().
// Throws as save_safetensors (two Parameters with one name are refused).
void save_parameters(const std::filesystem::path& path, const std::vector<Parameter>& parameters, const Metadata& metadata = {});
// Reads `path` into the Parameters' values in place, as load_safetensors_into
// (exactly their names, same shapes, f32; versions bumped). Returns the metadata.
Metadata load_parameters(const std::filesystem::path& path, const std::vector<Parameter>& parameters);

// The metadata of `path`; only the header is read (and checked as a whole).
Metadata read_safetensors_metadata(const std::filesystem::path& path);

// The safetensors name of a dtype ("F32", "I32", "F16", "BF16", "BOOL").
std::string_view safetensors_dtype(DType dtype);

}  // namespace oa::ml
