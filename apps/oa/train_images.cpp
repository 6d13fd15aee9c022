// `oa train fashion-mnist` and `oa eval`: image classification on
// Fashion-MNIST with AdamW (weight decay 1e-4 for the convnet, 0.05 for the
// ViT) and cross entropy, a per-step warmup-cosine learning rate down to 0,
// and after each epoch an evaluation on the test split, a metrics row and a
// checkpoint. The run protocol (--resume, --overwrite, Ctrl-C, divergence,
// the plot) is TrainingRun's. Under MPI each rank trains on its shard of every
// epoch (DistributedSampler) in batches of --batch-size, so a step sees a
// global batch of G = --batch-size x ranks images; gradients are averaged by
// oa::dist::DataParallel, and the losses and the evaluation are summed over
// the ranks.
//
// The checkpoint's task state is the epoch, the position in that epoch's
// global shuffled order (the images trained on, which depends only on the
// seed and the epoch), and the loss sum and image count of an epoch cut short
// by Ctrl-C. --resume continues from the next image of that order not trained
// on, with any number of ranks and any --batch-size: the rest of the epoch is
// sharded over the ranks of the resumed run. An epoch has S = ceil(count / G)
// steps, and the step that starts at position q of epoch e takes the learning
// rate of schedule step e x S + floor(q / G), so that a resumed run keeps to
// the schedule by epochs when G changes.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <optional>

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

struct Evaluation {
  double loss = 0, accuracy = 0;
};

// Mean loss and accuracy over a loader (this rank's shard), accumulated on the
// GPU (one host read), then summed over the ranks; under autocast to `low`
// when given (the run's --precision).
Evaluation evaluate(oa::ml::nn::Module& model, const data::ImageLoader& loader, oa::dist::Communicator& world,
                    std::optional<oa::DType> low) {
  oa::NoGradGuard no_grad;
  const oa::AutocastGuard autocast(low.value_or(oa::DType::F16), low.has_value());
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
  std::vector<double> sums = {loss_sum.item(), correct.item(), static_cast<double>(count)};
  world.all_reduce(std::span<double>(sums));
  return {sums[0] / sums[2], sums[1] / sums[2]};
}

// Loss (train and test) and test accuracy against epoch.
std::vector<Panel> image_plot_panels(const std::vector<nlohmann::json>& history) {
  std::vector<Panel> panels(2);
  panels[0].title = "loss";
  panels[0].x_label = panels[1].x_label = "epoch";
  panels[0].series = {{"train loss", {}, {}}, {"test loss", {}, {}}};
  panels[1].title = "test accuracy";
  panels[1].series = {{"test accuracy", {}, {}}};
  for (const auto& h : history) {
    const double e = h["epoch"].get<double>();
    panels[0].series[0].x.push_back(e), panels[0].series[0].y.push_back(h["train_loss"].get<double>());
    panels[0].series[1].x.push_back(e), panels[0].series[1].y.push_back(h["test_loss"].get<double>());
    panels[1].series[0].x.push_back(e), panels[1].series[0].y.push_back(h["test_accuracy"].get<double>());
  }
  return panels;
}

std::string join(const fs::path& p) { return p.string(); }

// The flags that define the model.
std::vector<RunFlag> image_model_flags(const ImageModelConfig& c) { return {{"model", "--model", c.kind}, {"quick", "--quick", c.quick}}; }

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

