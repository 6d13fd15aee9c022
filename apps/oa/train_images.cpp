// Image classification training on Fashion-MNIST: AdamW (weight decay 1e-4
// for the convnet, 0.05 for the ViT) with a per-step learning rate of linear
// warmup over the first 5% of all steps, then a cosine down to 0 (a run
// extended by --resume with a larger --epochs keeps that schedule for its old
// steps and adds a warmup-cosine cycle of its own over the added ones); cross
// entropy, per-epoch evaluation on the 10 000-image test split, metrics.jsonl,
// a checkpoint every epoch (--resume continues from it), Ctrl-C saves the step
// reached within the epoch and exits (--resume continues that epoch from that
// step: an epoch's batch order depends only on the seed and the epoch), and a
// loss/accuracy plot at the end.
#include <algorithm>
#include <cmath>
#include <csignal>
#include <filesystem>
#include <fstream>

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

struct Evaluation {
  double loss = 0, accuracy = 0;
};

// Mean loss and accuracy over a loader, accumulated on the GPU (one host read).
Evaluation evaluate(oa::ml::nn::Module& model, const data::ImageLoader& loader) {
  oa::NoGradGuard no_grad;
  model.eval();
  Matrix loss_sum, correct;
  std::int64_t count = 0;
  for (std::int64_t b = 0; b < loader.batches(); ++b) {
    auto batch = loader.batch(b);
    const auto n = batch.labels.numel();
    Matrix logits = model(batch.images);
    Matrix l = oa::ml::cross_entropy(logits, batch.labels, {.reduction = oa::ml::Reduction::Sum});
    Matrix c = oa::ml::accuracy(logits, batch.labels) * static_cast<float>(n);
    loss_sum = loss_sum.defined() ? loss_sum + l : l;
    correct = correct.defined() ? correct + c : c;
    count += n;
  }
  model.train();
  return {loss_sum.item() / static_cast<double>(count), correct.item() / static_cast<double>(count)};
}

struct RunState {
  std::int64_t epoch = 0;  // completed epochs
  // Within epoch `epoch`: the steps done, the sum of their batch-weighted
  // losses and the images they saw (all 0 at an epoch's start).
  std::int64_t step = 0, seen = 0;
  double loss_sum = 0;
  std::vector<nlohmann::json> history;
  // The position to continue from, e.g. "epoch 2 step 40" (1-based epoch,
  // steps done in it).
  std::string where() const { return fmt::format("epoch {} step {}", epoch + 1, step); }
  // The same for a checkpoint: "after epoch 2" at an epoch's end.
  std::string checkpoint() const { return step == 0 ? fmt::format("after epoch {}", epoch) : "at " + where(); }
};

// The optimisation settings besides the flags.
struct Schedule {
  double weight_decay = 0;
  std::vector<std::int64_t> cycles{0};  // the steps where a warmup-cosine cycle starts (see cycle_lr)
  std::int64_t total_steps = 0;
  // The learning rate of step `global_step` (counted over all epochs).
  float lr(double base_lr, std::int64_t global_step) const {
    return static_cast<float>(cycle_lr(cycles, total_steps, global_step, base_lr, 0.0));
  }
};

void save_run(const fs::path& dir, oa::ml::nn::Module& model, const oa::ml::optim::Optimizer& opt, const RunState& st,
              const TrainImagesArgs& args, const Schedule& schedule) {
  nlohmann::json meta = {{"epoch", st.epoch},
                         {"step", st.step},
                         {"train_loss_sum", st.loss_sum},
                         {"images_seen", st.seen},
                         {"model", args.model},
                         {"quick", args.quick},
                         {"seed", args.seed},
                         {"batch_size", args.batch_size},
                         {"lr", args.lr},
                         {"epochs", args.epochs},
                         {"weight_decay", schedule.weight_decay},
                         {"lr_schedule", "warmup_cosine"},
                         {"lr_cycles", schedule.cycles},
                         {"total_steps", schedule.total_steps}};
  save_checkpoint(dir, model.named_tensors(), {{"oa.train", meta.dump()}}, opt);
}

