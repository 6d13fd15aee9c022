#include "oa/ml/checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

namespace oa::ml {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian; oa assumes a little-endian host");

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::ordered_json;

// The reference implementation refuses larger headers; so does oa.
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;

struct Entry {
  std::string name;
  DType dtype = DType::F32;
  Shape shape;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

struct Header {
  std::vector<Entry> entries;  // sorted by data offset
  Metadata metadata;
  std::uint64_t data_start = 0;
};

std::uint64_t byte_size(const Shape& shape, DType dtype) {
  return static_cast<std::uint64_t>(checked_mul(shape.numel(), static_cast<std::int64_t>(size_of(dtype)), "tensor byte size"));
}

DType parse_dtype(const std::string& s, const std::string& tensor, const std::string& file, const char* op) {
  if (s == "F32") return DType::F32;
  if (s == "I32") return DType::I32;
  if (s == "F16") return DType::F16;
  if (s == "BF16") return DType::BF16;
  if (s == "BOOL") return DType::Bool;
  fail(ErrorKind::Unsupported, "{}: '{}': tensor '{}' has dtype {} (oa reads F32, I32, F16, BF16 and BOOL)", op, file, tensor, s);
}

Header read_header(std::ifstream& in, const fs::path& path, const char* op) {
  const std::string file = path.string();
  std::error_code ec;
  const std::uint64_t file_bytes = fs::file_size(path, ec);
  if (ec) fail(ErrorKind::InvalidArgument, "{}: cannot read '{}': {}", op, file, ec.message());
  if (file_bytes < 8)
    fail(ErrorKind::InvalidArgument, "{}: '{}': truncated file ({} bytes; a safetensors file starts with an 8-byte header length)", op,
         file, file_bytes);
  std::uint8_t prefix[8];
  in.read(reinterpret_cast<char*>(prefix), 8);
  std::uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | prefix[i];
  if (n > kMaxHeaderBytes)
    fail(ErrorKind::InvalidArgument, "{}: '{}': malformed header: its length {} exceeds {} bytes", op, file, n, kMaxHeaderBytes);
  if (8 + n > file_bytes)
    fail(ErrorKind::InvalidArgument, "{}: '{}': truncated file: the header needs {} bytes, the file holds {}", op, file, 8 + n,
         file_bytes);
  std::string text(n, '\0');
  in.read(text.data(), static_cast<std::streamsize>(n));
  if (!in) fail(ErrorKind::InvalidArgument, "{}: cannot read the header of '{}'", op, file);
  Json json;
  try {
    json = Json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorKind::InvalidArgument, "{}: '{}': malformed header: not valid JSON ({})", op, file, e.what());
  }
  if (!json.is_object()) fail(ErrorKind::InvalidArgument, "{}: '{}': malformed header: not a JSON object", op, file);

  Header h;
  h.data_start = 8 + n;
  for (const auto& [key, value] : json.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) fail(ErrorKind::InvalidArgument, "{}: '{}': malformed header: __metadata__ is not an object", op, file);
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string())
          fail(ErrorKind::InvalidArgument, "{}: '{}': malformed header: metadata '{}' is not a string", op, file, mk);
        h.metadata[mk] = mv.get<std::string>();
      }
      continue;
    }
    // Named capture: clang 14 cannot capture a structured binding.
    auto bad = [&, &tensor = key](const char* what) {
      fail(ErrorKind::InvalidArgument, "{}: '{}': malformed header: tensor '{}' {}", op, file, tensor, what);
    };
    if (!value.is_object()) bad("is not a JSON object");
    const auto dtype = value.find("dtype"), shape = value.find("shape"), offsets = value.find("data_offsets");
    if (dtype == value.end() || !dtype->is_string()) bad("has no dtype string");
    if (shape == value.end() || !shape->is_array()) bad("has no shape array");
    if (offsets == value.end() || !offsets->is_array() || offsets->size() != 2) bad("has no data_offsets pair");
    Entry e;
    e.name = key;
    e.dtype = parse_dtype(dtype->get<std::string>(), key, file, op);
    if (shape->size() > Shape::kMaxRank) bad("has a rank above 8");
    std::vector<std::int64_t> dims;
    for (const auto& d : *shape) {
      if (!d.is_number_unsigned()) bad("has a shape entry that is not a non-negative integer");
      dims.push_back(static_cast<std::int64_t>(std::min<std::uint64_t>(d.get<std::uint64_t>(), INT64_MAX)));
    }
    e.shape = Shape(dims);
    for (const auto& o : *offsets)
      if (!o.is_number_unsigned()) bad("has data_offsets that are not non-negative integers");
    e.begin = (*offsets)[0].get<std::uint64_t>();
    e.end = (*offsets)[1].get<std::uint64_t>();
    if (e.end < e.begin || e.end - e.begin != byte_size(e.shape, e.dtype))
      fail(ErrorKind::InvalidArgument, "{}: '{}': malformed header: tensor '{}' ({} {}) has data_offsets [{}, {}], not {} bytes", op,
           file, key, safetensors_dtype(e.dtype), e.shape, e.begin, e.end, byte_size(e.shape, e.dtype));
    h.entries.push_back(std::move(e));
  }
  std::sort(h.entries.begin(), h.entries.end(),
            [](const Entry& a, const Entry& b) { return std::tie(a.begin, a.end) < std::tie(b.begin, b.end); });
  std::uint64_t at = 0;
  for (const auto& e : h.entries) {
    if (e.begin != at)
      fail(ErrorKind::InvalidArgument, "{}: '{}': malformed header: tensor '{}' starts at data offset {}, expected {} ({})", op, file,
           e.name, e.begin, at, e.begin < at ? "overlap" : "gap");
    at = e.end;
  }
  const std::uint64_t have = file_bytes - h.data_start;
  if (have < at)
    fail(ErrorKind::InvalidArgument, "{}: '{}': truncated file: the header describes {} data bytes, the file holds {}", op, file, at,
         have);
  if (have > at)
    fail(ErrorKind::InvalidArgument, "{}: '{}': {} trailing bytes after the {} data bytes the header describes", op, file, have - at,
         at);
  return h;
}

