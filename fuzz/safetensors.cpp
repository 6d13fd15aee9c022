// Fuzzes the safetensors reader (src/ml/checkpoint.cpp): the input is a file
// handed to read_safetensors_metadata, load_safetensors and
// load_safetensors_into (targets "a" F32 [2, 3] and "b" I32 [4]).
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace oa;
  const auto path = fuzz::write_input(data, size);
  const Engine& engine = fuzz::engine();
  fuzz::expect_return_or_error([&] { ml::read_safetensors_metadata(path); });
  fuzz::expect_return_or_error([&] { ml::load_safetensors(path, engine); });
  fuzz::expect_return_or_error([&] {
    const ml::NamedMatrices targets{{"a", Matrix::zeros({2, 3}, engine)},
                                    {"b", Matrix::empty({4}, DType::I32, engine)}};
    ml::load_safetensors_into(path, targets);
  });
  return 0;
}