std::string join(const fs::path& p) { return p.string(); }

// The "oa.train" metadata of a checkpoint written by train_images.
nlohmann::json run_metadata(const fs::path& file) {
  if (!fs::exists(file)) oa::fail(oa::ErrorKind::InvalidArgument, "no checkpoint at {}", join(file));
  auto all = oa::ml::read_safetensors_metadata(file);
  auto it = all.find("oa.train");
  nlohmann::json meta = it == all.end() ? nlohmann::json() : nlohmann::json::parse(it->second, nullptr, false);
  if (!meta.is_object() || !meta.contains("epoch") || !meta["epoch"].is_number_integer() || !meta.contains("model") ||
      !meta["model"].is_string() || !meta.contains("quick") || !meta["quick"].is_boolean())
    oa::fail(oa::ErrorKind::InvalidArgument, "{} was not written by oa train (its oa.train metadata is missing or malformed)",
             join(file));
  return meta;
}

// Refuses (naming the flags) to --resume the run of checkpoint metadata
// `meta` with other --lr, --seed or --batch-size, or fewer --epochs: the batch
// order and the learning rate of every step depend on them (more --epochs
// extend the run).
void check_resume_flags(const nlohmann::json& meta, const fs::path& file, const TrainImagesArgs& args) {
  std::string had, have;
  auto compare = [&](const char* key, const char* flag, auto value) {
    using T = decltype(value);
    const bool extends = std::string_view(flag) == "--epochs";
    const bool same = meta.contains(key) && meta[key].is_number() && (extends ? meta[key].get<T>() <= value : meta[key].get<T>() == value);
    if (same) return;
    had += fmt::format(" {} {}", flag, meta.contains(key) ? meta[key].dump() : std::string("(not recorded)"));
    have += fmt::format(" {} {}", flag, value);
  };
  compare("lr", "--lr", args.lr);
  compare("seed", "--seed", args.seed);
  compare("batch_size", "--batch-size", args.batch_size);
  compare("epochs", "--epochs", args.epochs);
  if (!had.empty())
    oa::fail(oa::ErrorKind::InvalidArgument,
             "--resume: {} was trained with{}, not{}; resume it with the same flags (the batch order and the learning-rate "
             "schedule depend on them; a larger --epochs extends the run)",
             join(file), had, have);
}

// Fashion-MNIST has 10 classes; reject label files that say otherwise.
void check_labels(const data::ImageDataset& d, const fs::path& dir, const std::string& split) {
  for (auto l : d.labels)
    if (l < 0 || l >= 10)
      oa::fail(oa::ErrorKind::InvalidArgument, "--data {}: the {} labels hold {}, outside Fashion-MNIST's classes 0..9", join(dir), split, l);
}

// The fashion-mnist IDX files of `dir` (the --data flag) for `split`.
data::ImageDataset load_split(const fs::path& dir, const char* split) {
  data::ImageDataset d = about("--data " + join(dir), [&] { return data::load_fashion_mnist(split, dir); });
  const char* name = split == std::string("train") ? "training" : "test";
  if (d.count < 1) oa::fail(oa::ErrorKind::InvalidArgument, "--data {}: the {} split holds no images", join(dir), name);
  check_labels(d, dir, name);
  return d;
}

}  // namespace