std::ifstream open_for_reading(const fs::path& path, const char* op) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(ErrorKind::InvalidArgument, "{}: cannot open '{}': {}", op, path.string(), std::strerror(errno));
  return in;
}

std::vector<std::uint8_t> read_data(std::ifstream& in, const Header& h, const Entry& e, const fs::path& path, const char* op) {
  std::vector<std::uint8_t> bytes(e.end - e.begin);
  in.seekg(static_cast<std::streamoff>(h.data_start + e.begin));
  in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  if (!in) fail(ErrorKind::InvalidArgument, "{}: cannot read tensor '{}' from '{}'", op, e.name, path.string());
  return bytes;
}

// Writes a tensor's file bytes into m; a BOOL byte other than 0 is true (1), as Matrix::from_bool has it.
void upload(const Matrix& m, std::vector<std::uint8_t> bytes) {
  if (m.dtype() == DType::Bool) std::ranges::replace_if(bytes, [](std::uint8_t b) { return b > 1; }, std::uint8_t{1});
  if (!bytes.empty()) m.engine().write(*m.storage(), 0, bytes.data(), bytes.size());
  m.storage()->bump_version();
}

// A file descriptor that closes itself.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

void write_all(int fd, const void* data, std::size_t bytes, const fs::path& tmp, const char* op) {
  const auto* p = static_cast<const std::uint8_t*>(data);
  while (bytes > 0) {
    const ssize_t w = ::write(fd, p, bytes);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) fail(ErrorKind::InvalidArgument, "{}: cannot write '{}': {}", op, tmp.string(), std::strerror(errno));
    p += w;
    bytes -= static_cast<std::size_t>(w);
  }
}

}  // namespace

std::string_view safetensors_dtype(DType dtype) {
  switch (dtype) {
    case DType::F32: return "F32";
    case DType::I32: return "I32";
    case DType::F16: return "F16";
    case DType::BF16: return "BF16";
    case DType::Bool: return "BOOL";
  }
  return "?";
}

const Matrix& Checkpoint::at(std::string_view name) const {
  for (const auto& [n, m] : tensors)
    if (n == name) return m;
  fail(ErrorKind::InvalidArgument, "oa::ml::Checkpoint::at: no tensor named '{}'", name);
}

