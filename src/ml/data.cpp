#include "oa/ml/data.hpp"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <string>

#include "oa/ml/generator.hpp"

namespace oa::ml::data {

namespace {

namespace fs = std::filesystem;

// The whole file as bytes; throws InvalidArgument naming `op` and the file.
std::vector<std::uint8_t> read_file(const fs::path& path, const char* op) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) fail(ErrorKind::InvalidArgument, "{}: '{}' is a directory, not a file", op, path.string());
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorKind::InvalidArgument, "{}: cannot open '{}': {}", op, path.string(), std::strerror(errno));
  std::vector<std::uint8_t> bytes;
  in.seekg(0, std::ios::end);
  const auto size = in.tellg();
  if (size < 0) fail(ErrorKind::InvalidArgument, "{}: cannot read '{}'", op, path.string());
  bytes.resize(static_cast<std::size_t>(size));
  in.seekg(0, std::ios::beg);
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!in) fail(ErrorKind::InvalidArgument, "{}: cannot read '{}' ({} bytes expected)", op, path.string(), bytes.size());
  return bytes;
}

// Inflates a gzip file (RFC 1952; several members are concatenated, as gunzip does).
std::vector<std::uint8_t> gunzip(const std::vector<std::uint8_t>& packed, const fs::path& path, const char* op) {
  z_stream zs{};
  if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
    fail(ErrorKind::ResourceExhausted, "{}: '{}': zlib could not start inflating", op, path.string());
  std::vector<std::uint8_t> out;
  // The trailer's ISIZE (length mod 2^32) is a first guess at the size, bounded
  // by deflate's largest expansion (1032:1) so that a forged trailer on a tiny
  // file reserves no more than the file could hold.
  std::uint32_t isize = 0;
  if (packed.size() >= 18) std::memcpy(&isize, packed.data() + packed.size() - 4, 4);  // little-endian host
  out.reserve(std::min({std::size_t{isize}, packed.size() * 1032, std::size_t{1} << 30}));
  std::size_t consumed = 0;
  bool ended = false;
  constexpr std::size_t kStep = std::size_t{1} << 20;
  while (consumed < packed.size()) {
    if (ended) {  // another member follows
      if (inflateReset(&zs) != Z_OK) break;
      ended = false;
    }
    zs.next_in = const_cast<Bytef*>(packed.data() + consumed);
    zs.avail_in = static_cast<uInt>(std::min<std::size_t>(packed.size() - consumed, UINT32_MAX));
    const std::size_t at = out.size();
    out.resize(at + kStep);
    zs.next_out = out.data() + at;
    zs.avail_out = static_cast<uInt>(kStep);
    const uInt offered = zs.avail_in;
    const int rc = inflate(&zs, Z_NO_FLUSH);
    out.resize(at + (kStep - zs.avail_out));
    consumed += offered - zs.avail_in;
    if (rc == Z_STREAM_END) {
      ended = true;
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      const std::string msg = zs.msg ? zs.msg : zError(rc);
      inflateEnd(&zs);
      fail(ErrorKind::InvalidArgument, "{}: '{}': gzip error: {}", op, path.string(), msg);
    }
  }
  inflateEnd(&zs);
  if (!ended)
    fail(ErrorKind::InvalidArgument, "{}: '{}': gzip stream truncated (its {} compressed bytes end before the stream does)", op,
         path.string(), packed.size());
  return out;
}

std::uint32_t big_endian_u32(const std::uint8_t* p) {
  return (std::uint32_t{p[0]} << 24) | (std::uint32_t{p[1]} << 16) | (std::uint32_t{p[2]} << 8) | std::uint32_t{p[3]};
}

std::string dims_string(const std::vector<std::int64_t>& dims) { return Shape(dims).to_string(); }

}  // namespace

