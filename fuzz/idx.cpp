// Fuzzes the IDX reader (src/ml/data.cpp): the input is a file, raw or gzip,
// handed to read_idx.
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = oa::fuzz::write_input(data, size);
  oa::fuzz::expect_return_or_error([&] {
    const oa::ml::data::IdxArray a = oa::ml::data::read_idx(path);
    std::int64_t n = 1;
    for (std::int64_t d : a.dims) n *= d;
    if (static_cast<std::size_t>(n) != a.data.size()) oa::fuzz::die("read_idx: data size differs from its dimensions");
  });
  return 0;
}
