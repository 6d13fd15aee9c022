// Build tool: turns the f16 cooperative-matrix SPIR-V module FILE, in place,
// into its bf16 twin (SPV_KHR_bfloat16), for compilers without GL_EXT_bfloat16
// (glslang 15.1). The module's one 16-bit float type must serve only as the
// component type of cooperative matrices (the kernels keep 16-bit values as
// bit patterns in uints everywhere else); it becomes OpTypeFloat 16 BFloat16KHR
// and the module declares BFloat16TypeKHR, BFloat16CooperativeMatrixKHR and
// the extension. Anything else is refused (exit 1), so a kernel that starts
// using f16 arithmetic fails the build rather than computing in the wrong type.
// Usage: oa_spirv_bf16 FILE
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

namespace {
// SPIR-V specification 3.x: opcodes, capabilities and the bfloat16 encoding.
constexpr std::uint32_t kOpExtension = 10, kOpCapability = 17, kOpTypeFloat = 22, kOpTypeCooperativeMatrixKHR = 4456;
constexpr std::uint32_t kCapBFloat16Type = 5116, kCapBFloat16CooperativeMatrix = 5118, kEncodingBFloat16 = 0;

int refuse(const char* file, const char* why) {
  std::fprintf(stderr, "oa_spirv_bf16: %s: %s\n", file, why);
  return 1;
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return refuse("(none)", "usage: oa_spirv_bf16 FILE");
  const char* file = argv[1];
  std::ifstream in(file, std::ios::binary);
  const std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() % 4 != 0 || bytes.size() < 20) return refuse(file, "not a SPIR-V module");
  std::vector<std::uint32_t> w(bytes.size() / 4);
  std::memcpy(w.data(), bytes.data(), bytes.size());
  if (w[0] != 0x07230203u) return refuse(file, "not a SPIR-V module");

  // The 16-bit float type, and every use of its id.
  std::uint32_t half = 0;
  for (std::size_t i = 5; i < w.size(); i += w[i] >> 16) {
    if ((w[i] >> 16) == 0 || i + (w[i] >> 16) > w.size()) return refuse(file, "a truncated instruction");
    if ((w[i] & 0xffffu) == kOpTypeFloat && w[i + 2] == 16) {
      if (half != 0 || (w[i] >> 16) != 3) return refuse(file, "more than one 16-bit float type");
      half = w[i + 1];
    }
  }
  if (half == 0) return refuse(file, "no 16-bit float type");
  for (std::size_t i = 5; i < w.size(); i += w[i] >> 16) {
    const std::uint32_t op = w[i] & 0xffffu, n = w[i] >> 16;
    if (op == kOpTypeFloat) continue;
    for (std::uint32_t j = 1; j < n; ++j)
      if (w[i + j] == half && !(op == kOpTypeCooperativeMatrixKHR && j == 2))
        return refuse(file, "the 16-bit float type is used outside cooperative-matrix types");
  }

  std::vector<std::uint32_t> out(w.begin(), w.begin() + 5);
  bool declared = false;
  for (std::size_t i = 5; i < w.size(); i += w[i] >> 16) {
    const std::uint32_t op = w[i] & 0xffffu, n = w[i] >> 16;
    if (!declared && op != kOpCapability) {  // after the capabilities: ours, then the extension
      out.insert(out.end(), {2u << 16 | kOpCapability, kCapBFloat16Type, 2u << 16 | kOpCapability, kCapBFloat16CooperativeMatrix});
      const char name[20] = "SPV_KHR_bfloat16";  // 17 bytes with the terminator, padded to 5 words
      out.push_back(6u << 16 | kOpExtension);
      for (int k = 0; k < 5; ++k) {
        std::uint32_t word = 0;
        std::memcpy(&word, name + 4 * k, 4);
        out.push_back(word);
      }
      declared = true;
    }
    if (op == kOpTypeFloat && w[i + 1] == half) {
      out.insert(out.end(), {4u << 16 | kOpTypeFloat, half, 16u, kEncodingBFloat16});
      continue;
    }
    out.insert(out.end(), w.begin() + static_cast<std::ptrdiff_t>(i), w.begin() + static_cast<std::ptrdiff_t>(i + n));
  }
  std::ofstream o(file, std::ios::binary | std::ios::trunc);
  o.write(reinterpret_cast<const char*>(out.data()), static_cast<std::streamsize>(out.size() * 4));
  return o ? 0 : refuse(file, "cannot write");
}
