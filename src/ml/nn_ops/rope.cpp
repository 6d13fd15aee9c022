// rope, declared once (matrix/op_def.hpp): validation and the rotation kernel
// (forward, and its inverse as the backward).
#include <cmath>

#include "matrix/op_def.hpp"
#include "ml/nn_ops/common.hpp"
#include "oa/ml/rope.hpp"

namespace oa::ml {

namespace {

using namespace nn_ops;

struct RopeAttributes {
  std::int64_t offset = 0;
  double base = 0;
  static constexpr auto fields = std::tuple{detail::field("offset", &RopeAttributes::offset), detail::field("base", &RopeAttributes::base)};
};

// The ml/nn/rope dispatch writing into y the rotation of x (inverse: by -angle).
ComputeDispatch rotation(const Matrix& x, const std::shared_ptr<Storage>& y, const RopeAttributes& a, bool inverse) {
  const std::int64_t S = x.shape().dim(-2), D = x.shape().dim(-1), pairs = x.numel() / 2;
  ComputeDispatch d;
  d.kernel = kernels::ml_nn_rope;
  d.specialization = {inverse};
  d.bindings = {BufferBinding::read(x.storage()), BufferBinding::write(y)};
  d.push.set(push::ml_nn_rope{.pairs = static_cast<std::uint32_t>(pairs),
                              .S = static_cast<std::uint32_t>(S),
                              .half_d = static_cast<std::uint32_t>(D / 2),
                              .offset = static_cast<std::uint32_t>(a.offset),
                              .log2_base = static_cast<float>(std::log2(a.base))});
  d.groups = {detail::groups_for(pairs, 256), 1, 1};
  return d;
}

const detail::Op<RopeAttributes> kRope{
    {.name = "oa::ml::rope",
     .inputs = {"x"},
     .infer = [](const detail::OpCall<RopeAttributes>& c) {
       const Matrix& x = c.inputs[0];
       detail::require_f32(x, c.name, "x");
       if (x.rank() < 2 || x.numel() == 0 || x.shape().dim(-1) % 2 != 0)
         fail(ErrorKind::InvalidArgument, "{}: x {} must be [..., S, D] with nonzero extents and an even D", c.name, x.shape());
       const std::int64_t offset = c.attributes.offset;
       if (offset < 0 || offset + x.shape().dim(-2) > (std::int64_t{1} << 24))
         fail(ErrorKind::InvalidArgument, "{}: offset = {} must be >= 0 with offset + S <= 2^24 (x {})", c.name, offset, x.shape());
       if (!(c.attributes.base > 0 && std::isfinite(c.attributes.base)))
         fail(ErrorKind::InvalidArgument, "{}: base = {} must be positive and finite (x {})", c.name, c.attributes.base, x.shape());
       detail::shader_u32(x.numel(), "element count of x", c.name);
       return std::vector<detail::OutputSpec>{{x.shape()}};
     },
     .lower = {{DType::F32,
                [](const detail::OpCall<RopeAttributes>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
                  ds.push_back(rotation(c.inputs[0], out[0].storage(), c.attributes, false));
                }}},
     .backward = [](const detail::BackwardCall<RopeAttributes>& c) {
       const Matrix& gy = c.grad_outputs[0];
       Matrix dx = detail::allocate(gy.engine(), gy.shape());
       std::vector<ComputeDispatch> ds{rotation(gy, dx.storage(), c.attributes, true)};
       c.record(ds, {&gy}, {&dx}, detail::attribute_values(c.attributes));
       return std::vector<Matrix>{dx};
     }}};

}  // namespace

Matrix rope(const Matrix& x, std::int64_t offset, double base) { return detail::apply(kRope, {x}, {offset, base})[0]; }

}  // namespace oa::ml