void save_safetensors(const fs::path& path, const NamedMatrices& tensors, const Metadata& metadata) {
  const char* op = "oa::ml::save_safetensors";
  std::set<std::string_view> seen;
  Json header = Json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::uint64_t at = 0;
  for (const auto& [name, m] : tensors) {
    if (name.empty()) fail(ErrorKind::InvalidArgument, "{}: '{}': a tensor has an empty name", op, path.string());
    if (name == "__metadata__") fail(ErrorKind::InvalidArgument, "{}: '{}': the name __metadata__ is reserved", op, path.string());
    if (!seen.insert(name).second) fail(ErrorKind::InvalidArgument, "{}: '{}': tensor '{}' is named twice", op, path.string(), name);
    if (!m.defined()) fail(ErrorKind::InvalidArgument, "{}: '{}': tensor '{}' is an undefined Matrix", op, path.string(), name);
    const std::uint64_t bytes = byte_size(m.shape(), m.dtype());
    header[name] = {{"dtype", safetensors_dtype(m.dtype())}, {"shape", m.shape().to_vector()}, {"data_offsets", {at, at + bytes}}};
    at += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data starts 8-byte aligned
  std::uint8_t prefix[8];
  for (int i = 0; i < 8; ++i) prefix[i] = static_cast<std::uint8_t>(static_cast<std::uint64_t>(text.size()) >> (8 * i));

  static std::atomic<std::uint64_t> counter{0};
  const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
  const fs::path tmp = dir / fmt::format(".{}.tmp-{}-{}", path.filename().string(), ::getpid(), counter++);
  Fd out{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)};
  if (out.fd < 0) fail(ErrorKind::InvalidArgument, "{}: cannot create '{}': {}", op, tmp.string(), std::strerror(errno));
  try {
    write_all(out.fd, prefix, 8, tmp, op);
    write_all(out.fd, text.data(), text.size(), tmp, op);
    std::vector<std::uint8_t> buffer;
    for (const auto& [name, m] : tensors) {
      buffer.resize(byte_size(m.shape(), m.dtype()));
      if (!buffer.empty()) m.engine().read(*m.storage(), 0, buffer.data(), buffer.size());
      write_all(out.fd, buffer.data(), buffer.size(), tmp, op);
    }
    if (::fsync(out.fd) != 0) fail(ErrorKind::InvalidArgument, "{}: cannot flush '{}': {}", op, tmp.string(), std::strerror(errno));
    const int fd = out.fd;
    out.fd = -1;
    if (::close(fd) != 0) fail(ErrorKind::InvalidArgument, "{}: cannot close '{}': {}", op, tmp.string(), std::strerror(errno));
    if (::rename(tmp.c_str(), path.c_str()) != 0)
      fail(ErrorKind::InvalidArgument, "{}: cannot rename '{}' to '{}': {}", op, tmp.string(), path.string(), std::strerror(errno));
  } catch (...) {
    ::unlink(tmp.c_str());
    throw;
  }
  // Make the rename itself durable.
  Fd d{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (d.fd >= 0) ::fsync(d.fd);
}

Checkpoint load_safetensors(const fs::path& path, std::optional<Engine> engine) {
  const char* op = "oa::ml::load_safetensors";
  const Engine e = oa::detail::resolve(engine);
  std::ifstream in = open_for_reading(path, op);
  const Header h = read_header(in, path, op);
  Checkpoint c;
  c.metadata = h.metadata;
  for (const auto& entry : h.entries) {
    Matrix m = oa::detail::allocate(e, entry.shape, entry.dtype);
    upload(m, read_data(in, h, entry, path, op));
    c.tensors.emplace_back(entry.name, std::move(m));
  }
  return c;
}

namespace {
NamedMatrices by_name(const std::vector<Parameter>& parameters) {
  NamedMatrices out;
  for (const auto& p : parameters) out.emplace_back(p.name(), p.value());
  return out;
}
}  // namespace

void save_parameters(const fs::path& path, const std::vector<Parameter>& parameters, const Metadata& metadata) {
  save_safetensors(path, by_name(parameters), metadata);
}

Metadata load_parameters(const fs::path& path, const std::vector<Parameter>& parameters) {
  return load_safetensors_into(path, by_name(parameters));
}

Metadata read_safetensors_metadata(const fs::path& path) {
  const char* op = "oa::ml::read_safetensors_metadata";
  std::ifstream in = open_for_reading(path, op);
  return read_header(in, path, op).metadata;
}

Metadata load_safetensors_into(const fs::path& path, const NamedMatrices& targets) {
  const char* op = "oa::ml::load_safetensors_into";
  const std::string file = path.string();
  std::map<std::string_view, const Matrix*> by_name;
  for (const auto& [name, m] : targets) {
    if (!m.defined()) fail(ErrorKind::InvalidArgument, "{}: '{}': target '{}' is an undefined Matrix", op, file, name);
    if (!by_name.emplace(name, &m).second) fail(ErrorKind::InvalidArgument, "{}: '{}': target '{}' is named twice", op, file, name);
  }
  std::ifstream in = open_for_reading(path, op);
  const Header h = read_header(in, path, op);
  std::set<std::string_view> in_file;
  for (const auto& e : h.entries) {
    in_file.insert(e.name);
    const auto it = by_name.find(e.name);
    if (it == by_name.end())
      fail(ErrorKind::InvalidArgument, "{}: '{}': extra tensor '{}' ({} {}) in the file matches no target", op, file, e.name,
           safetensors_dtype(e.dtype), e.shape);
    const Matrix& m = *it->second;
    if (!(m.shape() == e.shape) || m.dtype() != e.dtype)
      fail(ErrorKind::InvalidArgument, "{}: '{}': tensor '{}' mismatches: {} {} in the file, {} {} in the target", op, file, e.name,
           safetensors_dtype(e.dtype), e.shape, safetensors_dtype(m.dtype()), m.shape());
  }
  for (const auto& [name, m] : targets)
    if (!in_file.count(name))
      fail(ErrorKind::InvalidArgument, "{}: '{}': tensor '{}' ({} {}) is missing from the file", op, file, name,
           safetensors_dtype(m.dtype()), m.shape());
  for (const auto& e : h.entries) upload(*by_name.at(e.name), read_data(in, h, e, path, op));
  return h.metadata;
}

}  // namespace oa::ml