// The task state of a checkpoint resumed at schedule step `step` of a run of
// `steps` steps an epoch, on `count` training images, must agree with that
// step: its epoch (0-based) is step / steps, its position is within the
// epoch, its sums are those of images seen. A key an older oa did not write
// may be missing. Throws InvalidArgument naming `file` and the values.
void check_resumed_state(const nlohmann::json& state, std::int64_t step, std::int64_t steps, std::int64_t count, const fs::path& file) {
  const auto refuse = [&](const char* key, const std::string& why) {
    oa::fail(oa::ErrorKind::InvalidArgument, "--resume: {} holds state.{} {}, but {}; train again without --resume", join(file), key,
             state[key].dump(), why);
  };
  const auto integer_in = [&](const char* key, std::int64_t low, std::int64_t high) {
    return state[key].is_number_integer() && state[key].get<std::int64_t>() >= low && state[key].get<std::int64_t>() < high;
  };
  const std::int64_t epoch = step / steps;
  if (state.contains("epoch") && !integer_in("epoch", epoch, epoch + 1))
    refuse("epoch", fmt::format("it was saved at epoch {} step {} (state.epoch {})", epoch + 1, step % steps, epoch));
  if (state.contains("position") && !integer_in("position", 0, count))
    refuse("position", fmt::format("an epoch's position is an image from 0 to {}", count - 1));
  if (state.contains("images_seen") && !integer_in("images_seen", 0, count + 1))
    refuse("images_seen", fmt::format("an epoch has {} images", count));
  if (state.contains("train_loss_sum") && !(state["train_loss_sum"].is_number() && std::isfinite(state["train_loss_sum"].get<double>()) &&
                                            state["train_loss_sum"].get<double>() >= 0))
    refuse("train_loss_sum", "a sum of losses is a finite number from 0");
}

}  // namespace