int train_images(TrainImagesArgs args) {
  if (args.out.empty()) args.out = "runs/fashion-mnist-" + args.model + (args.quick ? "-quick" : "");
  const fs::path out = args.out;
  const fs::path created = prepare_run_dir(out);
  const RunDirLock lock(out);  // held until the run ends
  const RunDirCleanup cleanup(out, created);  // a run failing before its first write leaves nothing
  recover_checkpoint(out);
  std::int64_t recorded_epochs = args.epochs;  // of the run resumed
  if (args.resume) {
    const auto meta = run_metadata(out / "model.safetensors");
    if (meta["model"] != args.model || meta["quick"].get<bool>() != args.quick)
      oa::fail(oa::ErrorKind::InvalidArgument, "--resume: {} holds a {}{} run; resume it with the same --model{}", join(out),
               meta["model"].get<std::string>(), meta["quick"].get<bool>() ? " --quick" : "", meta["quick"].get<bool>() ? " and --quick" : "");
    check_resume_flags(meta, out / "model.safetensors", args);
    recorded_epochs = meta["epochs"].get<std::int64_t>();
    if (meta["epoch"].get<std::int64_t>() == recorded_epochs && args.epochs == recorded_epochs)
      oa::fail(oa::ErrorKind::InvalidArgument,
               "--resume: {} finished its --epochs {}, so there is nothing to train; pass a larger --epochs to extend the run",
               join(out / "model.safetensors"), recorded_epochs);
  } else if (has_checkpoint(out) && !args.overwrite) {
    oa::fail(oa::ErrorKind::InvalidArgument,
             "{} holds a checkpoint; pass --resume to continue that run, --overwrite to replace it, or another --out", join(out));
  }
  oa::Engine engine = make_engine(args.device);
  fmt::print("oa train fashion-mnist: model {}{} on {} — output in {}\n", args.model, args.quick ? " (quick)" : "",
             engine.device().name, join(out));

  data::ImageDataset train = load_split(args.data_dir, "train");
  data::ImageDataset test = load_split(args.data_dir, "t10k");
  data::ImageLoader train_loader(std::move(train), {.batch_size = args.batch_size, .shuffle = true, .seed = args.seed},
                                 data::kFashionMnistNormalization, engine);
  data::ImageLoader test_loader(std::move(test), {.batch_size = 500, .shuffle = false}, data::kFashionMnistNormalization, engine);

  oa::ml::Generator generator(args.seed);
  auto model = make_image_model({args.model, args.quick}, generator, engine);
  const std::int64_t steps = train_loader.batches();
  Schedule schedule{.weight_decay = args.model == "vit" ? 0.05 : 1e-4, .total_steps = args.epochs * steps};
  if (args.resume)
    schedule.cycles = lr_cycles(run_metadata(out / "model.safetensors"), recorded_epochs * steps, schedule.total_steps,
                                out / "model.safetensors");
  oa::ml::optim::AdamW optimizer(model->parameters(),
                                 {.lr = static_cast<float>(args.lr), .weight_decay = static_cast<float>(schedule.weight_decay)});
  fmt::print("model: {} parameters; {} training images in batches of {}, {} epoch(s); AdamW, weight decay {}, "
             "lr {} after {} warmup steps, cosine to 0 at step {}{}\n",
             model->parameter_count(), train_loader.dataset().count, args.batch_size, args.epochs, schedule.weight_decay, args.lr,
             (schedule.cycles.size() > 1 ? schedule.cycles[1] : schedule.total_steps) / 20,
             schedule.cycles.size() > 1 ? schedule.cycles[1] : schedule.total_steps,
             schedule.cycles.size() > 1 ? fmt::format(" (extended: a new warmup-cosine cycle from step {})", schedule.cycles.back()) : "");

  RunState st;
  if (args.resume) {
    oa::ml::load_safetensors_into(out / "model.safetensors", model->named_tensors());
    optimizer.load_state(out / "optimizer.safetensors");
    const auto meta = run_metadata(out / "model.safetensors");
    st.epoch = meta["epoch"].get<std::int64_t>();
    st.step = meta.value("step", std::int64_t{0});
    st.loss_sum = meta.value("train_loss_sum", 0.0);
    st.seen = meta.value("images_seen", std::int64_t{0});
    if (st.epoch < 0 || st.epoch > recorded_epochs || st.step < 0 || st.step > steps || (st.epoch == recorded_epochs && st.step != 0))
      oa::fail(oa::ErrorKind::InvalidArgument, "--resume: {} says epoch {} step {}, outside {} epoch(s) of {} steps",
               join(out / "model.safetensors"), st.epoch, st.step, recorded_epochs, steps);
    if (optimizer.steps() != st.epoch * steps + st.step)
      oa::fail(oa::ErrorKind::InvalidArgument,
               "--resume: {} is of optimizer step {} but {} of step {} (a save was cut short); train again without --resume",
               join(out / "optimizer.safetensors"), optimizer.steps(), join(out / "model.safetensors"), st.epoch * steps + st.step);
    st.history = read_metrics(out / "metrics.jsonl", "epoch", st.epoch, {"train_loss", "test_loss", "test_accuracy"});
    fmt::print("resumed from {} at {}\n", join(out / "model.safetensors"), st.where());
  } else if (args.overwrite) {
    remove_checkpoint(out);
  }
  // Where the run directory's checkpoint of this run is ("" for none).
  std::string saved_at = args.resume ? st.checkpoint() : std::string();
  std::ofstream metrics = rewrite_metrics(out / "metrics.jsonl", st.history);

  // A diverged run stops without saving (its weights are of no use).
  auto diverged = [&](double value) {
    oa::fail(oa::ErrorKind::FailedPrecondition, "training diverged: loss {} by {}; try a lower --lr{}", value, st.where(),
             saved_at.empty() ? std::string() : fmt::format(" (the checkpoint {} is in {})", saved_at, join(out)));
  };
  install_interrupt_handler();
  for (; st.epoch < args.epochs && !g_interrupted; ++st.epoch) {
    train_loader.set_epoch(static_cast<std::uint64_t>(st.epoch));
    Progress progress(st.step == 0 ? fmt::format("epoch {}/{}", st.epoch + 1, args.epochs)
                                   : fmt::format("epoch {}/{} from step {}", st.epoch + 1, args.epochs, st.step),
                      steps - st.step, "img");
    const auto t0 = std::chrono::steady_clock::now();
    const std::int64_t first = st.step;
    // The epoch's loss sum on the GPU (one read per epoch), continuing a resumed one.
    Matrix loss_sum;
    std::int64_t seen_here = 0;
    for (; st.step < steps && !g_interrupted; ++st.step) {
      auto batch = train_loader.batch(st.step);
      optimizer.set_lr(schedule.lr(args.lr, st.epoch * steps + st.step));
      Matrix loss = oa::ml::cross_entropy((*model)(batch.images), batch.labels);
      optimizer.zero_grad();
      oa::backward(loss);
      optimizer.step();
      {
        oa::NoGradGuard no_grad;
        Matrix weighted = loss * static_cast<float>(batch.labels.numel());
        if (!loss_sum.defined() && st.seen > 0) loss_sum = Matrix::full(weighted.shape(), static_cast<float>(st.loss_sum), engine);
        loss_sum = loss_sum.defined() ? loss_sum + weighted : weighted;
      }
      st.seen += batch.labels.numel();
      seen_here += batch.labels.numel();
      // The interrupt flag is read every step (Ctrl-C stops recording at
      // once); reading the loss syncs with the GPU, so only every 25 steps.
      if ((st.step + 1) % 25 == 0 || st.step + 1 == steps) {
        const float value = loss.item();
        if (!std::isfinite(value)) {
          ++st.step;
          diverged(value);
        }
        progress.update(st.step + 1 - first, seen_here, value);
      }
    }
    progress.finish();
    if (loss_sum.defined()) st.loss_sum = loss_sum.item();
    if (!std::isfinite(st.loss_sum)) diverged(st.loss_sum);
    if (st.step < steps) break;  // Ctrl-C
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const Evaluation ev = evaluate(*model, test_loader);
    if (!std::isfinite(ev.loss)) diverged(ev.loss);  // non-finite weights, though the batch losses were finite
    nlohmann::json row = {{"epoch", st.epoch + 1},          {"train_loss", st.loss_sum / static_cast<double>(st.seen)},
                          {"test_loss", ev.loss},          {"test_accuracy", ev.accuracy},
                          {"seconds", seconds},            {"images_per_second", static_cast<double>(seen_here) / seconds}};
    st.history.push_back(row);
    append_metrics(metrics, out / "metrics.jsonl", row);
    fmt::print("epoch {}: train loss {:.4f}, test loss {:.4f}, test accuracy {:.2f}% ({:.1f} s, {:.0f} images/s)\n", st.epoch + 1,
               row["train_loss"].get<double>(), ev.loss, 100 * ev.accuracy, seconds, row["images_per_second"].get<double>());
    RunState saved = st;
    saved.epoch = st.epoch + 1;
    saved.step = saved.seen = 0;
    saved.loss_sum = 0;
    save_run(out, *model, optimizer, saved, args, schedule);
    saved_at = saved.checkpoint();
    st.step = st.seen = 0;
    st.loss_sum = 0;
  }
  if (g_interrupted && st.epoch < args.epochs) {
    save_run(out, *model, optimizer, st, args, schedule);
    fmt::print("\ninterrupted: checkpoint saved to {}; run the same command with --resume to continue from {}\n", join(out),
               st.where());
    return 128 + g_interrupted;
  }

  std::vector<Panel> panels(2);
  panels[0].title = "loss";
  panels[0].x_label = panels[1].x_label = "epoch";
  panels[0].series = {{"train loss", {}, {}}, {"test loss", {}, {}}};
  panels[1].title = "test accuracy";
  panels[1].series = {{"test accuracy", {}, {}}};
  for (auto& h : st.history) {
    const double e = h["epoch"].get<double>();
    panels[0].series[0].x.push_back(e), panels[0].series[0].y.push_back(h["train_loss"].get<double>());
    panels[0].series[1].x.push_back(e), panels[0].series[1].y.push_back(h["test_loss"].get<double>());
    panels[1].series[0].x.push_back(e), panels[1].series[0].y.push_back(h["test_accuracy"].get<double>());
  }
  write_line_chart((out / "plot.png").string(), panels);
  const auto& last = st.history.back();
  fmt::print("done: test accuracy {:.2f}%, test loss {:.4f} after {} epoch(s); checkpoint {}, metrics {}, plot {}\n",
             100 * last["test_accuracy"].get<double>(), last["test_loss"].get<double>(), st.epoch, join(out / "model.safetensors"),
             join(out / "metrics.jsonl"), join(out / "plot.png"));
  return 0;
}

