#pragma once
// Data loading: IDX files (the MNIST family), a byte-level text corpus, and
// mini-batch loaders that assemble a whole batch on the host and upload it as
// one Matrix per field (one transfer per batch, never one per sample).
//
// Randomness (shuffling, text windows) comes from oa::ml::Generator, so a seed
// gives the same batches on every platform.
//
// Errors: a file that cannot be read or is malformed throws oa::Error
// (InvalidArgument) whose message names the function, the file and the fault
// (cannot open, gzip error, bad magic, unsupported element type, truncated
// data, trailing bytes, dimension mismatch).
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "oa/matrix/matrix.hpp"

namespace oa::ml::data {

// ── IDX files ────────────────────────────────────────────────────────────────

// An IDX array (LeCun & Cortes, the MNIST database file format): a magic word
// 00 00 TT RR (TT = element type, RR = rank), RR big-endian u32 extents, then
// the elements in row-major order.
struct IdxArray {
  std::vector<std::int64_t> dims;
  std::vector<std::uint8_t> data;  // product(dims) bytes
};

// Reads an IDX file of unsigned bytes (type 0x08, as every MNIST-family file
// uses), gzip-compressed (recognised by the gzip magic 1f 8b, whatever the
// file name) or raw. The file must hold exactly the header and the data.
// Throws InvalidArgument naming the file: cannot open, gzip error, gzip
// stream truncated, bad magic, unsupported element type, rank 0, truncated
// header or data, trailing bytes.
IdxArray read_idx(const std::filesystem::path& path);

// Images with one label each, as the MNIST family stores them.
struct ImageDataset {
  std::int64_t count = 0;
  std::int64_t height = 0;
  std::int64_t width = 0;
  std::vector<std::uint8_t> pixels;  // [count, height, width], 0..255
  std::vector<std::int32_t> labels;  // [count]
  std::int32_t classes = 0;          // 1 + the largest label
};

// Reads an images file (rank 3: [N, H, W]) and a labels file (rank 1: [N]).
// Throws InvalidArgument for anything read_idx rejects, and on a dimension
// mismatch (wrong rank, or image and label counts that differ), naming the file.
ImageDataset load_idx_images(const std::filesystem::path& images, const std::filesystem::path& labels);

// Where Debian's dataset-fashion-mnist package installs Fashion-MNIST
// (Xiao, Rasul & Vollgraf 2017).
inline const std::filesystem::path kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// Fashion-MNIST split "train" (60000 images) or "t10k" (10000): reads
// <dir>/<split>-images-idx3-ubyte.gz and <dir>/<split>-labels-idx1-ubyte.gz.
// Throws InvalidArgument for another split name, or as load_idx_images.
ImageDataset load_fashion_mnist(std::string_view split, const std::filesystem::path& dir = kFashionMnistDir);

// ── Mini-batch loading of images ─────────────────────────────────────────────

// Pixels become (p / 255 - mean) / std (torchvision's ToTensor then Normalize).
struct Normalization {
  float mean = 0.0f;
  float std = 1.0f;
};
// The usual Fashion-MNIST training-set statistics.
inline constexpr Normalization kFashionMnistNormalization{0.2860f, 0.3530f};
// Mean and (population) standard deviation of p / 255 over every pixel of
// `data`, computed in f64. Throws InvalidArgument for an empty dataset or
// constant images (std 0).
Normalization compute_normalization(const ImageDataset& data);

struct LoaderOptions {
  std::int64_t batch_size = 64;
  bool shuffle = true;     // a fresh permutation per epoch
  std::uint64_t seed = 0;  // the shuffling seed
  bool drop_last = false;  // drop a final partial batch
  // Sharding for data-parallel training (torch's DistributedSampler): each
  // epoch's order is padded by wrapping around to a multiple of num_replicas,
  // and this loader serves its positions rank, rank + num_replicas, ... So the
  // replicas' batch k together are the single-process batch k of
  // num_replicas x batch_size samples, and every epoch they see disjoint parts.
  std::int64_t num_replicas = 1;
  std::int64_t rank = 0;
};

struct ImageBatch {
  Matrix images;  // F32 [B, 1, H, W] (NCHW), normalised
  Matrix labels;  // I32 [B]
};

// The samples `indices` of `data`, in that order, normalised and uploaded as
// one images and one labels Matrix (ImageLoader's batches; oa.data's
// ImageDataset). Throws InvalidArgument for no indices, an index outside
// [0, count), a dataset whose pixel or label count does not match its
// dimensions, or a normalization std <= 0 or not finite.
ImageBatch image_batch(const ImageDataset& data, std::span<const std::int64_t> indices, Normalization normalization = {},
                       std::optional<Engine> engine = {});

// The sample order of epoch `epoch` over `count` samples: 0 .. count - 1
// without shuffling, otherwise a Fisher-Yates permutation drawn from
// Generator(seed).fork(epoch) (ImageLoader's order, and oa.data.DataLoader's
// for any dataset). Throws InvalidArgument for count < 0.
std::vector<std::int64_t> epoch_order(std::int64_t count, bool shuffle, std::uint64_t seed, std::uint64_t epoch);

// Deterministic mini-batches over an ImageDataset. The order for epoch e is
// epoch_order(count, shuffle, seed, e) (then sharded); so (seed, epoch, index)
// fixes a batch.
class ImageLoader {
 public:
  // Throws InvalidArgument for an empty dataset, batch_size < 1, std <= 0, a
  // non-finite mean / std, num_replicas < 1 or rank outside [0, num_replicas).
  ImageLoader(ImageDataset data, LoaderOptions options, Normalization normalization = {}, std::optional<Engine> engine = {});