IdxArray read_idx(const fs::path& path) {
  const char* op = "oa::ml::data::read_idx";
  std::vector<std::uint8_t> bytes = read_file(path, op);
  if (bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) bytes = gunzip(bytes, path, op);
  const auto file = path.string();
  if (bytes.size() < 4)
    fail(ErrorKind::InvalidArgument, "{}: '{}': truncated header ({} bytes; an IDX file starts with a 4-byte magic)", op, file,
         bytes.size());
  if (bytes[0] != 0 || bytes[1] != 0)
    fail(ErrorKind::InvalidArgument, "{}: '{}': bad magic {:02x} {:02x} {:02x} {:02x} (an IDX file starts with 00 00 <type> <rank>)",
         op, file, bytes[0], bytes[1], bytes[2], bytes[3]);
  if (bytes[2] != 0x08)
    fail(ErrorKind::InvalidArgument, "{}: '{}': unsupported element type 0x{:02x} (only unsigned bytes, 0x08, are read)", op, file,
         bytes[2]);
  const std::size_t rank = bytes[3];
  if (rank == 0 || rank > Shape::kMaxRank)
    fail(ErrorKind::InvalidArgument, "{}: '{}': bad magic: rank {} (1 to {} supported)", op, file, rank, Shape::kMaxRank);
  const std::size_t header = 4 + 4 * rank;
  if (bytes.size() < header)
    fail(ErrorKind::InvalidArgument, "{}: '{}': truncated header ({} bytes; rank {} needs {})", op, file, bytes.size(), rank, header);
  IdxArray out;
  std::int64_t count = 1;
  for (std::size_t i = 0; i < rank; ++i) {
    out.dims.push_back(big_endian_u32(bytes.data() + 4 + 4 * i));
    count = checked_mul(count, out.dims.back(), "IDX element count");
  }
  const auto have = static_cast<std::int64_t>(bytes.size() - header);
  if (have < count)
    fail(ErrorKind::InvalidArgument, "{}: '{}': truncated data: dimensions {} need {} bytes after the header, found {}", op, file,
         dims_string(out.dims), count, have);
  if (have > count)
    fail(ErrorKind::InvalidArgument, "{}: '{}': {} trailing bytes after the data of dimensions {}", op, file, have - count,
         dims_string(out.dims));
  out.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end());
  return out;
}

ImageDataset load_idx_images(const fs::path& images, const fs::path& labels) {
  const char* op = "oa::ml::data::load_idx_images";
  IdxArray x = read_idx(images);
  IdxArray y = read_idx(labels);
  if (x.dims.size() != 3)
    fail(ErrorKind::InvalidArgument, "{}: '{}': dimension mismatch: images must be rank 3 [N, H, W], found {}", op, images.string(),
         dims_string(x.dims));
  if (y.dims.size() != 1)
    fail(ErrorKind::InvalidArgument, "{}: '{}': dimension mismatch: labels must be rank 1 [N], found {}", op, labels.string(),
         dims_string(y.dims));
  if (x.dims[0] != y.dims[0])
    fail(ErrorKind::InvalidArgument, "{}: dimension mismatch: '{}' holds {} images but '{}' holds {} labels", op, images.string(),
         x.dims[0], labels.string(), y.dims[0]);
  ImageDataset d;
  d.count = x.dims[0];
  d.height = x.dims[1];
  d.width = x.dims[2];
  d.pixels = std::move(x.data);
  d.labels.assign(y.data.begin(), y.data.end());
  for (auto l : d.labels) d.classes = std::max(d.classes, l + 1);
  return d;
}

ImageDataset load_fashion_mnist(std::string_view split, const fs::path& dir) {
  if (split != "train" && split != "t10k")
    fail(ErrorKind::InvalidArgument, "oa::ml::data::load_fashion_mnist: split '{}' is neither 'train' nor 't10k'", split);
  const std::string s(split);
  return load_idx_images(dir / (s + "-images-idx3-ubyte.gz"), dir / (s + "-labels-idx1-ubyte.gz"));
}

