#include "oa/runtime/tuning.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "oa/core/error.hpp"
#include "oa/runtime/engine.hpp"
#include "runtime/tuning_tables.hpp"

namespace oa {

namespace {

using Json = nlohmann::ordered_json;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

bool contains(std::string_view haystack, const std::string& needle) {
  return needle.empty() || lower(haystack).find(needle) != std::string::npos;
}

std::string join(const std::vector<std::string_view>& names) {
  std::string out;
  for (std::string_view n : names) out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

template <typename... Args>
[[noreturn]] void bad_table(const std::string& source, fmt::format_string<Args...> why, Args&&... args) {
  fail(ErrorKind::InvalidArgument, "oa tuning table {}: {}", source, fmt::format(why, std::forward<Args>(args)...));
}

// Checks `rule` against `point`; `entry` names it in errors.
void check_rule(const std::string& source, const std::string& entry, const TuningPoint& point, const TuningRule& rule) {
  if (std::find(point.variants.begin(), point.variants.end(), rule.variant) == point.variants.end())
    bad_table(source, "{}: unknown variant \"{}\" (variants of {}: {})", entry, rule.variant, point.name, join(point.variants));
  if (rule.when.size() != point.keys.size()) bad_table(source, "{}: {} bounds for {} keys", entry, rule.when.size(), point.keys.size());
  for (std::size_t i = 0; i < rule.when.size(); ++i)
    if (rule.when[i].first && rule.when[i].second && *rule.when[i].first > *rule.when[i].second)
      bad_table(source, "{}: key {} has lower bound {} above upper bound {}", entry, point.keys[i], *rule.when[i].first,
                *rule.when[i].second);
}

std::optional<std::int64_t> bound(const std::string& source, const std::string& entry, const Json& j) {
  if (j.is_null()) return std::nullopt;
  if (!j.is_number_integer()) bad_table(source, "{}: bound {} is not an integer or null", entry, j.dump());
  return j.get<std::int64_t>();
}

TuningRule parse_rule(const std::string& source, const std::string& entry, const TuningPoint& point, const Json& j) {
  if (!j.is_object()) bad_table(source, "{}: a rule is an object {{\"when\": ..., \"use\": ...}}, not {}", entry, j.dump());
  TuningRule rule;
  rule.when.resize(point.keys.size());
  for (const auto& [field, value] : j.items()) {
    if (field == "use") {
      if (!value.is_string()) bad_table(source, "{}.use: {} is not a variant name", entry, value.dump());
      rule.variant = value.get<std::string>();
    } else if (field == "when") {
      if (!value.is_object()) bad_table(source, "{}.when: {} is not an object of key ranges", entry, value.dump());
      for (const auto& [key, range] : value.items()) {
        const auto k = std::find(point.keys.begin(), point.keys.end(), key);
        const std::string at = fmt::format("{}.when.{}", entry, key);
        if (k == point.keys.end()) bad_table(source, "{}: unknown key (keys of {}: {})", at, point.name, join(point.keys));
        auto& b = rule.when[static_cast<std::size_t>(k - point.keys.begin())];
        if (range.is_number_integer()) {
          b = {range.get<std::int64_t>(), range.get<std::int64_t>()};
        } else if (range.is_array() && range.size() == 2) {
          b = {bound(source, at, range[0]), bound(source, at, range[1])};
        } else {
          bad_table(source, "{}: {} is neither an integer nor [lo, hi]", at, range.dump());
        }
      }
    } else {
      bad_table(source, "{}: unknown field \"{}\" (a rule has \"when\" and \"use\")", entry, field);
    }
  }
  if (!j.contains("use")) bad_table(source, "{}: no \"use\"", entry);
  check_rule(source, entry, point, rule);
  return rule;
}

Json bound_json(const std::optional<std::int64_t>& b) { return b ? Json(*b) : Json(nullptr); }

// j as JSON text with objects and arrays laid out one member per line down to
// `depth` levels, deeper ones on one line (a table's rules one per line).
std::string layout(const Json& j, int depth, const std::string& indent = "") {
  if (depth == 0 || !j.is_structured() || j.empty()) return j.dump();
  const std::string inner = indent + " ";
  std::string out = j.is_object() ? "{\n" : "[\n";
  bool first = true;
  for (auto it = j.begin(); it != j.end(); ++it) {
    out += (first ? "" : ",\n") + inner;
    if (j.is_object()) out += Json(it.key()).dump() + ": ";
    out += layout(*it, depth - 1, inner);
    first = false;
  }
  return out + "\n" + indent + (j.is_object() ? "}" : "]");
}

const TuningPoint* find_point(std::string_view name) {
  for (const TuningPoint& p : tuning_points())
    if (p.name == name) return &p;
  return nullptr;
}

std::string point_names() {
  std::vector<std::string_view> names;
  for (const TuningPoint& p : tuning_points()) names.push_back(p.name);
  return join(names);
}

}  // namespace

bool TuningRule::matches(std::span<const std::int64_t> keys) const {
  for (std::size_t i = 0; i < when.size(); ++i) {
    if (when[i].first && keys[i] < *when[i].first) return false;
    if (when[i].second && keys[i] > *when[i].second) return false;
  }
  return true;
}

const std::vector<TuningPoint>& tuning_points() {
  static const std::vector<std::string_view> gemm_keys{"batch", "m", "n", "k"};
  static const std::vector<std::string_view> conv_keys{"batch", "channels", "groups", "positions", "taps", "transposed"};
  static const std::vector<std::string_view> attention_keys{"bh", "sq", "sk", "dh", "dv", "causal"};
  static const std::vector<TuningPoint> points{
      {"gemm.skinny", gemm_keys, {"skinny", "tiled"},
       "GEMMs of at most 16 rows: the skinny kernel (a strip of columns per workgroup) or the tiled one"},
      {"gemm.tile", gemm_keys,
       {"busy", "busy-square", "128x128", "64x128", "64x64", "32x32", "128x128w", "64x128w8", "32x128"},
       "the tiled GEMM's C tile: the largest that keeps the device busy (busy-square: of the square ones), or a fixed one "
       "(a fixed tile the device cannot run falls back to busy); 128x128w: 128x128 with 32 invocations on each 32x64 "
       "block of C (one NVIDIA subgroup); 64x128w8: 64x128 on 128 invocations of 8 x 8, a subgroup on each 32 x 64 "
       "block; 32x128: 32 rows on 128 invocations of 4 x 8"},
      {"gemm.coopmat_tile", gemm_keys, {"busy", "128x256", "256x128", "128x256k48", "128x128", "128x128w4k64", "64x64"},
       "the tensor-core GEMM's C tile (f16 / bf16 A and B; k48, k64: K steps of 48, 64 elements instead of 32; w4: on 4 "
       "subgroups instead of 8): the largest of 128x256k48 (128x256 where it does not fit), 128x128 that keeps the device "
       "busy or has a long K, else 64x64 (busy), or a fixed one (a fixed tile the device cannot run falls back to busy)"},
      {"gemm.split_k", gemm_keys, {"busy", "none"},
       "splitting K across workgroups while too few would run (busy), or never"},
      {"gemm.f32_high", gemm_keys, {"split-f16", "split-f16-always", "fp32"},
       "f32 GEMMs under Engine::set_float32_matmul_precision(High): three f16 products of split operands on the tensor "
       "cores where the device has f16 cooperative matrices, else the FP32 kernels (split-f16); the split on any device "
       "(split-f16-always: without tensor cores its products take the 16-bit kernels with f32 arithmetic, for tests); or "
       "the FP32 kernels (fp32)"},
      {"conv.kernel", conv_keys, {"winograd", "depthwise", "direct", "igemm"},
       "a convolution's (or its input gradient's) first kernel to try: winograd (F(2x2, 3x3): ungrouped 3x3, stride and "
       "dilation 1), depthwise (one channel per group, small windows), direct (grouped, at most 8 output channels per "
       "group), then the implicit GEMM, which serves all"},
      {"conv.patch", conv_keys, {"patch", "general"},
       "a convolution or transposed convolution whose stride equals its kernel, with no padding, dilation 1 and groups "
       "1 (and, computing the wide side, no rows or columns past the last patch), f32, f16 or bf16: its forward, input "
       "gradient (the other direction's keys) and weight gradient (its forward's keys) as one GEMM each between "
       "space-to-depth or depth-to-space rearrangements (patch), or the kernels that conv.kernel, conv.half_forward and "
       "the weight-gradient points choose (general)"},
      {"conv.igemm_tile", conv_keys, {"128x128", "128x64", "128x32", "64x16", "1024x4"},
       "the implicit-GEMM convolution's tile: output positions x output channels per workgroup (1024x4: each "
       "invocation gathers its own positions, for at most 4 channels)"},
      {"conv.half_forward", conv_keys, {"implicit", "columns"},
       "the ungrouped f16 / bf16 convolutions on devices with cooperative matrices, in both directions (key transposed: 0 "
       "for a convolution's forward and a transposed convolution's input gradient, 1 for a transposed convolution's "
       "forward and a convolution's input gradient): one tensor-core implicit GEMM that gathers its operand from the input "
       "(implicit), or explicit 16-bit columns, a GEMM into f32 and a pass that adds the bias and rounds (columns, the "
       "path grouped 16-bit convolutions and weight gradients take)"},
      {"conv.half_wgrad", conv_keys, {"implicit", "columns"},
       "the ungrouped f16 / bf16 convolution weight gradients on devices with cooperative matrices (key transposed 0): "
       "one tensor-core implicit GEMM over the batch, channels last (implicit), or explicit 16-bit columns and a GEMM per "
       "chunk of images (columns)"},
      {"conv.wgrad_tile", {"channels", "columns", "positions"}, {"128x128", "64x64", "16x32"},
       "the convolution weight gradient's GEMM tile: output channels per group x weight columns (input channels per "
       "group x taps) per workgroup, reducing over the positions (batch x output positions)"},
      {"attention.forward_lowering", attention_keys, {"fused", "gemm"},
       "the attention forward: the fused flash kernels, or GEMMs around a softmax pass (needs contiguous heads)"},
      {"attention.backward_lowering", attention_keys, {"fused", "gemm"},
       "the attention backward: the fused flash passes, or GEMMs around the softmax-gradient pass"},
      {"attention.coopmat_forward", attention_keys, {"on", "off"},
       "the attention forward of 16-bit q, k, v on devices with cooperative matrices: the tensor-core flash kernel (on; "
       "head dims that are multiples of 16 up to 128, more than 4 query rows) or the lowering attention.forward_lowering picks "
       "(off)"},
      {"attention.coopmat_tile", attention_keys,
       {"16x32", "32x32", "16x64", "wg64x16", "wg64x32", "wg64x64", "wg128x32", "wg128x64", "sg64x32", "sg64x64", "sg128x32",
        "sg128x64"},
       "the tensor-core flash forward's tile: query rows per subgroup x keys per shared tile (subgroup-scope matrices, the "
       "softmax through shared memory), wg query rows per workgroup x keys per step (workgroup-scope matrices, "
       "VK_NV_cooperative_matrix2, f16), or sg query rows per workgroup x keys per step (subgroup-scope matrices of 16 rows "
       "each with the softmax in registers, VK_NV_cooperative_matrix2, f16); where the wg or sg kernel cannot run, 16x32"},
      {"attention.coopmat_backward", attention_keys, {"off", "wg64x16", "wg64x32", "wg64x64", "wg128x32", "wg128x64"},
       "the attention backward of f16 q, k, v on devices with workgroup-scope matrices (VK_NV_cooperative_matrix2): the "
       "tensor-core flash passes with that tile (wg query or key rows per workgroup x rows of the other operand per step; "
       "head dims that are multiples of 16 up to 128) or the lowering attention.backward_lowering picks (off)"},
      {"attention.flash_plan", attention_keys, {"wide", "narrow"},
       "the fused flash kernels' workgroups: wide (128-256 invocations, 32-key tiles, sized to fill a GPU) or narrow "
       "(32 invocations, 16-key tiles, for CPU drivers)"},
  };
  return points;
}

const TuningPoint& tuning_point(std::string_view name) {
  if (const TuningPoint* p = find_point(name)) return *p;
  fail(ErrorKind::InvalidArgument, "oa tuning: unknown decision point \"{}\" (points: {})", name, point_names());
}

TuningTable TuningTable::parse(std::string_view json, std::string source) {
  TuningTable t;
  t.source_ = std::move(source);
  Json j;
  try {
    j = Json::parse(json);
  } catch (const nlohmann::json::exception& e) {
    bad_table(t.source_, "not JSON: {}", e.what());
  }
  if (!j.is_object()) bad_table(t.source_, "the table is not a JSON object");
  if (!j.contains("oa_tuning") || j["oa_tuning"] != 1) bad_table(t.source_, "\"oa_tuning\" is not 1 (the format version)");
  for (const auto& [field, value] : j.items()) {
    if (field == "oa_tuning" || field == "description") continue;
    if (field == "measurements") {
      t.measurements_ = value.dump();
    } else if (field == "device") {
      if (!value.is_object()) bad_table(t.source_, "device: {} is not an object", value.dump());
      for (const auto& [k, v] : value.items()) {
        if (!v.is_string()) bad_table(t.source_, "device.{}: {} is not a string", k, v.dump());
        if (k == "name") t.name_filter_ = lower(v.get<std::string>());
        else if (k == "driver") t.driver_filter_ = lower(v.get<std::string>());
        else if (k == "type") t.type_filter_ = lower(v.get<std::string>());
        else bad_table(t.source_, "device.{}: unknown filter (name, driver, type)", k);
      }
    } else if (field == "points") {
      if (!value.is_object()) bad_table(t.source_, "points: {} is not an object", value.dump());
      for (const auto& [name, rules] : value.items()) {
        const std::string entry = fmt::format("points.{}", name);
        const TuningPoint* point = find_point(name);
        if (!point) bad_table(t.source_, "{}: unknown decision point (points: {})", entry, point_names());
        if (!rules.is_array()) bad_table(t.source_, "{}: {} is not a list of rules", entry, rules.dump());
        std::vector<TuningRule> parsed;
        for (std::size_t i = 0; i < rules.size(); ++i)
          parsed.push_back(parse_rule(t.source_, fmt::format("{}[{}]", entry, i), *point, rules[i]));
        t.points_.emplace_back(name, std::move(parsed));
      }
    } else {
      bad_table(t.source_, "unknown field \"{}\" (oa_tuning, description, device, points, measurements)", field);
    }
  }
  return t;
}

TuningTable TuningTable::load(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) fail(ErrorKind::InvalidArgument, "oa tuning table {}: cannot be read", file.string());
  std::ostringstream text;
  text << in.rdbuf();
  return parse(text.str(), file.string());
}

bool TuningTable::matches(const DeviceInfo& device) const {
  return contains(device.name, name_filter_) && contains(device.driver_name, driver_filter_) &&
         contains(to_string(device.type), type_filter_);
}

const std::vector<TuningRule>& TuningTable::rules(std::string_view point) const {
  static const std::vector<TuningRule> none;
  for (const auto& [name, rules] : points_)
    if (name == point) return rules;
  return none;
}

void TuningTable::add_rule(std::string_view point, TuningRule rule) {
  const TuningPoint& p = tuning_point(point);
  check_rule(source_, fmt::format("points.{}", point), p, rule);
  for (auto& [name, rules] : points_)
    if (name == point) {
      rules.push_back(std::move(rule));
      return;
    }
  points_.emplace_back(std::string(point), std::vector<TuningRule>{std::move(rule)});
}

std::string TuningTable::to_json(std::string_view device_name) const {
  Json j;
  j["oa_tuning"] = 1;
  Json device = Json::object();
  if (!device_name.empty()) device["name"] = std::string(device_name);
  else if (!name_filter_.empty()) device["name"] = name_filter_;
  if (!driver_filter_.empty()) device["driver"] = driver_filter_;
  if (!type_filter_.empty()) device["type"] = type_filter_;
  if (!device.empty()) j["device"] = device;
  Json points = Json::object();
  for (const auto& [name, rules] : points_) {
    const TuningPoint& p = tuning_point(name);
    Json list = Json::array();
    for (const TuningRule& r : rules) {
      Json when = Json::object();
      for (std::size_t i = 0; i < r.when.size(); ++i)
        if (r.when[i].first || r.when[i].second)
          when[std::string(p.keys[i])] = Json::array({bound_json(r.when[i].first), bound_json(r.when[i].second)});
      Json rule = Json::object();
      if (!when.empty()) rule["when"] = when;
      rule["use"] = r.variant;
      list.push_back(rule);
    }
    points[name] = list;
  }
  j["points"] = points;
  if (!measurements_.empty()) j["measurements"] = Json::parse(measurements_);
  return layout(j, 3) + "\n";
}

const std::vector<TuningTable>& shipped_tuning_tables() {
  static const std::vector<TuningTable> tables = [] {
    std::vector<TuningTable> out;
    for (const runtime::EmbeddedTable& e : runtime::embedded_tuning_tables())
      out.push_back(TuningTable::parse(e.json, fmt::format("tuning/{} (shipped)", e.file)));
    // The generic table (no device filter) goes last, the specific ones before it.
    const auto generic = std::stable_partition(out.begin(), out.end(), [](const TuningTable& t) { return !t.any_device(); });
    if (out.end() - generic != 1)
      fail(ErrorKind::Internal, "oa tuning: {} shipped tables without a device filter, not one", out.end() - generic);
    return out;
  }();
  return tables;
}

Tuning::Tuning(std::vector<TuningTable> layers) : layers_(std::move(layers)) {}

Tuning Tuning::for_device(const DeviceInfo& device) {
  std::vector<TuningTable> layers;
  std::filesystem::path user;
  if (const char* f = std::getenv("OA_TUNING"); f && *f) {
    user = f;
  } else if (const auto dir = cache_folder(); !dir.empty()) {
    std::error_code ec;
    if (std::filesystem::exists(dir / "tuning" / tuning_file_name(device), ec)) user = dir / "tuning" / tuning_file_name(device);
  }
  if (!user.empty()) layers.push_back(TuningTable::load(user));
  for (const TuningTable& t : shipped_tuning_tables())
    if (t.matches(device)) layers.push_back(t);
  return Tuning(std::move(layers));
}

std::string_view Tuning::choose(std::string_view point, std::initializer_list<std::int64_t> keys) const {
  return choose(point, std::span<const std::int64_t>(keys.begin(), keys.size()));
}

std::string_view Tuning::choose(std::string_view point, std::span<const std::int64_t> keys) const {
  const TuningPoint* p = find_point(point);
  if (!p || keys.size() != p->keys.size())
    fail(ErrorKind::Internal, "oa tuning: {} asked with {} keys", point, keys.size());
  for (const TuningTable& t : layers_)
    for (const TuningRule& r : t.rules(point))
      if (r.matches(keys)) return r.variant;
  for (const TuningRule& r : shipped_tuning_tables().back().rules(point))
    if (r.matches(keys)) return r.variant;
  fail(ErrorKind::Internal, "oa tuning: the generic table has no rule for {} that matches every problem", point);
}

std::string tuning_file_name(const DeviceInfo& device) {
  std::string out;
  for (char c : lower(device.name)) {
    if (std::isalnum(static_cast<unsigned char>(c))) out += c;
    else if (!out.empty() && out.back() != '-') out += '-';
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return (out.empty() ? std::string("device") : out) + ".json";
}

std::filesystem::path cache_folder() {
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::filesystem::path(x) / "oa";
  if (const char* h = std::getenv("HOME"); h && *h) return std::filesystem::path(h) / ".cache" / "oa";
  return {};
}

}  // namespace oa
