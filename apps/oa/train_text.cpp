// Character-level (byte) language modelling: `oa train text` and `oa sample`.
// Validation loss on the held-out last 5% of the text is reported in bits per
// character; each validation appends a metrics row and saves a checkpoint.
// The run protocol (--resume, --overwrite, Ctrl-C, divergence, the plot) is
// TrainingRun's; --resume continues exactly, since the batch and learning
// rate of a step depend only on the seed and the step (--eval-every may
// differ; another --batch-size or number of ranks draws that many windows
// from the step's generator).
// Under MPI each rank trains on its own windows of every step (TextLoader's
// sharding: rank r takes draws r x B .. r x B + B - 1 of the step's), so a
// step sees --batch-size x ranks windows, as one process with that batch;
// gradients are averaged by oa::dist::DataParallel, the losses averaged and
// the validation sums summed over the ranks; rank 0 alone prints and writes.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>
#include <random>
#include <span>

#include <nlohmann/json.hpp>

#include "models.hpp"
#include "oa/oa.hpp"
#include "plot.hpp"
#include "progress.hpp"
#include "run_dir.hpp"
#include "step_profile.hpp"
#include "train.hpp"
#include "training_run.hpp"

namespace oa_cli {
namespace {

namespace fs = std::filesystem;
using oa::Matrix;
namespace data = oa::ml::data;

// Mean cross entropy in bits per character over non-overlapping windows of the
// validation text (at most 64 batches); under MPI each rank takes every
// ranks-th batch, and the sums are added over the ranks.
double validation_bpc(oa::ml::nn::Module& model, const std::vector<std::uint8_t>& text, std::int64_t context,
                      std::int64_t batch_size, const oa::Engine& engine, oa::dist::Communicator& world, const Precision& precision) {
  oa::NoGradGuard no_grad;
  const oa::AutocastGuard autocast = precision.autocast();
  const std::int64_t windows = std::min<std::int64_t>((static_cast<std::int64_t>(text.size()) - 1) / context, 64 * batch_size);
  if (windows < 1) oa::fail(oa::ErrorKind::InvalidArgument, "the validation text is shorter than one context window");
  Matrix total;
  std::int64_t count = 0;
  for (std::int64_t w0 = world.rank() * batch_size; w0 < windows; w0 += world.size() * batch_size) {
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
  std::vector<double> sums = {total.defined() ? total.item() : 0.0, static_cast<double>(count)};
  world.all_reduce(std::span<double>(sums));
  return sums[0] / sums[1] / std::log(2.0);
}

// The flags that define the model.
std::vector<RunFlag> text_model_flags(const TextModelConfig& c) {
  return {{"context", "--context", c.context}, {"layers", "--layers", c.layers}, {"heads", "--heads", c.heads}, {"width", "--width", c.width}};
}

// Train loss (in bits per character: loss / ln 2) and validation bits per
// character against step.
std::vector<Panel> text_plot_panels(const std::vector<nlohmann::json>& history) {
  Panel panel{"bits per character", {{"train loss / ln 2", {}, {}}, {"validation", {}, {}}}, "step"};
  for (const auto& row : history) {
    const double step = row["step"].get<double>();
    panel.series[0].x.push_back(step), panel.series[0].y.push_back(row["train_loss"].get<double>() / std::log(2.0));
    panel.series[1].x.push_back(step), panel.series[1].y.push_back(row["validation_bpc"].get<double>());
  }
  return {panel};
}

}  // namespace

int train_text(const TrainTextArgs& args) {
  oa::dist::Communicator& world = oa::dist::Communicator::world();
  const std::int64_t ranks = world.size();
  const TextModelConfig config{args.context, args.layers, args.heads, args.width};
  TrainingRun run({.task = "text",
                    .out = args.out,
                    .resume = args.resume,
                    .overwrite = args.overwrite,
                    .model = text_model_flags(config),
                    .training = {{"input", "--input", args.input.empty() ? "fortunes" : args.input},
                                 {"lr", "--lr", args.lr},
                                 {"seed", "--seed", args.seed},
                                 Precision::flag(args.precision)},
                    .length = {"steps", "--steps", args.steps},
                    .unit = "step",
                    .metrics = {"train_loss", "validation_bpc"},
                    .lr = args.lr,
                    .lr_floor = args.lr / 10,
                    .plot = text_plot_panels});
  const std::string source = args.input.empty() ? "/usr/share/games/fortunes" : args.input;
  std::vector<std::uint8_t> bytes = args.input.empty()
                                        ? about("the default --input " + source, [] { return data::read_bytes(data::fortune_files()); })
                                        : about("--input " + args.input, [&] { return data::read_bytes({args.input}); });
  run.set_data_size(bytes.size(), "bytes of --input " + source);
  data::TextSplit split = data::split_text(std::move(bytes), 0.05);
  if (static_cast<std::int64_t>(split.validation.size()) < args.context + 1)
    oa::fail(oa::ErrorKind::InvalidArgument,
             "{}: the held-out last 5% ({} bytes) is shorter than one window of --context {} plus one byte; use a longer text or a "
             "smaller --context",
             source, split.validation.size(), args.context);
  oa::Engine engine = make_engine(args.device);
  Precision precision(args.precision, engine);
  if (run.writer())
    fmt::print("oa train text: {} training / {} validation bytes from {} on {}{}\n", split.train.size(), split.validation.size(),
               source, engine.device().name,
               ranks > 1 ? fmt::format(" ({} MPI ranks, each on its own engine)", ranks) : "");
  oa::ml::Generator generator(args.seed);
  auto model = make_text_model(config, generator, engine);
  oa::ml::optim::AdamW optimizer(model->parameters(), {.lr = static_cast<float>(args.lr), .weight_decay = 0.1f});
  data::TextLoader loader(split.train, args.batch_size, args.context, args.seed, engine, ranks, world.rank());
  if (run.writer())
    fmt::print("model: {} parameters ({} layers, {} heads, width {}, context {}); batches of {} windows{}; {}\n",
               model->parameter_count(), args.layers, args.heads, args.width, args.context, args.batch_size,
               ranks > 1 ? fmt::format(" per rank ({} per step)", args.batch_size * ranks) : "", args.precision);
  run.start(*model, optimizer, 1);
  precision.restore_scaler(run.resumed_state(), fs::path(args.out) / "model.safetensors");
  oa::ml::amp::GradScaler& scaler = precision.scaler();
  const auto data_parallel = run.data_parallel(model->parameters(), model->named_buffers(), args.bucket_mb);
  AllReduceTally all_reduces;

  const std::int64_t start = run.first_step();
  StepProfile profile(engine, args.profile, run.writer(), args.out, args.steps - start);
  std::optional<Progress> progress;
  if (run.writer())
    progress.emplace(start == 0 ? "train text" : fmt::format("train text from step {}", start), args.steps - start, "tok");
  const auto t0 = std::chrono::steady_clock::now();
  double bpc = 0;
  data::TextBatch batch = loader.batch(static_cast<std::uint64_t>(start));
  const std::int64_t n = batch.tokens.numel();
  Matrix loss;  // the last step's
  // --precision: autocast around the forward pass and the loss; for fp16 the
  // scaled loss's gradients are unscaled before clipping, and a step with an
  // inf or NaN gradient is skipped on the device.
  auto train_step = [&] {
    {
      const oa::AutocastGuard autocast = precision.autocast();
      Matrix logits = (*model)(batch.tokens);
      loss = oa::ml::cross_entropy(logits.reshape({n, 256}), batch.targets.reshape({n}));
    }
    optimizer.zero_grad();
    oa::backward(scaler.scale(loss));
    if (data_parallel) {
      data_parallel->all_reduce_gradients();
      all_reduces.add(data_parallel->stats());
    }
    scaler.unscale_(optimizer);
    oa::ml::optim::clip_grad_norm(model->parameters(), 1.0f);
    scaler.step(optimizer);
    scaler.update();
  };
  // With --step-graph the second step is captured once and replayed after
  // (the first, eager, creates the model's constant inputs; the batch is
  // written into the same inputs each step; AdamW reads the step's learning
  // rate from device memory).
  std::optional<oa::StepGraph> graph;
  std::int64_t step = start;
  // The last step's loss, averaged over the ranks (a host read).
  const auto mean_loss = [&] {
    double value = loss.item();
    world.all_reduce(std::span<double>(&value, 1), oa::dist::ReduceOp::Average);
    return value;
  };
  for (; step < args.steps && !run.stop_requested(); ++step) {
    profile.before_step();
    optimizer.set_lr(run.lr(step));
    if (step > start) loader.fill(static_cast<std::uint64_t>(step), batch);
    if (!args.step_graph || step == start) {
      train_step();
    } else {
      if (!graph) graph.emplace(engine, train_step);
      graph->replay(engine);
    }
    if (run.reads_loss(step, args.steps)) {
      const double value = mean_loss();
      run.require_finite(value, "loss", step + 1);
      if (progress) progress->update(step + 1 - start, (step + 1 - start) * n * ranks, static_cast<float>(value));
    }
    if ((step + 1) % args.eval_every == 0 || step + 1 == args.steps) {
      if (progress) progress->finish();
      profile.pause();
      if (data_parallel) data_parallel->average_buffers();
      bpc = validation_bpc(*model, split.validation, args.context, args.batch_size, engine, world, precision);
      profile.resume();
      run.require_finite(bpc, "validation bits per character", step + 1);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const nlohmann::json row = {{"step", step + 1}, {"train_loss", mean_loss()}, {"validation_bpc", bpc},
                                  {"tokens_per_second", static_cast<double>((step + 1 - start) * n * ranks) / seconds}};
      run.record(row);
      const std::string all_reduced = all_reduces.report();
      if (run.writer())
        fmt::print("step {}: validation {:.3f} bits per character ({:.0f} tokens/s){}\n", step + 1, bpc,
                   row["tokens_per_second"].get<double>(), all_reduced.empty() ? "" : "; " + all_reduced);
      run.save(step + 1, precision.with_scaler(nlohmann::json::object()));
    }
  }
  if (step < args.steps) {  // Ctrl-C or SIGTERM
    if (progress) progress->finish();
    profile.report();
    if (data_parallel) data_parallel->average_buffers();
    return run.stop(step, precision.with_scaler(nlohmann::json::object()));
  }
  profile.report();
  return run.finish(fmt::format("validation {:.3f} bits per character after {} steps", bpc, args.steps));
}

int sample_text(const std::string& checkpoint_dir, const std::string& prompt, std::int64_t length, double temperature,
                std::uint64_t seed, const std::string& device) {
  const fs::path file = fs::path(checkpoint_dir) / "model.safetensors";
  const auto meta = read_run_metadata(file, "text", text_model_flags({}))["model"];
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
    const std::span<const float> row(all.data() + (t - 1) * 256, 256);
    if (!std::ranges::all_of(row, [](float v) { return std::isfinite(v); }))
      oa::fail(oa::ErrorKind::FailedPrecondition, "{} gives non-finite logits (a diverged run?); it cannot be sampled", file.string());
    if (i == 0) fmt::print("{}", prompt);
    int next = 0;
    if (temperature == 0) {  // greedy: the first most likely character, as torch.argmax
      next = static_cast<int>(std::ranges::max_element(row) - row.begin());
    } else {
      const double mx = *std::ranges::max_element(row);
      std::vector<double> p(256);
      for (int c = 0; c < 256; ++c) p[c] = std::exp((row[c] - mx) / temperature);
      std::discrete_distribution<int> pick(p.begin(), p.end());
      next = pick(rng);
    }
    text.push_back(next);
    std::fputc(next, stdout);
    std::fflush(stdout);
  }
  std::fputc('\n', stdout);
  return 0;
}

}  // namespace oa_cli