Normalization compute_normalization(const ImageDataset& data) {
  const char* op = "oa::ml::data::compute_normalization";
  if (data.pixels.empty()) fail(ErrorKind::InvalidArgument, "{}: the dataset holds no pixels", op);
  std::uint64_t histogram[256] = {};
  for (auto p : data.pixels) ++histogram[p];
  const double n = static_cast<double>(data.pixels.size());
  double mean = 0;
  for (int v = 0; v < 256; ++v) mean += static_cast<double>(histogram[v]) * (v / 255.0);
  mean /= n;
  double var = 0;
  for (int v = 0; v < 256; ++v) var += static_cast<double>(histogram[v]) * (v / 255.0 - mean) * (v / 255.0 - mean);
  var /= n;
  if (!(var > 0)) fail(ErrorKind::InvalidArgument, "{}: every pixel has the same value (std 0)", op);
  return {static_cast<float>(mean), static_cast<float>(std::sqrt(var))};
}

namespace {

// What image_batch and ImageLoader refuse in a dataset and a normalization.
void check_images(const ImageDataset& data, const Normalization& normalization, const char* op) {
  if (static_cast<std::int64_t>(data.labels.size()) != data.count ||
      static_cast<std::int64_t>(data.pixels.size()) !=
          checked_mul(checked_mul(data.count, data.height, "image bytes"), data.width, "image bytes"))
    fail(ErrorKind::InvalidArgument, "{}: dimension mismatch: {} pixels and {} labels for {} images of {} x {}", op,
         data.pixels.size(), data.labels.size(), data.count, data.height, data.width);
  if (!std::isfinite(normalization.mean) || !std::isfinite(normalization.std) || !(normalization.std > 0))
    fail(ErrorKind::InvalidArgument, "{}: normalization mean {} / std {} must be finite with std > 0", op, normalization.mean,
         normalization.std);
}

}  // namespace

ImageBatch image_batch(const ImageDataset& data, std::span<const std::int64_t> indices, Normalization normalization,
                       std::optional<Engine> engine) {
  const char* op = "oa::ml::data::image_batch";
  check_images(data, normalization, op);
  if (indices.empty()) fail(ErrorKind::InvalidArgument, "{}: no indices given", op);
  for (const std::int64_t s : indices)
    if (s < 0 || s >= data.count) fail(ErrorKind::InvalidArgument, "{}: index {} is outside [0, {})", op, s, data.count);
  const auto b = static_cast<std::int64_t>(indices.size());
  const std::int64_t plane = data.height * data.width;
  // A lookup table from byte to normalised value keeps the conversion exact and cheap.
  float table[256];
  for (int v = 0; v < 256; ++v)
    table[v] = static_cast<float>((v / 255.0 - normalization.mean) / static_cast<double>(normalization.std));
  std::vector<float> pixels(static_cast<std::size_t>(checked_mul(b, plane, "batch pixels")));
  std::vector<std::int32_t> labels(static_cast<std::size_t>(b));
  for (std::int64_t i = 0; i < b; ++i) {
    const std::int64_t s = indices[static_cast<std::size_t>(i)];
    const std::uint8_t* src = data.pixels.data() + s * plane;
    float* dst = pixels.data() + i * plane;
    for (std::int64_t k = 0; k < plane; ++k) dst[k] = table[src[k]];
    labels[static_cast<std::size_t>(i)] = data.labels[static_cast<std::size_t>(s)];
  }
  const Engine e = oa::detail::resolve(engine);
  return {Matrix::from_vector(Shape{b, 1, data.height, data.width}, pixels, e), Matrix::from_i32(Shape{b}, labels, e)};
}