int train_images(TrainImagesArgs args) {
  if (args.out.empty()) args.out = "runs/fashion-mnist-" + args.model + (args.quick ? "-quick" : "");
  const ImageModelConfig config{args.model, args.quick};
  TrainingRun run({.task = "fashion-mnist",
                    .out = args.out,
                    .resume = args.resume,
                    .overwrite = args.overwrite,
                    .model = image_model_flags(config),
                    .training = {{"lr", "--lr", args.lr}, {"seed", "--seed", args.seed}, Precision::flag(args.precision)},
                    .length = {"epochs", "--epochs", args.epochs},
                    .unit = "epoch",
                    .metrics = {"train_loss", "test_loss", "test_accuracy"},
                    .lr = args.lr,
                    .lr_floor = 0,
                    .plot = image_plot_panels});
  oa::dist::Communicator& world = run.world();
  oa::Engine engine = make_engine(args.device);
  Precision precision(args.precision, engine);
  if (run.writer())
    fmt::print("oa train fashion-mnist: model {}{}, {} on {}{} — output in {}\n", args.model, args.quick ? " (quick)" : "",
               args.precision, engine.device().name,
               world.size() > 1 ? fmt::format(" ({} MPI ranks, each on its own engine)", world.size()) : "", args.out);

  data::ImageDataset train = load_split(args.data_dir, "train");
  run.set_data_size(static_cast<std::uint64_t>(train.count), "training images of --data " + join(args.data_dir));
  data::ImageDataset test = load_split(args.data_dir, "t10k");
  const std::int64_t ranks = world.size(), rank = world.rank();
  data::ImageLoader train_loader(
      std::move(train), {.batch_size = args.batch_size, .shuffle = true, .seed = args.seed, .num_replicas = ranks, .rank = rank},
      data::kFashionMnistNormalization, engine);
  data::ImageLoader test_loader(std::move(test), {.batch_size = 500, .shuffle = false, .num_replicas = ranks, .rank = rank},
                                data::kFashionMnistNormalization, engine);

  oa::ml::Generator generator(args.seed);
  auto model = make_image_model(config, generator, engine);
  const std::int64_t steps = train_loader.batches(), global_batch = args.batch_size * ranks, count = train_loader.dataset().count;
  const double weight_decay = args.model == "vit" ? 0.05 : 1e-4;
  oa::ml::optim::AdamW optimizer(model->parameters(), {.lr = static_cast<float>(args.lr), .weight_decay = static_cast<float>(weight_decay)});
  if (run.writer())
    fmt::print("model: {} parameters; {} training images in batches of {}{}, {} epoch(s); AdamW, weight decay {}\n",
               model->parameter_count(), count, args.batch_size,
               ranks > 1 ? fmt::format(" per rank ({} per step)", global_batch) : "", args.epochs, weight_decay);
  const fs::path checkpoint = fs::path(args.out) / "model.safetensors";
  // The schedule steps of an epoch done at `position` images of its order.
  const auto steps_done = [&](std::int64_t position) { return (position + global_batch - 1) / global_batch; };
  run.start(*model, optimizer, steps, [&](const nlohmann::json& state) {
    if (!state.contains("position") || !state["position"].is_number_integer())
      oa::fail(oa::ErrorKind::InvalidArgument,
               "--resume: the checkpoint in {}, saved within an epoch by an older oa, does not record its position in the epoch; "
               "resume it with the --batch-size and number of ranks it was trained with",
               args.out);
    return steps_done(state["position"].get<std::int64_t>());
  }, [&](const nlohmann::json& state, std::int64_t first_step) {
    check_resumed_state(state, first_step, steps, count, checkpoint);
  });
  precision.restore_scaler(run.resumed_state(), checkpoint);
  oa::ml::amp::GradScaler& scaler = precision.scaler();
  const auto data_parallel = run.data_parallel(model->parameters(), model->named_buffers(), args.bucket_mb);

  // Where the run is: the epoch, the images of its order trained on, and the
  // schedule step. A checkpoint of an older oa, without the epoch and
  // position, was saved by a run of this global batch.
  const nlohmann::json& resumed = run.resumed_state();
  std::int64_t global = run.first_step(), epoch = resumed.value("epoch", global / steps);
  std::int64_t position = resumed.value("position", (global - epoch * steps) * global_batch);
  // Within the epoch: the sum of the batch-weighted losses and the images seen
  // (both 0 at an epoch's start), as the checkpoint keeps them. Under MPI,
  // rank 0 carries the resumed epoch's sums and each rank adds its own.
  std::int64_t seen = run.writer() ? resumed.value("images_seen", std::int64_t{0}) : 0;
  double loss_sum = run.writer() ? resumed.value("train_loss_sum", 0.0) : 0.0;
  auto state = [&](std::int64_t at_epoch, std::int64_t at_position) {
    return nlohmann::json{{"epoch", at_epoch}, {"position", at_position}, {"train_loss_sum", loss_sum}, {"images_seen", seen}};
  };
  StepProfile profile(engine, args.profile, run.writer(), args.out, run.total_steps() - global);
  for (; epoch < args.epochs && !run.stop_requested(); ++epoch, position = 0) {
    train_loader.set_epoch(static_cast<std::uint64_t>(epoch), position);
    const std::int64_t batches = train_loader.batches();
    std::optional<Progress> progress;
    if (run.writer())
      progress.emplace(position == 0 ? fmt::format("epoch {}/{}", epoch + 1, args.epochs)
                                     : fmt::format("epoch {}/{} from image {} of {}", epoch + 1, args.epochs, position, count),
                       batches, "img");
    const auto t0 = std::chrono::steady_clock::now();
    // The epoch's loss sum on the GPU (one read per epoch), continuing a resumed one.
    Matrix gpu_loss_sum;
    std::int64_t seen_here = 0, b = 0;
    AllReduceTally all_reduces;
    for (; b < batches && !run.stop_requested(); ++b) {
      profile.before_step();
      auto batch = train_loader.batch(b);
      optimizer.set_lr(run.lr(epoch * steps + std::min(position / global_batch, steps - 1)));
      Matrix loss;
      {
        const oa::AutocastGuard autocast = precision.autocast();
        loss = oa::ml::cross_entropy((*model)(batch.images), batch.labels);
      }
      optimizer.zero_grad();
      oa::backward(scaler.scale(loss));
      if (data_parallel) {
        data_parallel->all_reduce_gradients();
        all_reduces.add(data_parallel->stats());
      }
      scaler.step(optimizer);
      scaler.update();
      {
        oa::NoGradGuard no_grad;
        Matrix weighted = loss * static_cast<float>(batch.labels.numel());
        if (!gpu_loss_sum.defined() && seen > 0) gpu_loss_sum = Matrix::full(weighted.shape(), static_cast<float>(loss_sum), engine);
        gpu_loss_sum = gpu_loss_sum.defined() ? gpu_loss_sum + weighted : weighted;
      }
      seen += batch.labels.numel();
      seen_here += batch.labels.numel();
      position = std::min(position + global_batch, count);
      global = epoch * steps + steps_done(position);
      if (run.reads_loss(b, batches)) {
        double value = loss.item();
        world.all_reduce(std::span<double>(&value, 1), oa::dist::ReduceOp::Average);
        run.require_finite(value, "loss", global);
        if (progress) progress->update(b + 1, seen_here * ranks, static_cast<float>(value));
      }
    }
    if (progress) progress->finish();
    if (gpu_loss_sum.defined()) loss_sum = gpu_loss_sum.item();
    if (ranks > 1) {  // the epoch's sums over the ranks
      std::vector<double> sums = {loss_sum, static_cast<double>(seen), static_cast<double>(seen_here)};
      world.all_reduce(std::span<double>(sums));
      loss_sum = sums[0], seen = static_cast<std::int64_t>(sums[1]), seen_here = static_cast<std::int64_t>(sums[2]);
    }
    run.require_finite(loss_sum, "loss", global);
    if (b < batches) break;  // Ctrl-C
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    profile.pause();
    if (data_parallel) data_parallel->average_buffers();
    const Evaluation ev = evaluate(*model, test_loader, world, precision.dtype());
    profile.resume();
    run.require_finite(ev.loss, "test loss", global);  // non-finite weights, though the batch losses were finite
    const nlohmann::json row = {{"epoch", epoch + 1},   {"train_loss", loss_sum / static_cast<double>(seen)},
                                {"test_loss", ev.loss}, {"test_accuracy", ev.accuracy},
                                {"seconds", seconds},   {"images_per_second", static_cast<double>(seen_here) / seconds}};
    run.record(row);
    if (run.writer())
      fmt::print("epoch {}: train loss {:.4f}, test loss {:.4f}, test accuracy {:.2f}% ({:.1f} s, {:.0f} images/s)\n", epoch + 1,
               row["train_loss"].get<double>(), ev.loss, 100 * ev.accuracy, seconds, row["images_per_second"].get<double>());
    if (const std::string line = all_reduces.report(); run.writer() && !line.empty()) fmt::print("{}\n", line);
    seen = 0;
    loss_sum = 0;
    run.save(global, precision.with_scaler(state(epoch + 1, 0)));
  }
  profile.report();
  if (global < run.total_steps()) {
    if (data_parallel) data_parallel->average_buffers();
    return run.stop(global, precision.with_scaler(state(epoch, position)));
  }
  if (!run.writer()) return 0;
  const auto& last = run.history().back();
  return run.finish(fmt::format("test accuracy {:.2f}%, test loss {:.4f} after {} epoch(s)", 100 * last["test_accuracy"].get<double>(),
                                last["test_loss"].get<double>(), args.epochs));
}

