// lstm_cell and gru_cell, each declared once (matrix/op_def.hpp): validation,
// the fused forward kernel and the fused backward kernel.
#include "matrix/op_def.hpp"
#include "ml/nn_ops/common.hpp"
#include "oa/ml/rnn.hpp"

namespace oa::ml {

namespace {

using namespace nn_ops;

using namespace detail::op_def;

// The checks of a cell with `gates` gate blocks: gates_x [B, gates * H],
// gates_h (when given) of its shape, state [B, H]; every extent nonzero.
// Returns H.
std::int64_t require_cell(const OpCall<NoAttributes>& c, std::int64_t gates, const char* state_arg) {
  const Matrix &gx = c.inputs[0], &gh = c.inputs[1], &state = c.inputs[2];
  for (std::size_t k = 0; k < 3; ++k)
    if (c.inputs[k].defined()) detail::require_f32(c.inputs[k], c.name, k == 0 ? "gates_x" : k == 1 ? "gates_h" : state_arg);
  const Shape& s = gx.shape();
  if (s.rank() != 2 || s.numel() == 0 || s[1] % gates != 0)
    fail(ErrorKind::InvalidArgument, "{}: gates_x must be [B, {} * H] with B, H >= 1; found {}", c.name, gates, s);
  if (gh.defined() && !(gh.shape() == s))
    fail(ErrorKind::InvalidArgument, "{}: gates_h {} must have gates_x's shape {}", c.name, gh.shape(), s);
  const std::int64_t H = s[1] / gates;
  if (!(state.shape() == Shape{s[0], H}))
    fail(ErrorKind::InvalidArgument, "{}: {} must be [{}, {}] to match gates_x {}; found {}", c.name, state_arg, s[0], H, s,
         state.shape());
  detail::shader_u32(s.numel(), "element count of gates_x", c.name);
  return H;
}

// One invocation per element of the [B, H] state.
void set_cell_grid(ComputeDispatch& d, std::int64_t n, std::int64_t H) {
  d.push.set(push::ml_rnn_cell{.n = static_cast<std::uint32_t>(n), .H = static_cast<std::uint32_t>(H)});
  d.groups = {detail::groups_for(n, 256), 1, 1};
}

// ── lstm_cell ───────────────────────────────────────────────────────────────

// Outputs h, c and the auxiliary activated gates [B, 4H] (lstm_cell.comp).
const detail::Op<NoAttributes> kLstmCell{
    {.name = "oa::ml::lstm_cell",
     .inputs = {"gates_x", {"gates_h", true}, "c_prev"},
     .outputs = 2,
     .infer = [](const OpCall<NoAttributes>& c) {
       require_cell(c, 4, "c_prev");
       const Shape& state = c.inputs[2].shape();
       return std::vector<OutputSpec>{{state}, {state}, {c.inputs[0].shape(), DType::F32, true}};
     },
     .lower = {{DType::F32,
                [](const OpCall<NoAttributes>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
                  const Matrix &gx = c.inputs[0], &gh = c.inputs[1], &c_prev = c.inputs[2];
                  ComputeDispatch d;
                  d.kernel = kernels::ml_rnn_lstm_cell;
                  d.specialization = {gh.defined()};
                  d.bindings = {BufferBinding::read(gx.storage()), BufferBinding::read((gh.defined() ? gh : gx).storage()),
                                BufferBinding::read(c_prev.storage()), BufferBinding::write(out[0].storage()),
                                BufferBinding::write(out[1].storage()), BufferBinding::write(out[2].storage())};
                  set_cell_grid(d, c_prev.numel(), c_prev.shape()[1]);
                  ds.push_back(std::move(d));
                }}},
     .saves = [](const OpCall<NoAttributes>&, const std::vector<bool>&) {
       return Saves{{false, false, true}, {false, true, true}};
     },
     // The gates' gradient (shared by gates_x and gates_h) and dc_prev as one backward op.
     .backward = [](const BackwardCall<NoAttributes>& c) {
       const Matrix &dh = c.grad_outputs[0], &dc = c.grad_outputs[1], &c_prev = c.inputs[2], &cell = c.outputs[1],
                    &act = c.outputs[2];
       const Engine& engine = dh.engine();
       const bool need_gates = c.needs[0] || c.needs[1];
       const Matrix da = detail::allocate(engine, act.shape());  // the kernel writes it in any case
       Matrix dc_prev;
       if (c.needs[2]) dc_prev = detail::allocate(engine, c_prev.shape());
       ComputeDispatch d;
       d.kernel = kernels::ml_rnn_lstm_cell_backward;
       d.specialization = {c.needs[2]};
       d.bindings = {BufferBinding::read(dh.storage()),     BufferBinding::read(dc.storage()),
                     BufferBinding::read(act.storage()),    BufferBinding::read(c_prev.storage()),
                     BufferBinding::read(cell.storage()),   BufferBinding::write(da.storage()),
                     BufferBinding::write(c.needs[2] ? dc_prev.storage() : unused_output(engine))};
       set_cell_grid(d, c_prev.numel(), c_prev.shape()[1]);
       std::vector<ComputeDispatch> ds{std::move(d)};
       const Matrix recorded_da = need_gates ? da : Matrix();
       c.record(ds, {&dh, &dc, &act, &c_prev, &cell}, {&recorded_da, &dc_prev});
       return std::vector<Matrix>{c.needs[0] ? da : Matrix(), c.needs[1] ? da : Matrix(), dc_prev};
     }}};

// ── gru_cell ────────────────────────────────────────────────────────────────

// Outputs h and the auxiliary r, z, n [B, 3H] (gru_cell.comp).
const detail::Op<NoAttributes> kGruCell{
    {.name = "oa::ml::gru_cell",
     .inputs = {"gates_x", "gates_h", "h_prev"},
     .infer = [](const OpCall<NoAttributes>& c) {
       require_cell(c, 3, "h_prev");
       return std::vector<OutputSpec>{{c.inputs[2].shape()}, {c.inputs[0].shape(), DType::F32, true}};
     },
     .lower = {{DType::F32,
                [](const OpCall<NoAttributes>& c, const std::vector<Matrix>& out, std::vector<ComputeDispatch>& ds) {
                  const Matrix &gx = c.inputs[0], &gh = c.inputs[1], &h_prev = c.inputs[2];
                  ComputeDispatch d;
                  d.kernel = kernels::ml_rnn_gru_cell;
                  d.bindings = {BufferBinding::read(gx.storage()), BufferBinding::read(gh.storage()),
                                BufferBinding::read(h_prev.storage()), BufferBinding::write(out[0].storage()),
                                BufferBinding::write(out[1].storage())};
                  set_cell_grid(d, h_prev.numel(), h_prev.shape()[1]);
                  ds.push_back(std::move(d));
                }}},
     .saves = [](const OpCall<NoAttributes>&, const std::vector<bool>&) {
       return Saves{{false, true, true}, {false, true}};
     },
     .backward = [](const BackwardCall<NoAttributes>& c) {
       const Matrix &dh = c.grad_outputs[0], &gh = c.inputs[1], &h_prev = c.inputs[2], &act = c.outputs[1];
       const Engine& engine = dh.engine();
       std::vector<Matrix> grads(3);
       const Shape shapes[3] = {act.shape(), act.shape(), h_prev.shape()};
       for (std::size_t k = 0; k < 3; ++k)
         if (c.needs[k]) grads[k] = detail::allocate(engine, shapes[k]);
       ComputeDispatch d;
       d.kernel = kernels::ml_rnn_gru_cell_backward;
       d.specialization = {c.needs[0], c.needs[1], c.needs[2]};
       d.bindings = {BufferBinding::read(dh.storage()), BufferBinding::read(act.storage()), BufferBinding::read(gh.storage()),
                     BufferBinding::read(h_prev.storage())};
       for (std::size_t k = 0; k < 3; ++k)
         d.bindings.push_back(BufferBinding::write(c.needs[k] ? grads[k].storage() : unused_output(engine)));
       set_cell_grid(d, h_prev.numel(), h_prev.shape()[1]);
       std::vector<ComputeDispatch> ds{std::move(d)};
       c.record(ds, {&dh, &act, &gh, &h_prev}, {&grads[0], &grads[1], &grads[2]});
       return grads;
     }}};

}  // namespace

std::pair<Matrix, Matrix> lstm_cell(const Matrix& gates_x, const Matrix& gates_h, const Matrix& c_prev) {
  std::vector<Matrix> r = detail::apply(kLstmCell, {gates_x, gates_h, c_prev});
  return {std::move(r[0]), std::move(r[1])};
}

Matrix gru_cell(const Matrix& gates_x, const Matrix& gates_h, const Matrix& h_prev) {
  return detail::apply(kGruCell, {gates_x, gates_h, h_prev})[0];
}

}  // namespace oa::ml