std::vector<std::int64_t> epoch_order(std::int64_t count, bool shuffle, std::uint64_t seed, std::uint64_t epoch) {
  if (count < 0) fail(ErrorKind::InvalidArgument, "oa::ml::data::epoch_order: count {} is negative", count);
  std::vector<std::int64_t> order(static_cast<std::size_t>(count));
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<std::int64_t>(i);
  if (shuffle) {
    Generator g = Generator(seed).fork(epoch);
    for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[g.next_below(i)]);
  }
  return order;
}

ImageLoader::ImageLoader(ImageDataset data, LoaderOptions options, Normalization normalization, std::optional<Engine> engine)
    : data_(std::move(data)), options_(options), normalization_(normalization), engine_(oa::detail::resolve(engine)) {
  const char* op = "oa::ml::data::ImageLoader";
  if (data_.count < 1) fail(ErrorKind::InvalidArgument, "{}: the dataset is empty", op);
  check_images(data_, normalization_, op);
  if (options_.batch_size < 1) fail(ErrorKind::InvalidArgument, "{}: batch_size {} must be at least 1", op, options_.batch_size);
  if (options_.num_replicas < 1 || options_.rank < 0 || options_.rank >= options_.num_replicas)
    fail(ErrorKind::InvalidArgument, "{}: rank {} is outside [0, num_replicas = {})", op, options_.rank, options_.num_replicas);
  set_epoch(0);
}

std::int64_t ImageLoader::batches() const {
  const auto b = options_.batch_size, n = static_cast<std::int64_t>(order_.size());
  return options_.drop_last ? n / b : (n + b - 1) / b;
}

void ImageLoader::set_epoch(std::uint64_t epoch, std::int64_t start) {
  if (start < 0 || start >= data_.count)
    fail(ErrorKind::InvalidArgument, "oa::ml::data::ImageLoader::set_epoch: start {} outside [0, {}) (the dataset's images)", start,
         data_.count);
  epoch_ = epoch;
  const std::vector<std::int64_t> all = epoch_order(data_.count, options_.shuffle, options_.seed, epoch);
  const auto rest = static_cast<std::size_t>(data_.count - start), replicas = static_cast<std::size_t>(options_.num_replicas);
  const std::size_t shard = (rest + replicas - 1) / replicas;
  order_.resize(shard);
  for (std::size_t j = 0; j < shard; ++j)
    order_[j] = all[static_cast<std::size_t>(start) + (static_cast<std::size_t>(options_.rank) + j * replicas) % rest];
}

ImageBatch ImageLoader::batch(std::int64_t index) const {
  if (index < 0 || index >= batches())
    fail(ErrorKind::InvalidArgument, "oa::ml::data::ImageLoader::batch: index {} outside [0, {}) (batch_size {}, {} images)", index,
         batches(), options_.batch_size, data_.count);
  const auto first = static_cast<std::size_t>(index * options_.batch_size);
  const auto b = std::min(static_cast<std::size_t>(options_.batch_size), order_.size() - first);
  return image_batch(data_, std::span<const std::int64_t>(order_).subspan(first, b), normalization_, engine_);
}

std::vector<std::uint8_t> read_bytes(const std::vector<fs::path>& paths) {
  if (paths.empty()) fail(ErrorKind::InvalidArgument, "oa::ml::data::read_bytes: no files given");
  std::vector<std::uint8_t> out;
  for (const auto& p : paths) {
    auto bytes = read_file(p, "oa::ml::data::read_bytes");
    out.insert(out.end(), bytes.begin(), bytes.end());
  }
  return out;
}

std::vector<fs::path> fortune_files(const fs::path& dir) {
  const char* op = "oa::ml::data::fortune_files";
  std::error_code ec;
  std::vector<fs::path> out;
  fs::directory_iterator it(dir, ec);
  if (ec) fail(ErrorKind::InvalidArgument, "{}: cannot list '{}': {}", op, dir.string(), ec.message());
  for (const auto& entry : it) {
    if (entry.is_symlink(ec) || !entry.is_regular_file(ec) || entry.path().has_extension()) continue;
    out.push_back(entry.path());
  }
  if (out.empty()) fail(ErrorKind::InvalidArgument, "{}: '{}' holds no fortune text files", op, dir.string());
  std::sort(out.begin(), out.end());
  return out;
}