int eval_images(const std::string& checkpoint_dir, const std::string& device, const std::string& data_dir) {
  const fs::path dir = checkpoint_dir;
  const fs::path file = dir / "model.safetensors";
  const auto run = read_run_metadata(file, "fashion-mnist", image_model_flags({}));
  const auto& meta = run["model"];
  // The run's validations were under its --precision's autocast: so is this one (a checkpoint that does not record it is fp32).
  const nlohmann::json recorded =
      run.contains("training") && run["training"].is_object() ? run["training"].value("precision", nlohmann::json("fp32")) : "fp32";
  const std::string name = recorded.is_string() ? recorded.get<std::string>() : recorded.dump();
  oa::Engine engine = make_engine(device);
  const Precision precision = about(join(file), [&] { return Precision(name, engine); });
  oa::ml::Generator generator(0);
  auto model = make_image_model({meta["model"].get<std::string>(), meta["quick"].get<bool>()}, generator, engine);
  oa::ml::load_safetensors_into(file, model->named_tensors());
  require_finite_weights(join(file), model->named_tensors(), "evaluated");
  data::ImageDataset test = load_split(data_dir, "t10k");
  data::ImageLoader test_loader(std::move(test), {.batch_size = 500, .shuffle = false}, data::kFashionMnistNormalization, engine);
  const Evaluation ev = evaluate(*model, test_loader, oa::dist::Communicator::world(), precision.dtype());
  fmt::print("{}: test accuracy {:.2f}%, test loss {:.4f} ({} images, {})\n", join(dir), 100 * ev.accuracy, ev.loss,
             test_loader.dataset().count, name);
  return 0;
}

}  // namespace oa_cli
