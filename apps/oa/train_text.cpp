// Character-level (byte) language modelling: `oa train text` and `oa sample`.
// Validation loss on the held-out last 5% of the text is reported in bits per
// character. Each validation appends to metrics.jsonl and writes a checkpoint
// (model, AdamW state, step, model and training flags); --resume continues
// from it exactly (the batch and learning rate of a step depend only on the
// seed and the step) and refuses other flags (but --eval-every and a larger
// --steps, which extends the run by a warmup-cosine cycle of its own), Ctrl-C or
// SIGTERM saves one and exits, a diverged run (non-finite loss or validation)
// fails without saving, and a plot of train and validation bits per character
// is written at the end.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>

#include <nlohmann/json.hpp>

#include "interrupt.hpp"
#include "models.hpp"
#include "oa/oa.hpp"
#include "plot.hpp"
#include "progress.hpp"
#include "run_dir.hpp"
#include "train.hpp"

namespace oa_cli {
namespace {

namespace fs = std::filesystem;
using oa::Matrix;
namespace data = oa::ml::data;

// Mean cross entropy in bits per character over non-overlapping windows of the
// validation text (at most 64 batches).
double validation_bpc(oa::ml::nn::Module& model, const std::vector<std::uint8_t>& text, std::int64_t context,
                      std::int64_t batch_size, const oa::Engine& engine) {
  oa::NoGradGuard no_grad;
  const std::int64_t windows = std::min<std::int64_t>((static_cast<std::int64_t>(text.size()) - 1) / context, 64 * batch_size);
  if (windows < 1) oa::fail(oa::ErrorKind::InvalidArgument, "the validation text is shorter than one context window");
  Matrix total;
  std::int64_t count = 0;
  for (std::int64_t w0 = 0; w0 < windows; w0 += batch_size) {
    const std::int64_t b = std::min(batch_size, windows - w0);
    std::vector<std::int32_t> tok(static_cast<std::size_t>(b * context)), tgt(tok.size());
    for (std::int64_t i = 0; i < b; ++i)
      for (std::int64_t t = 0; t < context; ++t) {
        const auto at = static_cast<std::size_t>((w0 + i) * context + t);
        tok[static_cast<std::size_t>(i * context + t)] = text[at];
        tgt[static_cast<std::size_t>(i * context + t)] = text[at + 1];
      }
    Matrix logits = model(Matrix::from_i32({b, context}, tok, engine));
    Matrix loss = oa::ml::cross_entropy(logits.reshape({b * context, 256}), Matrix::from_i32({b * context}, tgt, engine),
                                        {.reduction = oa::ml::Reduction::Sum});
    total = total.defined() ? total + loss : loss;
    count += b * context;
  }
  return total.item() / static_cast<double>(count) / std::log(2.0);
}

nlohmann::json text_metadata(const fs::path& file) {
  if (!fs::exists(file)) oa::fail(oa::ErrorKind::InvalidArgument, "no checkpoint at {}", file.string());
  auto all = oa::ml::read_safetensors_metadata(file);
  auto it = all.find("oa.text");
  nlohmann::json meta = it == all.end() ? nlohmann::json() : nlohmann::json::parse(it->second, nullptr, false);
  for (const char* k : {"context", "layers", "heads", "width"})
    if (!meta.is_object() || !meta.contains(k) || !meta[k].is_number_integer())
      oa::fail(oa::ErrorKind::InvalidArgument, "{} was not written by oa train text (oa.text metadata missing or malformed)",
               file.string());
  return meta;
}

// "--context C --layers L --heads H --width W".
std::string config_flags(const TextModelConfig& c) {
  return fmt::format("--context {} --layers {} --heads {} --width {}", c.context, c.layers, c.heads, c.width);
}

// The training flags a --resume run must repeat (--eval-every may differ and
// --steps grow), as
// saved in the checkpoint's oa.text metadata: the --input path as given
// ("fortunes" for the default), --lr, --seed, --batch-size and --steps.
nlohmann::json training_flags(const TrainTextArgs& args) {
  return {{"input", args.input.empty() ? "fortunes" : args.input},
          {"lr", args.lr},
          {"seed", args.seed},
          {"batch_size", args.batch_size},
          {"steps", args.steps}};
}

// What a --resume run continues from.
struct Resumable {
  std::int64_t step = 0;   // the checkpoint's step
  std::uint64_t bytes = 0;  // the size of the text it was trained on
  std::vector<std::int64_t> cycles{0};  // the learning-rate schedule's cycle starts (see cycle_lr)
};

// The checkpoint in `out` that a --resume run of `args` continues from. Throws
// InvalidArgument (one line, naming the flag) when there is no checkpoint, it
// holds another model, was trained with other training flags or fewer --steps
// (or records none or no step), or has already trained all --steps. A larger
// --steps adds a learning-rate cycle from the recorded --steps on. Reads only
// the checkpoint's header.
Resumable resumable(const fs::path& out, const TextModelConfig& config, const TrainTextArgs& args) {
  const fs::path file = out / "model.safetensors";
  if (!fs::exists(file))
    oa::fail(oa::ErrorKind::InvalidArgument, "--resume: no checkpoint at {}; train without --resume first", file.string());
  const auto meta = text_metadata(file);
  const TextModelConfig saved{meta["context"], meta["layers"], meta["heads"], meta["width"]};
  if (config_flags(saved) != config_flags(config))
    oa::fail(oa::ErrorKind::InvalidArgument, "--resume: {} holds a model of {}, not {}; resume it with its flags", file.string(),
             config_flags(saved), config_flags(config));
  const auto shown = [](const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
  const nlohmann::json flags = training_flags(args);
  for (const auto& [key, flag] : {std::pair{"input", "--input"}, {"lr", "--lr"}, {"seed", "--seed"}, {"batch_size", "--batch-size"},
                                  {"steps", "--steps"}}) {
    if (!meta.contains(key))
      oa::fail(oa::ErrorKind::InvalidArgument, "--resume: {} does not record its {} (an older oa wrote it); train again without --resume",
               file.string(), flag);
    const bool extends = std::string_view(key) == "steps" && meta[key].is_number_integer() &&
                         meta[key].get<std::int64_t>() <= args.steps;
    if (meta[key] != flags[key] && !extends)
      oa::fail(oa::ErrorKind::InvalidArgument, "--resume: {} was trained with {} {}, not {}; resume it with its flags", file.string(),
               flag, shown(meta[key]), shown(flags[key]));
  }
  const auto recorded = meta["steps"].get<std::int64_t>();
  if (!meta.contains("bytes") || !meta["bytes"].is_number_unsigned())
    oa::fail(oa::ErrorKind::InvalidArgument, "--resume: {} does not record the size of its --input; train again without --resume",
             file.string());
  if (!meta.contains("step") || !meta["step"].is_number_integer() || meta["step"].get<std::int64_t>() < 0)
    oa::fail(oa::ErrorKind::InvalidArgument, "--resume: {} does not say which step it was saved at", file.string());
  const auto step = meta["step"].get<std::int64_t>();
  if (step > recorded)
    oa::fail(oa::ErrorKind::InvalidArgument, "--resume: {} is of step {}, past its --steps {}", file.string(), step, recorded);
  if (step == recorded && args.steps == recorded)
    oa::fail(oa::ErrorKind::InvalidArgument,
             "--resume: {} finished its --steps {}, so there is nothing to train; pass a larger --steps to extend the run",
             file.string(), recorded);
  return {step, meta["bytes"].get<std::uint64_t>(), lr_cycles(meta, recorded, args.steps, file)};
}

// Model weights (with `meta` and `step` as "oa.text" metadata) and AdamW
// state, as one checkpoint.
void save_run(const fs::path& out, oa::ml::nn::Module& model, const oa::ml::optim::Optimizer& optimizer, nlohmann::json meta,
              std::int64_t step) {
  meta["step"] = step;
  save_checkpoint(out, model.named_tensors(), {{"oa.text", meta.dump()}}, optimizer);
}

// Train loss (in bits per character: loss / ln 2) and validation bits per
// character against step.
void write_plot(const fs::path& file, const std::vector<nlohmann::json>& history) {
  Panel panel{"bits per character", {{"train loss / ln 2", {}, {}}, {"validation", {}, {}}}, "step"};
  for (const auto& row : history) {
    const double step = row["step"].get<double>();
    panel.series[0].x.push_back(step), panel.series[0].y.push_back(row["train_loss"].get<double>() / std::log(2.0));
    panel.series[1].x.push_back(step), panel.series[1].y.push_back(row["validation_bpc"].get<double>());
  }
  write_line_chart(file.string(), {panel});
}

// Throws FailedPrecondition when a loss or validation value is not finite, so
// that a diverged run never saves a checkpoint.
void require_finite(double value, const char* what, std::int64_t step) {
  if (!std::isfinite(value))
    oa::fail(oa::ErrorKind::FailedPrecondition, "training diverged: {} {} at step {}; try a lower --lr", what, value, step);
}

}  // namespace

int train_text(const TrainTextArgs& args) {
  const fs::path out = args.out;
  const fs::path created = prepare_run_dir(out);
  const RunDirLock lock(out);  // held until the run ends
  const RunDirCleanup cleanup(out, created);  // a run failing before its first write leaves nothing
  recover_checkpoint(out);
  const TextModelConfig config{args.context, args.layers, args.heads, args.width};
  if (!args.resume && !args.overwrite && has_checkpoint(out))
    oa::fail(oa::ErrorKind::InvalidArgument,
             "{} holds a checkpoint; pass --resume to continue that run, --overwrite to replace it, or another --out", out.string());
  const Resumable resume = args.resume ? resumable(out, config, args) : Resumable{};
  const std::int64_t start = resume.step;
  const std::string source = args.input.empty() ? "/usr/share/games/fortunes" : args.input;
  std::vector<std::uint8_t> bytes = args.input.empty()
                                        ? about("the default --input " + source, [] { return data::read_bytes(data::fortune_files()); })
                                        : about("--input " + args.input, [&] { return data::read_bytes({args.input}); });
  if (args.resume && bytes.size() != resume.bytes)
    oa::fail(oa::ErrorKind::InvalidArgument,
             "--resume: {} was trained on {} bytes of --input {}, which now holds {}; train again without --resume",
             (out / "model.safetensors").string(), resume.bytes, source, bytes.size());
  nlohmann::json meta = training_flags(args);
  meta.update({{"context", config.context}, {"layers", config.layers}, {"heads", config.heads}, {"width", config.width},
               {"bytes", static_cast<std::uint64_t>(bytes.size())}, {"lr_cycles", resume.cycles}});
  data::TextSplit split = data::split_text(std::move(bytes), 0.05);
  if (static_cast<std::int64_t>(split.validation.size()) < args.context + 1)
    oa::fail(oa::ErrorKind::InvalidArgument,
             "{}: the held-out last 5% ({} bytes) is shorter than one window of --context {} plus one byte; use a longer text or a "
             "smaller --context",
             source, split.validation.size(), args.context);
  oa::Engine engine = make_engine(args.device);
  fmt::print("oa train text: {} training / {} validation bytes from {} on {}\n", split.train.size(), split.validation.size(), source,
             engine.device().name);
  oa::ml::Generator generator(args.seed);
  auto model = make_text_model(config, generator, engine);
  oa::ml::optim::AdamW optimizer(model->parameters(), {.lr = static_cast<float>(args.lr), .weight_decay = 0.1f});
  data::TextLoader loader(split.train, args.batch_size, args.context, args.seed, engine);
  fmt::print("model: {} parameters ({} layers, {} heads, width {}, context {})\n", model->parameter_count(), args.layers, args.heads,
             args.width, args.context);
  std::vector<nlohmann::json> history;
  if (args.resume) {
    oa::ml::load_safetensors_into(out / "model.safetensors", model->named_tensors());
    optimizer.load_state(out / "optimizer.safetensors");
    if (optimizer.steps() != start)
      oa::fail(oa::ErrorKind::InvalidArgument,
               "--resume: {} is of step {} but {} of step {} (a save was cut short); train again without --resume",
               (out / "optimizer.safetensors").string(), optimizer.steps(), (out / "model.safetensors").string(), start);
    history = read_metrics(out / "metrics.jsonl", "step", start, {"train_loss", "validation_bpc"});
  } else if (args.overwrite) {
    remove_checkpoint(out);
  }
  std::ofstream metrics = rewrite_metrics(out / "metrics.jsonl", history);
  if (args.resume) fmt::print("resumed from {} at step {}\n", (out / "model.safetensors").string(), start);

  install_interrupt_handler();
  Progress progress(start == 0 ? "train text" : fmt::format("train text from step {}", start), args.steps - start, "tok");
  const auto t0 = std::chrono::steady_clock::now();
  double bpc = 0;
  Matrix loss;  // the last step's
  std::int64_t step = start;
  for (; step < args.steps && !g_interrupted; ++step) {
    optimizer.set_lr(static_cast<float>(cycle_lr(resume.cycles, args.steps, step, args.lr, args.lr / 10)));
    auto batch = loader.batch(static_cast<std::uint64_t>(step));
    Matrix logits = (*model)(batch.tokens);
    const std::int64_t n = batch.tokens.numel();
    loss = oa::ml::cross_entropy(logits.reshape({n, 256}), batch.targets.reshape({n}));
    optimizer.zero_grad();
    oa::backward(loss);
    oa::ml::optim::clip_grad_norm(model->parameters(), 1.0f);
    optimizer.step();
    const bool last = step + 1 == args.steps;
    // The interrupt flag is read every step: the engine keeps only a few
    // batches of work queued, so Ctrl-C stops recording at once and the save
    // waits only for those. Reading the loss syncs the host with the GPU, so
    // it happens every 25 steps.
    if ((step + 1) % 25 == 0 || last) {
      const float value = loss.item();
      require_finite(value, "loss", step + 1);
      progress.update(step + 1 - start, (step + 1 - start) * n, value);
    }
    if ((step + 1) % args.eval_every == 0 || last) {
      progress.finish();
      bpc = validation_bpc(*model, split.validation, args.context, args.batch_size, engine);
      require_finite(bpc, "validation bits per character", step + 1);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      nlohmann::json row = {{"step", step + 1}, {"train_loss", loss.item()}, {"validation_bpc", bpc},
                            {"tokens_per_second", static_cast<double>((step + 1 - start) * n) / seconds}};
      append_metrics(metrics, out / "metrics.jsonl", row);
      history.push_back(row);
      fmt::print("step {}: validation {:.3f} bits per character ({:.0f} tokens/s)\n", step + 1, bpc,
                 row["tokens_per_second"].get<double>());
      save_run(out, *model, optimizer, meta, step + 1);
    }
  }
  if (step < args.steps) {  // Ctrl-C or SIGTERM
    progress.finish();
    save_run(out, *model, optimizer, meta, step);
    if (!history.empty()) write_plot(out / "plot.png", history);
    fmt::print("interrupted after step {} of {}: checkpoint saved in {}{}; run the same command with --resume to continue\n", step,
               args.steps, out.string(), history.empty() ? "" : fmt::format(", plot {}", (out / "plot.png").string()));
    return 128 + g_interrupted;
  }
  write_plot(out / "plot.png", history);
  fmt::print("done: validation {:.3f} bits per character after {} steps; checkpoint {}, metrics {}, plot {}\n", bpc, args.steps,
             (out / "model.safetensors").string(), (out / "metrics.jsonl").string(), (out / "plot.png").string());
  return 0;
}

int sample_text(const std::string& checkpoint_dir, const std::string& prompt, std::int64_t length, double temperature,
                std::uint64_t seed, const std::string& device) {
  const fs::path file = fs::path(checkpoint_dir) / "model.safetensors";
  const auto meta = text_metadata(file);
  const TextModelConfig config{meta["context"], meta["layers"], meta["heads"], meta["width"]};
  oa::Engine engine = make_engine(device);
  oa::ml::Generator generator(0);
  auto model = make_text_model(config, generator, engine);
  oa::ml::load_safetensors_into(file, model->named_tensors());
  model->eval();
  oa::NoGradGuard no_grad;
  std::vector<std::int32_t> text(prompt.begin(), prompt.end());
  for (auto& c : text) c &= 0xff;
  if (text.empty()) text.push_back('\n');
  std::mt19937_64 rng(seed);
  for (std::int64_t i = 0; i < length; ++i) {
    const std::int64_t t = std::min<std::int64_t>(static_cast<std::int64_t>(text.size()), config.context);
    std::vector<std::int32_t> window(text.end() - t, text.end());
    Matrix logits = (*model)(Matrix::from_i32({1, t}, window, engine));
    std::vector<float> all = logits.to_vector();
    for (int c = 0; c < 256; ++c)
      if (!std::isfinite(all[static_cast<std::size_t>((t - 1) * 256 + c)]))
        oa::fail(oa::ErrorKind::FailedPrecondition, "{} gives non-finite logits (a diverged run?); it cannot be sampled", file.string());
    if (i == 0) fmt::print("{}", prompt);
    std::vector<double> p(256);
    double mx = -1e300;
    for (int c = 0; c < 256; ++c) mx = std::max(mx, static_cast<double>(all[static_cast<std::size_t>((t - 1) * 256 + c)]) / temperature);
    for (int c = 0; c < 256; ++c) p[c] = std::exp(all[static_cast<std::size_t>((t - 1) * 256 + c)] / temperature - mx);
    std::discrete_distribution<int> pick(p.begin(), p.end());
    const int next = pick(rng);
    text.push_back(next);
    std::fputc(next, stdout);
    std::fflush(stdout);
  }
  std::fputc('\n', stdout);
  return 0;
}

}  // namespace oa_cli