TextSplit split_text(std::vector<std::uint8_t> bytes, double validation_fraction) {
  if (!(validation_fraction >= 0 && validation_fraction < 1))
    fail(ErrorKind::InvalidArgument, "oa::ml::data::split_text: validation_fraction {} is outside [0, 1)", validation_fraction);
  const auto held = static_cast<std::size_t>(std::floor(static_cast<double>(bytes.size()) * validation_fraction));
  TextSplit s;
  s.validation.assign(bytes.end() - static_cast<std::ptrdiff_t>(held), bytes.end());
  bytes.resize(bytes.size() - held);
  s.train = std::move(bytes);
  return s;
}

TextLoader::TextLoader(std::vector<std::uint8_t> text, std::int64_t batch_size, std::int64_t context, std::uint64_t seed,
                       std::optional<Engine> engine, std::int64_t num_replicas, std::int64_t rank)
    : text_(std::move(text)),
      batch_size_(batch_size),
      context_(context),
      seed_(seed),
      engine_(oa::detail::resolve(engine)),
      num_replicas_(num_replicas),
      rank_(rank) {
  const char* op = "oa::ml::data::TextLoader";
  if (batch_size_ < 1 || context_ < 1)
    fail(ErrorKind::InvalidArgument, "{}: batch_size {} and context {} must be at least 1", op, batch_size_, context_);
  if (size() < context_ + 1)
    fail(ErrorKind::InvalidArgument, "{}: a text of {} bytes is shorter than one window of context {} + 1", op, size(), context_);
  if (num_replicas_ < 1 || rank_ < 0 || rank_ >= num_replicas_)
    fail(ErrorKind::InvalidArgument, "{}: rank {} is outside [0, num_replicas = {})", op, rank_, num_replicas_);
}

TextBatch TextLoader::batch(std::uint64_t step) const {
  const Shape shape{batch_size_, context_};
  TextBatch b{detail::allocate(engine_, shape, DType::I32), detail::allocate(engine_, shape, DType::I32)};
  fill(step, b);
  return b;
}

void TextLoader::fill(std::uint64_t step, const TextBatch& into) const {
  const Shape shape{batch_size_, context_};
  for (const auto& [m, name] : {std::pair{&into.tokens, "tokens"}, std::pair{&into.targets, "targets"}})
    if (!m->defined() || m->dtype() != DType::I32 || m->shape() != shape)
      fail(ErrorKind::InvalidArgument, "TextLoader::fill: {} must be an I32 Matrix of shape {}, got {}", name, shape,
           m->defined() ? fmt::format("{} {}", to_string(m->dtype()), m->shape()) : std::string("an undefined Matrix"));
  Generator g = Generator(seed_).fork(step);
  const auto windows = static_cast<std::uint64_t>(size() - context_);  // starts 0 .. n - T - 1
  const auto n = static_cast<std::size_t>(checked_mul(batch_size_, context_, "TextLoader batch elements"));
  std::vector<std::int32_t> tokens(n), targets(n);
  for (std::int64_t skipped = 0; skipped < rank_ * batch_size_; ++skipped) g.next_below(windows);  // the lower ranks' draws
  for (std::int64_t b = 0; b < batch_size_; ++b) {
    const auto start = static_cast<std::size_t>(g.next_below(windows));
    for (std::int64_t t = 0; t < context_; ++t) {
      const auto at = static_cast<std::size_t>(b * context_ + t);
      tokens[at] = text_[start + static_cast<std::size_t>(t)];
      targets[at] = text_[start + static_cast<std::size_t>(t) + 1];
    }
  }
  into.tokens.write_i32(tokens);
  into.targets.write_i32(targets);
}

}  // namespace oa::ml::data