int eval_images(const std::string& checkpoint_dir, const std::string& device, const std::string& data_dir) {
  const fs::path dir = checkpoint_dir;
  const auto meta = run_metadata(dir / "model.safetensors");
  oa::Engine engine = make_engine(device);
  oa::ml::Generator generator(0);
  auto model = make_image_model({meta.at("model").get<std::string>(), meta.at("quick").get<bool>()}, generator, engine);
  oa::ml::load_safetensors_into(dir / "model.safetensors", model->named_tensors());
  for (const auto& [name, tensor] : model->named_tensors()) {
    const std::vector<float> values = tensor.to_vector();
    if (!std::all_of(values.begin(), values.end(), [](float v) { return std::isfinite(v); }))
      oa::fail(oa::ErrorKind::FailedPrecondition, "{} holds non-finite weights in {} (a diverged run?); it cannot be evaluated",
               join(dir / "model.safetensors"), name);
  }
  data::ImageDataset test = load_split(data_dir, "t10k");
  data::ImageLoader test_loader(std::move(test), {.batch_size = 500, .shuffle = false}, data::kFashionMnistNormalization, engine);
  const Evaluation ev = evaluate(*model, test_loader);
  fmt::print("{}: test accuracy {:.2f}%, test loss {:.4f} ({} images)\n", join(dir), 100 * ev.accuracy, ev.loss,
             test_loader.dataset().count);
  return 0;
}

}  // namespace oa_cli
