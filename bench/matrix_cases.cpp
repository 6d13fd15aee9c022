// Foundation cases: elementwise bandwidth.
#include "bench.hpp"

namespace {
using oa::Matrix;

const oa_bench::Register kAdd{{"add_2^26", "add", {{"n", 1 << 26}}, 0, 3.0 * 4 * (1 << 26), [](const oa::Engine& e) {
                                 auto a = Matrix::uniform({1 << 26}, -1, 1, 1, e);
                                 auto b = Matrix::uniform({1 << 26}, -1, 1, 2, e);
                                 return [a, b] { (void)(a + b); };
                               }}};
}  // namespace