  // Batches per epoch: ceil(n / B), or floor(n / B) with drop_last, for the
  // n = ceil(count / num_replicas) samples of this loader's shard.
  std::int64_t batches() const;
  // Selects epoch `epoch`'s sample order (epoch 0 is selected at construction)
  // from position `start` of that epoch's whole order on: the rest of the
  // epoch, count - start samples, sharded over the replicas as above (padded
  // by wrapping around within the rest). A run resumed with another number of
  // replicas continues an epoch from the first sample it had not trained on.
  // Throws InvalidArgument unless 0 <= start < count.
  void set_epoch(std::uint64_t epoch, std::int64_t start = 0);
  std::uint64_t epoch() const { return epoch_; }
  // Batch `index` of the current epoch: B samples (fewer for a final partial
  // batch), uploaded as one images and one labels Matrix. Throws
  // InvalidArgument for an index outside [0, batches()).
  ImageBatch batch(std::int64_t index) const;

  const ImageDataset& dataset() const { return data_; }
  const std::vector<std::int64_t>& order() const { return order_; }

 private:
  ImageDataset data_;
  LoaderOptions options_;
  Normalization normalization_;
  Engine engine_;
  std::uint64_t epoch_ = 0;
  std::vector<std::int64_t> order_;
};

// ── Byte-level text ──────────────────────────────────────────────────────────

// The concatenated bytes of `paths`, in order. Throws InvalidArgument naming a
// file that cannot be read (or is a directory), or when `paths` is empty.
std::vector<std::uint8_t> read_bytes(const std::vector<std::filesystem::path>& paths);

// The text databases of a fortune directory (default: Debian's fortunes
// package): its regular files without an extension, sorted by name (the .dat
// index files and .u8 links are left out). Throws InvalidArgument when the
// directory cannot be listed or holds none.
std::vector<std::filesystem::path> fortune_files(const std::filesystem::path& dir = "/usr/share/games/fortunes");

struct TextSplit {
  std::vector<std::uint8_t> train;
  std::vector<std::uint8_t> validation;  // the last floor(n * fraction) bytes
};
// Splits a corpus, holding out its tail for validation (default 5%). Throws
// InvalidArgument unless 0 <= validation_fraction < 1.
TextSplit split_text(std::vector<std::uint8_t> bytes, double validation_fraction = 0.05);

struct TextBatch {
  Matrix tokens;   // I32 [B, T], byte values 0..255
  Matrix targets;  // I32 [B, T]: the next byte after each token
};

// Random context windows over a byte corpus (vocabulary 256). Batch `step`
// takes B windows of T + 1 bytes whose starts are uniform on [0, n - T - 1],
// drawn from Generator(seed).fork(step): tokens are the first T bytes,
// targets the last T. Sharded for data-parallel training (num_replicas > 1),
// step `step` draws num_replicas x B starts and replica `rank` takes draws
// rank x B .. rank x B + B - 1: the replicas' batches together are the
// single-loader batch of num_replicas x B windows.
class TextLoader {
 public:
  static constexpr std::int32_t kVocabulary = 256;
  // Throws InvalidArgument for batch_size < 1, context < 1, a text shorter
  // than context + 1 bytes, num_replicas < 1 or rank outside [0, num_replicas).
  TextLoader(std::vector<std::uint8_t> text, std::int64_t batch_size, std::int64_t context, std::uint64_t seed,
             std::optional<Engine> engine = {}, std::int64_t num_replicas = 1, std::int64_t rank = 0);

  // The batch for `step` (a pure function of seed and step), uploaded as one
  // tokens and one targets Matrix.
  TextBatch batch(std::uint64_t step) const;
  // Writes the batch for `step` into `into`'s Matrices (as a StepGraph's
  // inputs need): I32 [batch_size, context] each, else InvalidArgument.
  void fill(std::uint64_t step, const TextBatch& into) const;

  std::int64_t size() const { return static_cast<std::int64_t>(text_.size()); }
  std::int64_t batch_size() const { return batch_size_; }
  std::int64_t context() const { return context_; }

 private:
  std::vector<std::uint8_t> text_;
  std::int64_t batch_size_;
  std::int64_t context_;
  std::uint64_t seed_;
  Engine engine_;
  std::int64_t num_replicas_, rank_;
};

}  // namespace oa::ml::data
