// oa.data's native half (the submodule oa._oa.data) over oa/ml/data.hpp: the
// IDX and text readers, the epoch order and image batches of `oa train
// fashion-mnist`, and the random text windows of `oa train text`.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "bindings.hpp"

namespace oa::python {
namespace {

namespace data = oa::ml::data;
using OptEngine = std::optional<Engine>;

// A read-only NumPy view of `values` shaped `dims` (row-major), keeping `owner` alive.
template <typename T>
py::array view(const T* values, const std::vector<py::ssize_t>& dims, py::handle owner) {
  py::array out(py::dtype::of<T>(), dims, {}, values, owner);
  out.attr("setflags")(py::arg("write") = false);
  return out;
}

std::vector<std::uint8_t> bytes_of(const py::bytes& b) {
  const std::string s = b;
  return {s.begin(), s.end()};
}

py::bytes as_bytes(const std::vector<std::uint8_t>& v) {
  return py::bytes(reinterpret_cast<const char*>(v.data()), v.size());
}

py::tuple pair(const Matrix& a, const Matrix& b) { return py::make_tuple(a, b); }

}  // namespace

void bind_data(py::module_& m) {
  using py::arg;
  const auto none = py::none();
  auto d = m.def_submodule("data", "The C++ readers and loaders behind oa.data (oa::ml::data)");

  d.def(
      "read_idx",
      [](const std::filesystem::path& path) {
        data::IdxArray a = data::read_idx(path);
        py::array_t<std::uint8_t> out(std::vector<py::ssize_t>(a.dims.begin(), a.dims.end()));
        std::memcpy(out.mutable_data(), a.data.data(), a.data.size());
        return out;
      },
      arg("path"),
      "An IDX file of unsigned bytes (raw or gzip) as a uint8 array of its dimensions (oa::ml::data::read_idx). "
      "Raises oa.InvalidArgumentError naming the file and the fault.");

  py::class_<data::ImageDataset, std::shared_ptr<data::ImageDataset>>(
      d, "ImageDataset", "Images [N, H, W] of bytes with one int32 label each (oa::ml::data::ImageDataset)")
      .def_readonly("count", &data::ImageDataset::count)
      .def_readonly("height", &data::ImageDataset::height)
      .def_readonly("width", &data::ImageDataset::width)
      .def_readonly("classes", &data::ImageDataset::classes)
      .def_property_readonly("pixels",
                             [](const py::object& self) {
                               const auto& s = self.cast<const data::ImageDataset&>();
                               return view(s.pixels.data(), {s.count, s.height, s.width}, self);
                             })
      .def_property_readonly("labels", [](const py::object& self) {
        const auto& s = self.cast<const data::ImageDataset&>();
        return view(s.labels.data(), {s.count}, self);
      });
  d.def(
      "load_idx_images",
      [](const std::filesystem::path& images, const std::filesystem::path& labels) {
        return std::make_shared<data::ImageDataset>(data::load_idx_images(images, labels));
      },
      arg("images"), arg("labels"));
  d.def(
      "load_fashion_mnist",
      [](const std::string& split, const std::filesystem::path& dir) {
        return std::make_shared<data::ImageDataset>(data::load_fashion_mnist(split, dir));
      },
      arg("split"), arg("root"));
  d.attr("FASHION_MNIST_ROOT") = data::kFashionMnistDir.string();
  d.attr("FASHION_MNIST_NORMALIZATION") =
      py::make_tuple(data::kFashionMnistNormalization.mean, data::kFashionMnistNormalization.std);
  d.def(
      "compute_normalization",
      [](const data::ImageDataset& ds) {
        const data::Normalization n = data::compute_normalization(ds);
        return py::make_tuple(n.mean, n.std);
      },
      arg("dataset"), "(mean, std) of p / 255 over every pixel (population std).");
  d.def(
      "image_batch",
      [](const data::ImageDataset& ds, const std::vector<std::int64_t>& indices, float mean, float std,
         const OptEngine& engine) {
        const data::ImageBatch b = data::image_batch(ds, indices, {mean, std}, engine);
        return pair(b.images, b.labels);
      },
      arg("dataset"), arg("indices"), arg("mean"), arg("std"), arg("engine") = none,
      "(images float32 [B, 1, H, W] = (p / 255 - mean) / std, labels int32 [B]) of the samples `indices`.");
  d.def("epoch_order", &data::epoch_order, arg("count"), arg("shuffle"), arg("seed"), arg("epoch"),
        "0 .. count - 1, or with shuffle the Fisher-Yates permutation of Generator(seed).fork(epoch).");

  d.def(
      "read_bytes", [](const std::vector<std::filesystem::path>& paths) { return as_bytes(data::read_bytes(paths)); },
      arg("paths"), "The concatenated bytes of the files, in order.");
  d.def("fortune_files", &data::fortune_files, arg("dir") = std::filesystem::path("/usr/share/games/fortunes"),
        "The text databases of a fortune directory, sorted by name.");
  d.def(
      "split_text",
      [](const py::bytes& text, double validation_fraction) {
        data::TextSplit s = data::split_text(bytes_of(text), validation_fraction);
        return py::make_tuple(as_bytes(s.train), as_bytes(s.validation));
      },
      arg("text"), arg("validation_fraction"), "(train, validation): the last floor(n * fraction) bytes held out.");

  py::class_<data::TextLoader>(d, "TextLoader", "Random context windows over a byte text (oa::ml::data::TextLoader)")
      .def(py::init([](const py::bytes& text, std::int64_t batch_size, std::int64_t context, std::uint64_t seed,
                       const OptEngine& engine) { return data::TextLoader(bytes_of(text), batch_size, context, seed, engine); }),
           arg("text"), arg("batch_size"), arg("context"), arg("seed"), arg("engine") = none)
      .def(
          "batch",
          [](const data::TextLoader& self, std::uint64_t step) {
            const data::TextBatch b = self.batch(step);
            return pair(b.tokens, b.targets);
          },
          arg("step"))
      .def_property_readonly("size", &data::TextLoader::size)
      .def_property_readonly("batch_size", &data::TextLoader::batch_size)
      .def_property_readonly("context", &data::TextLoader::context);
}

}  // namespace oa::python
