// oa::matrix::cast: one OpDef (matrix/op_def.hpp) over the kernel matrix/cast.
#include "oa/matrix/cast.hpp"

#include "matrix/cast_lowering.hpp"
#include "matrix/op_def.hpp"

namespace oa::detail {

void cast_dispatches(const Matrix& x, const Matrix& y, std::int64_t count, std::vector<runtime::ComputeDispatch>& ds) {
  for (auto c : element_chunks(x.engine(), count)) {
    const auto [in_offset, in_bytes] = chunk_window(x.dtype(), c);
    const auto [out_offset, out_bytes] = chunk_window(y.dtype(), c);
    runtime::ComputeDispatch d;
    d.kernel = kernels::matrix_cast;
    d.specialization = {dtype_code(x.dtype()), dtype_code(y.dtype())};
    d.bindings = {runtime::BufferBinding::read(x.storage(), in_offset, in_bytes),
                  runtime::BufferBinding::write(y.storage(), out_offset, out_bytes)};
    d.push.set(push::matrix_cast{.n = static_cast<std::uint32_t>(c.count)});
    d.groups = {groups_for((c.count + 1) / 2, 256), 1, 1};
    ds.push_back(std::move(d));
  }
}

}  // namespace oa::detail

namespace oa::matrix {

namespace {

using namespace detail::op_def;
using detail::cast_dispatches;

struct CastAttributes {
  DType from = DType::F32, to = DType::F32;
  std::string dtype;  // to's name: the trace attribute
  static constexpr auto fields = std::tuple{detail::field("dtype", &CastAttributes::dtype)};
};

const detail::Lowering<CastAttributes> kCastLowering = [](const OpCall<CastAttributes>& c, const std::vector<Matrix>& out,
                                                          std::vector<ComputeDispatch>& ds) {
  cast_dispatches(c.inputs[0], out[0], c.inputs[0].numel(), ds);
};

const detail::Op<CastAttributes> kCast{{.name = "oa::matrix::cast",
                                .inputs = {"x"},
                                .infer = [](const OpCall<CastAttributes>& c) {
                                  detail::shader_u32(c.inputs[0].numel(), "element count of x", c.name);
                                  // An i32 result has no gradient (torch: integer tensors cannot require one).
                                  return std::vector<detail::OutputSpec>{
                                      {.shape = c.inputs[0].shape(), .dtype = c.attributes.to, .no_grad = c.attributes.to == DType::I32}};
                                },
                                .lower = {{DType::F32, kCastLowering}, {DType::F16, kCastLowering}, {DType::BF16, kCastLowering},
                                          {DType::I32, kCastLowering}},
                                // An i32 x never requires a gradient and an i32 result takes none: the
                                // backward sees floating x and y alone.
                                .backward = [](const detail::BackwardCall<CastAttributes>& c) {
                                  // gy has the output's dtype, or is f32 zeros standing in for an absent gradient.
                                  const Matrix& gy = c.grad_outputs[0];
                                  if (gy.dtype() == c.attributes.from) return std::vector<Matrix>{gy};
                                  Matrix gx = detail::allocate(gy.engine(), gy.shape(), c.attributes.from);
                                  std::vector<ComputeDispatch> ds;
                                  cast_dispatches(gy, gx, gy.numel(), ds);
                                  c.record(ds, {&gy}, {&gx});
                                  return std::vector<Matrix>{gx};
                                }}};

}  // namespace

Matrix cast(const Matrix& x, DType dtype) {
  const char* op = "oa::matrix::cast";
  detail::require_defined(x, op, "x");
  if (!is_floating_point(dtype) && dtype != DType::I32)
    fail(ErrorKind::InvalidArgument, "{}: dtype must be f32, f16, bf16 or i32; found {} (x {} {})", op, to_string(dtype),
         to_string(x.dtype()), x.shape());
  if (x.dtype() == dtype) return x;
  return detail::apply(kCast, {x}, CastAttributes{x.dtype(), dtype, std::string(to_string(dtype))})[0];
}

}  // namespace oa::matrix
