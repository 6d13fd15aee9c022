#include "training_run.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "interrupt.hpp"
#include "oa/core/error.hpp"
#include "oa/ml/checkpoint.hpp"

namespace oa_cli {
namespace {

namespace fs = std::filesystem;
constexpr const char* kMetadataKey = "oa.run";

// Whether `value` has the JSON type of `like` (any integer for an integer, any number for a float).
bool same_kind(const nlohmann::json& value, const nlohmann::json& like) {
  if (like.is_number_integer()) return value.is_number_integer();
  if (like.is_number()) return value.is_number();
  return value.type() == like.type();
}

// A metadata value as a user typed it: strings without quotes.
std::string shown(const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

}  // namespace

void AllReduceTally::add(const oa::dist::DataParallelStats& step) {
  last_ = step;
  exposed_ += step.exposed_seconds;
  started_early_ += step.started_in_backward;
  ++steps_;
}

std::string AllReduceTally::report() {
  if (steps_ == 0) return "";
  const double n = static_cast<double>(steps_);
  std::string line = fmt::format(
      "all-reduce per step: {:.1f} KiB in {} bucket(s), {:.2f} of them started during backward; {:.2f} ms not hidden behind "
      "backward (rank 0)",
      static_cast<double>(last_.bytes) / 1024, last_.buckets, started_early_ / n, 1e3 * exposed_ / n);
  *this = AllReduceTally();
  return line;
}

std::string describe_flags(const std::vector<RunFlag>& flags) {
  std::string out;
  for (const auto& f : flags) {
    if (f.value.is_boolean() && !f.value.get<bool>()) continue;
    if (!out.empty()) out.push_back(' ');
    out.append(f.flag);
    if (!f.value.is_boolean()) out.append(" ").append(shown(f.value));
  }
  return out;
}

nlohmann::json read_run_metadata(const fs::path& file, const std::string& task, const std::vector<RunFlag>& model) {
  if (fs::is_regular_file(file.parent_path()))
    oa::fail(oa::ErrorKind::InvalidArgument, "--checkpoint {} is a file; give the run directory that holds it ({})",
             file.parent_path().string(), file.parent_path().parent_path().empty() ? "." : file.parent_path().parent_path().string());
  if (!fs::exists(file)) oa::fail(oa::ErrorKind::InvalidArgument, "no checkpoint at {}", file.string());
  const auto all = oa::ml::read_safetensors_metadata(file);
  const auto it = all.find(kMetadataKey);
  if (it == all.end())
    for (const char* old : {"oa.train", "oa.text"})
      if (all.contains(old))
        oa::fail(oa::ErrorKind::InvalidArgument,
                 "{} was written by an older oa (its metadata is under {}, not {}), which this oa does not read; train it again",
                 file.string(), old, kMetadataKey);
  nlohmann::json meta = it == all.end() ? nlohmann::json() : nlohmann::json::parse(it->second, nullptr, false);
  if (meta.is_object() && meta.contains("task") && meta["task"].is_string() && meta["task"] != task)
    oa::fail(oa::ErrorKind::InvalidArgument, "{} was not written by oa train {} (it holds a checkpoint of oa train {})", file.string(),
             task, meta["task"].get<std::string>());
  bool ok = meta.is_object() && meta.contains("task") && meta.contains("model") && meta["model"].is_object();
  for (const auto& f : model) ok = ok && meta["model"].contains(f.key) && same_kind(meta["model"][f.key], f.value);
  if (!ok)
    oa::fail(oa::ErrorKind::InvalidArgument, "{} was not written by oa train {} (its {} metadata is missing or malformed)", file.string(),
             task, kMetadataKey);
  return meta;
}

TrainingRun::TrainingRun(RunSpec spec) : spec_(std::move(spec)) {
  if (!writer()) return;
  created_ = prepare_run_dir(spec_.out);
  lock_.emplace(spec_.out);
  cleanup_.emplace(spec_.out, created_);  // a run failing before its first write leaves nothing
  recover_checkpoint(spec_.out);
  const fs::path model_file = file("model.safetensors");
  if (!spec_.resume) {
    if (has_checkpoint(spec_.out) && !spec_.overwrite)
      oa::fail(oa::ErrorKind::InvalidArgument,
               "{} holds a checkpoint; pass --resume to continue that run, --overwrite to replace it, or another --out",
               spec_.out.string());
    return;
  }
  if (!fs::exists(model_file))
    oa::fail(oa::ErrorKind::InvalidArgument, "--resume: no checkpoint at {}; train without --resume first", model_file.string());
  meta_ = read_run_metadata(model_file, spec_.task, spec_.model);

  std::vector<RunFlag> saved_model = spec_.model;
  for (auto& f : saved_model) f.value = meta_["model"][f.key];
  if (describe_flags(saved_model) != describe_flags(spec_.model))
    oa::fail(oa::ErrorKind::InvalidArgument, "--resume: {} holds a model of {}, not {}; resume it with its flags", model_file.string(),
             describe_flags(saved_model), describe_flags(spec_.model));

  // Every training flag the same, but the length no smaller.
  const nlohmann::json training = meta_.contains("training") && meta_["training"].is_object() ? meta_["training"] : nlohmann::json::object();
  std::vector<RunFlag> had, have, flags = spec_.training;
  flags.push_back(spec_.length);
  for (const auto& f : flags) {
    const nlohmann::json value = training.contains(f.key) ? training[f.key] : f.unrecorded;
    const bool recorded = !value.is_null() && same_kind(value, f.value);
    const bool extends = &f == &flags.back() && recorded && value <= f.value;
    if (recorded && (value == f.value || extends)) continue;
    had.push_back({f.key, f.flag, recorded ? value : nlohmann::json("(not recorded)")});
    have.push_back(f);
  }
  if (!had.empty())
    oa::fail(oa::ErrorKind::InvalidArgument,
             "--resume: {} was trained with {}, not {}; resume it with the same flags (the batch order, the learning-rate schedule "
             "and the arithmetic depend on them; a larger {} extends the run)",
             model_file.string(), describe_flags(had), describe_flags(have), spec_.length.flag);

  if (!meta_.contains("data_size") || !meta_["data_size"].is_number_unsigned())
    oa::fail(oa::ErrorKind::InvalidArgument, "--resume: {} does not record the size of its training data; train again without --resume",
             model_file.string());
  if (!meta_.contains("step") || !meta_["step"].is_number_integer() || meta_["step"].get<std::int64_t>() < 0)
    oa::fail(oa::ErrorKind::InvalidArgument, "--resume: {} does not say which step it was saved at", model_file.string());
  const auto step = meta_["step"].get<std::int64_t>();
  if (!meta_.contains("total_steps") || !meta_["total_steps"].is_number_integer() || meta_["total_steps"].get<std::int64_t>() < step)
    oa::fail(oa::ErrorKind::InvalidArgument, "--resume: {} is of step {}, past the steps of its run (or does not record them)",
             model_file.string(), step);
  const nlohmann::json& length = training[spec_.length.key];
  if (step == meta_["total_steps"].get<std::int64_t>() && length == spec_.length.value)
    oa::fail(oa::ErrorKind::InvalidArgument,
             "--resume: {} finished its {} {}, so there is nothing to train; pass a larger {} to extend the run", model_file.string(),
             spec_.length.flag, shown(length), spec_.length.flag);
}

void TrainingRun::set_data_size(std::uint64_t size, const std::string& what) {
  data_size_ = size;
  if (spec_.resume && writer() && meta_["data_size"].get<std::uint64_t>() != size)
    oa::fail(oa::ErrorKind::InvalidArgument, "--resume: {} was trained on {} {}, which now holds {}; train again without --resume",
             file("model.safetensors").string(), meta_["data_size"].get<std::uint64_t>(), what, size);
}

void TrainingRun::start(oa::ml::nn::Module& model, oa::ml::optim::Optimizer& optimizer, std::int64_t steps_per_unit,
                        const std::function<std::int64_t(const nlohmann::json&)>& steps_into_unit,
                        const std::function<void(const nlohmann::json&, std::int64_t)>& check_state) {
  model_ = &model;
  optimizer_ = &optimizer;
  steps_per_unit_ = steps_per_unit;
  total_steps_ = spec_.length.value.get<std::int64_t>() * steps_per_unit;
  const fs::path model_file = file("model.safetensors"), optimizer_file = file("optimizer.safetensors");
  if (!writer()) {
    // What rank 0 found, once it has checked (and completed) the checkpoint.
    std::string shared;
    world_.broadcast(shared, 0);
    const auto state = nlohmann::json::parse(shared);
    first_step_ = state["first_step"].get<std::int64_t>();
    cycles_ = state["cycles"].get<std::vector<std::int64_t>>();
    resumed_state_ = state["resumed_state"];
    if (spec_.resume) {
      oa::ml::load_safetensors_into(model_file, model.named_tensors());
      optimizer.load_state(optimizer_file);
    }
    install_interrupt_handler();
    return;
  }
  if (spec_.resume) {
    if (meta_.contains("state") && meta_["state"].is_object()) resumed_state_ = meta_["state"];
    // The checkpoint's run had recorded_total steps for its length, so
    // `recorded` steps per unit; another global batch gives this run another
    // number, and the schedule's steps are mapped unit for unit.
    const auto recorded_total = meta_["total_steps"].get<std::int64_t>();
    const nlohmann::json& recorded_length = meta_["training"][spec_.length.key];
    if (recorded_length.get<std::int64_t>() < 1 || recorded_total % recorded_length.get<std::int64_t>() != 0 ||
        recorded_total == 0)
      oa::fail(oa::ErrorKind::InvalidArgument, "--resume: {} records {} steps for {} {}; train again without --resume",
               model_file.string(), recorded_total, spec_.length.flag, shown(recorded_length));
    const std::int64_t recorded = recorded_total / recorded_length.get<std::int64_t>(), step = meta_["step"].get<std::int64_t>();
    nlohmann::json schedule = meta_;
    first_step_ = step;
    if (recorded != steps_per_unit) {
      if (schedule.contains("lr_cycles") && schedule["lr_cycles"].is_array())
        for (auto& c : schedule["lr_cycles"])
          if (c.is_number_integer()) c = c.get<std::int64_t>() / recorded * steps_per_unit;
      first_step_ = step / recorded * steps_per_unit;
      if (step % recorded != 0) {
        if (!steps_into_unit)
          oa::fail(oa::ErrorKind::InvalidArgument, "--resume: {} was saved within {} {} by a run of {} steps per {}, not {}",
                   model_file.string(), spec_.unit, step / recorded + 1, recorded, spec_.unit, steps_per_unit);
        first_step_ += std::min(steps_into_unit(resumed_state_), steps_per_unit - 1);
      }
    }
    if (check_state) check_state(resumed_state_, first_step_);
    cycles_ = lr_cycles(schedule, recorded_length.get<std::int64_t>() * steps_per_unit, total_steps_, model_file);
    oa::ml::load_safetensors_into(model_file, model.named_tensors());
    require_finite_weights(model_file, model.named_tensors(), "resumed");
    optimizer.load_state(optimizer_file);
    const nlohmann::json optimizer_steps = meta_.value("optimizer_steps", meta_["step"]);
    if (!optimizer_steps.is_number_integer() || optimizer.steps() != optimizer_steps.get<std::int64_t>())
      oa::fail(oa::ErrorKind::InvalidArgument,
               "--resume: {} is of step {} but {} of step {} (a save was cut short); train again without --resume",
               optimizer_file.string(), optimizer.steps(), model_file.string(), optimizer_steps.dump());
    history_ = read_metrics(file("metrics.jsonl"), spec_.unit.c_str(), first_step_ / steps_per_unit, spec_.metrics);
    saved_step_ = first_step_;
  } else if (spec_.overwrite) {
    remove_checkpoint(spec_.out);
  }
  metrics_ = rewrite_metrics(file("metrics.jsonl"), history_);
  if (world_.size() > 1) {
    std::string shared = nlohmann::json{{"first_step", first_step_}, {"cycles", cycles_}, {"resumed_state", resumed_state_}}.dump();
    world_.broadcast(shared, 0);
  }
  const std::int64_t first_end = cycles_.size() > 1 ? cycles_[1] : total_steps_;
  fmt::print("schedule: lr {} after {} warmup steps, cosine to {} at step {}{}\n", spec_.lr, first_end / 20, spec_.lr_floor, first_end,
             cycles_.size() > 1 ? fmt::format(" (extended: a new warmup-cosine cycle from step {})", cycles_.back()) : "");
  if (spec_.resume) fmt::print("resumed from {} at {}\n", model_file.string(), where(first_step_));
  install_interrupt_handler();
}

float TrainingRun::lr(std::int64_t step) const {
  return static_cast<float>(cycle_lr(cycles_, total_steps_, step, spec_.lr, spec_.lr_floor));
}

std::string TrainingRun::where(std::int64_t step) const {
  if (spec_.unit == "step") return fmt::format("step {}", step);
  return fmt::format("{} {} step {}", spec_.unit, step / steps_per_unit_ + 1, step % steps_per_unit_);
}

bool TrainingRun::interrupted() { return g_interrupted != 0; }

bool TrainingRun::stop_requested() const {
  if (world_.size() == 1) return interrupted();
  double any = interrupted() ? 1 : 0;
  world_.all_reduce(std::span<double>(&any, 1));
  return any > 0;
}

std::unique_ptr<oa::dist::DataParallel> TrainingRun::data_parallel(std::vector<oa::ml::Parameter> parameters,
                                                                   oa::ml::NamedMatrices buffers, double bucket_mb) const {
  if (world_.size() == 1) return nullptr;
  return std::make_unique<oa::dist::DataParallel>(
      std::move(parameters), world_,
      oa::dist::DataParallelOptions{.bucket_bytes = static_cast<std::uint64_t>(std::ceil(bucket_mb * (1 << 20)))}, std::move(buffers));
}

void TrainingRun::record(const nlohmann::json& row) {
  if (!writer()) return;
  append_metrics(metrics_, file("metrics.jsonl"), row);
  history_.push_back(row);
}

nlohmann::json TrainingRun::metadata(std::int64_t step, const nlohmann::json& state) const {
  nlohmann::json model = nlohmann::json::object(), training = nlohmann::json::object();
  for (const auto& f : spec_.model) model[f.key] = f.value;
  for (const auto& f : spec_.training) training[f.key] = f.value;
  training[spec_.length.key] = spec_.length.value;
  return {{"task", spec_.task},
          {"model", model},
          {"training", training},
          {"data_size", data_size_},
          {"step", step},
          {"optimizer_steps", optimizer_->steps()},
          {"total_steps", total_steps_},
          {"lr_cycles", cycles_},
          {"state", state}};
}

void TrainingRun::require_identical_replicas(std::int64_t step) const {
  if (world_.size() == 1) return;
  std::uint64_t hash = 14695981039346656037ull;  // FNV-1a over the parameters' f32 bytes
  for (const auto& p : model_->parameters())
    for (float v : p.value().to_vector()) {
      std::uint32_t bits = 0;
      std::memcpy(&bits, &v, sizeof bits);
      for (int k = 0; k < 4; ++k) hash = (hash ^ ((bits >> (8 * k)) & 0xffu)) * 1099511628211ull;
    }
  // The sum over the ranks of each 32-bit half is exact in a double, and it
  // is size() times every rank's own only if all hold the same; the ranks
  // then agree on whether any found otherwise.
  std::vector<double> halves = {static_cast<double>(hash >> 32), static_cast<double>(hash & 0xffffffffu)};
  world_.all_reduce(std::span<double>(halves));
  double differs = halves[0] != world_.size() * static_cast<double>(hash >> 32) ||
                           halves[1] != world_.size() * static_cast<double>(hash & 0xffffffffu)
                       ? 1
                       : 0;
  world_.all_reduce(std::span<double>(&differs, 1));
  if (differs > 0)
    oa::fail(oa::ErrorKind::Internal,
             "the {} ranks' weights differ after {} (data-parallel training keeps them identical, bit for bit); nothing was saved",
             world_.size(), where(step));
}

void TrainingRun::save(std::int64_t step, const nlohmann::json& state) {
  require_identical_replicas(step);
  if (!writer()) return;
  save_checkpoint(spec_.out, model_->named_tensors(), {{kMetadataKey, metadata(step, state).dump()}}, *optimizer_);
  saved_step_ = step;
}

void TrainingRun::require_finite(double value, const char* what, std::int64_t step) const {
  if (std::isfinite(value)) return;
  std::string saved;
  if (saved_step_ >= 0)
    saved = fmt::format(" (the checkpoint {} is in {})",
                        spec_.unit != "step" && saved_step_ % steps_per_unit_ == 0
                            ? fmt::format("after {} {}", spec_.unit, saved_step_ / steps_per_unit_)
                            : "at " + where(saved_step_),
                        spec_.out.string());
  // At a unit's end, "epoch 1 step 4" rather than "epoch 2 step 0".
  const std::string at = spec_.unit != "step" && step > 0 && step % steps_per_unit_ == 0
                             ? fmt::format("{} {} step {}", spec_.unit, step / steps_per_unit_, steps_per_unit_)
                             : where(step);
  oa::fail(oa::ErrorKind::FailedPrecondition, "training diverged: {} {} at {}; try a lower --lr{}", what, value, at, saved);
}

void TrainingRun::write_plot() const { write_line_chart(file("plot.png").string(), spec_.plot(history_)); }

int TrainingRun::stop(std::int64_t step, const nlohmann::json& state) {
  save(step, state);
  if (!writer()) return 128 + g_interrupted;
  if (!history_.empty()) write_plot();
  fmt::print("interrupted after {}: checkpoint saved in {}{}; run the same command with --resume to continue from {}\n", where(step),
             spec_.out.string(), history_.empty() ? "" : fmt::format(", plot {}", file("plot.png").string()), where(step));
  return 128 + g_interrupted;
}

int TrainingRun::finish(const std::string& summary) {
  if (!writer()) return 0;
  write_plot();
  fmt::print("done: {}; checkpoint {}, metrics {}, plot {}\n", summary, file("model.safetensors").string(), file("metrics.jsonl").string(),
             file("plot.png").string());
  return 0;
}

RunFlag Precision::flag(const std::string& name) {
  if (name != "fp32" && name != "fp16" && name != "bf16")
    oa::fail(oa::ErrorKind::InvalidArgument, "--precision {}: must be fp32, fp16 or bf16", name);
  return {"precision", "--precision", name, "fp32"};
}

Precision::Precision(const std::string& name, const oa::Engine& engine) : scaler_({.enabled = name == "fp16"}, engine) {
  flag(name);
  if (name == "fp16") dtype_ = oa::DType::F16;
  else if (name == "bf16") dtype_ = oa::DType::BF16;
}

oa::AutocastGuard Precision::autocast() const { return oa::AutocastGuard(dtype_.value_or(oa::DType::F16), dtype_.has_value()); }

nlohmann::json Precision::with_scaler(nlohmann::json state) const {
  if (scaler_.enabled()) {
    const oa::ml::amp::GradScalerState s = scaler_.state();
    state["grad_scaler"] = {{"scale", s.scale}, {"growth_tracker", s.growth_tracker}};
  }
  return state;
}

void Precision::restore_scaler(const nlohmann::json& state, const fs::path& file) {
  if (!scaler_.enabled() || !state.contains("grad_scaler")) return;
  const nlohmann::json& s = state["grad_scaler"];
  if (!s.is_object() || !s.contains("scale") || !s["scale"].is_number() || !std::isfinite(s["scale"].get<float>()) ||
      s["scale"].get<float>() <= 0 || !s.contains("growth_tracker") || !s["growth_tracker"].is_number_integer() ||
      s["growth_tracker"].get<std::int64_t>() < 0)
    oa::fail(oa::ErrorKind::InvalidArgument,
             "--resume: {} holds state.grad_scaler {}, but a loss scaler's state is a scale (a finite number above 0) and a "
             "growth_tracker (an integer from 0); train again without --resume",
             file.string(), s.dump());
  scaler_.load_state({s["scale"].get<float>(), s["growth_tracker"].get<std::int64_t>()});
}

}  // namespace oa_cli
