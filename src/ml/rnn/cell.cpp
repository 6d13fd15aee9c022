// lstm_cell, gru_cell, lstm_layer and gru_layer, each declared once
// (matrix/op_def.hpp): validation, the forward and the backward.
#include <array>

#include "matrix/gemm.hpp"
#include "matrix/op_def.hpp"
#include "oa/matrix/reduction.hpp"
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

// One invocation per element of the [B, H] state; o[k]: the element offset
// of the operand at binding k (ml/rnn/cell.push.h).
void set_cell_grid(ComputeDispatch& d, std::int64_t n, std::int64_t H, const std::array<std::int64_t, 7>& o = {}) {
  auto u = [](std::int64_t v) { return static_cast<std::uint32_t>(v); };
  d.push.set(push::ml_rnn_cell{.n = u(n), .H = u(H), .o0 = u(o[0]), .o1 = u(o[1]), .o2 = u(o[2]), .o3 = u(o[3]), .o4 = u(o[4]),
                               .o5 = u(o[5]), .o6 = u(o[6])});
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
                     BufferBinding::write(c.needs[2] ? dc_prev.storage() : unused_output(engine)),
                     BufferBinding::read(dh.storage())};  // dr: not read without ADD_DR
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


// ── lstm_layer and gru_layer ────────────────────────────────────────────────
// The recurrence of one layer over T steps, each step one recurrent GEMM
// (matrix/gemm_skinny for B <= 16) and one cell dispatch addressing step t of
// [T, ...] buffers; the backward runs the steps in reverse (cell backward
// reading dh_t = dout_t + the part that step t + 1 sends back, then that part
// for h_{t-1} through dgates_h_t W_hh into one [B, H] buffer), and forms the
// weight gradient by GEMMs over all steps and the bias gradient as one column
// sum.

// The checks of a layer with `gates` gate blocks: gates_x [T, B, gates * H],
// weight_hh [gates * H, H], bias_hh [gates * H] (optional), the states [B, H];
// f32, nonzero extents, offsets within 32 bits. Returns {T, B, H}.
std::array<std::int64_t, 3> require_layer(const OpCall<NoAttributes>& c, std::int64_t gates) {
  static constexpr const char* kArgs[] = {"gates_x", "weight_hh", "bias_hh", "h0", "c0"};
  for (std::size_t k = 0; k < c.inputs.size(); ++k)
    if (c.inputs[k].defined()) detail::require_f32(c.inputs[k], c.name, kArgs[k]);
  const Shape& s = c.inputs[0].shape();
  if (s.rank() != 3 || s.numel() == 0 || s[2] % gates != 0)
    fail(ErrorKind::InvalidArgument, "{}: gates_x must be [T, B, {} * H] with T, B, H >= 1; found {}", c.name, gates, s);
  const std::int64_t T = s[0], B = s[1], H = s[2] / gates;
  if (!(c.inputs[1].shape() == Shape{gates * H, H}))
    fail(ErrorKind::InvalidArgument, "{}: weight_hh must be [{} * H, H] = [{}, {}] for gates_x {}; found {}", c.name, gates,
         gates * H, H, s, c.inputs[1].shape());
  if (c.inputs[2].defined() && !(c.inputs[2].shape() == Shape{gates * H}))
    fail(ErrorKind::InvalidArgument, "{}: bias_hh must be [{}] for gates_x {}; found {}", c.name, gates * H, s, c.inputs[2].shape());
  for (std::size_t k = 3; k < c.inputs.size(); ++k)
    if (!(c.inputs[k].shape() == Shape{B, H}))
      fail(ErrorKind::InvalidArgument, "{}: {} must be [B, H] = [{}, {}] for gates_x {}; found {}", c.name, kArgs[k], B, H, s,
           c.inputs[k].shape());
  detail::shader_u32(s.numel(), "element count of gates_x", c.name);
  return {T, B, H};
}

// The weight gradient dW [G * H, H] = sum_t dgates_t^T h_{t-1} (h_{-1} = h0,
// h_t = out[t]) as two GEMMs over all steps, appended to ds.
Matrix weight_gradient(const Engine& engine, std::vector<ComputeDispatch>& ds, const Matrix& dgates, const Matrix& h0,
                       const Matrix& out) {
  const std::int64_t T = out.shape()[0], B = out.shape()[1], H = out.shape()[2], GH = dgates.shape()[2];
  Matrix dw = detail::allocate(engine, Shape{GH, H});
  detail::append_gemm(engine, {.m = GH, .n = H, .k = B, .trans_a = true, .a = {&dgates, 0, 0}, .b = {&h0, 0, 0}, .c = {&dw, 0, 0}}, ds);
  if (T > 1)
    detail::append_gemm(
        engine,
        {.m = GH, .n = H, .k = (T - 1) * B, .trans_a = true, .beta = 1, .a = {&dgates, B * GH, 0}, .b = {&out, 0, 0}, .c = {&dw, 0, 0}},
        ds);
  return dw;
}

// Appends the recurrent GEMM of a layer's step t: the [B, G] gates at element
// `gh_offset` of gh = h_{t-1} W_hh^T (+ b_hh), h_{-1} = h0, h_{t-1} = out[t - 1].
void append_recurrent_gemm(const OpCall<NoAttributes>& c, std::int64_t t, const Matrix& out, const Matrix& gh, std::int64_t gh_offset,
                           std::vector<ComputeDispatch>& ds) {
  const Matrix &w = c.inputs[1], &bias = c.inputs[2], &h0 = c.inputs[3];
  const std::int64_t B = out.shape()[1], H = out.shape()[2];
  detail::append_gemm(c.engine,
                      {.m = B,
                       .n = w.shape()[0],
                       .k = H,
                       .trans_b = true,
                       .a = t == 0 ? detail::GemmOperand{&h0, 0, 0} : detail::GemmOperand{&out, (t - 1) * B * H, 0},
                       .b = {&w, 0, 0},
                       .c = {&gh, gh_offset, 0},
                       .bias = bias.defined() ? &bias : nullptr},
                      ds);
}

// Outputs out [T, B, H] and c_n [B, H]; auxiliary: the activated gates
// [T, B, 4H] and, when T > 1, the cells c_0 .. c_{T-2} [T - 1, B, H] (with
// T = 1 the one step reads c0 and writes c_n: no auxiliary output, so none
// is allocated).
const detail::Op<NoAttributes> kLstmLayer{
    {.name = "oa::ml::lstm_layer",
     .inputs = {"gates_x", "weight_hh", {"bias_hh", true}, "h0", "c0"},
     .outputs = 2,
     .infer = [](const OpCall<NoAttributes>& c) {
       const auto [T, B, H] = require_layer(c, 4);
       std::vector<OutputSpec> specs{{Shape{T, B, H}}, {Shape{B, H}}, {c.inputs[0].shape(), DType::F32, true}};
       if (T > 1) specs.push_back({Shape{T - 1, B, H}, DType::F32, true});
       return specs;
     },
     .lower = {{DType::F32,
                [](const OpCall<NoAttributes>& c, const std::vector<Matrix>& o, std::vector<ComputeDispatch>& ds) {
                  const Matrix &gx = c.inputs[0], &c0 = c.inputs[4];
                  const std::int64_t T = gx.shape()[0], B = gx.shape()[1], G = gx.shape()[2], H = G / 4, BH = B * H;
                  const Matrix &out = o[0], &cn = o[1], &act = o[2], &cells = T > 1 ? o[3] : c0;  // T = 1: not bound
                  const Matrix gh = detail::allocate(c.engine, Shape{B, G});
                  for (std::int64_t t = 0; t < T; ++t) {
                    const bool first = t == 0, last = t == T - 1;
                    append_recurrent_gemm(c, t, out, gh, 0, ds);
                    ComputeDispatch d;
                    d.kernel = kernels::ml_rnn_lstm_cell;
                    d.specialization = {true};
                    d.bindings = {BufferBinding::read(gx.storage()),  BufferBinding::read(gh.storage()),
                                  BufferBinding::read((first ? c0 : cells).storage()), BufferBinding::write(out.storage()),
                                  BufferBinding::write((last ? cn : cells).storage()), BufferBinding::write(act.storage())};
                    set_cell_grid(d, BH, H, {t * B * G, 0, first ? 0 : (t - 1) * BH, t * BH, last ? 0 : t * BH, t * B * G, 0});
                    ds.push_back(std::move(d));
                  }
                }}},
     .saves = [](const OpCall<NoAttributes>&, const std::vector<bool>&) {
       return Saves{{false, true, false, true, true}, {true, true, true, true}};
     },
     .backward = [](const BackwardCall<NoAttributes>& c) {
       const Matrix &w = c.inputs[1], &h0 = c.inputs[3], &c0 = c.inputs[4];
       const Matrix &out = c.outputs[0], &cn = c.outputs[1], &act = c.outputs[2];
       const Matrix &dout = c.grad_outputs[0], &dcn = c.grad_outputs[1];
       const Engine& engine = dout.engine();
       const std::int64_t T = act.shape()[0], B = act.shape()[1], G = act.shape()[2], H = G / 4, BH = B * H;
       // The cells between the steps and their gradient: none with T = 1.
       const Matrix cells = T > 1 ? c.outputs[3] : Matrix(), dc = T > 1 ? detail::allocate(engine, cells.shape()) : Matrix();
       // dr: the part of h_{t-1}'s gradient that flows back through step t's
       // recurrent GEMM; step t - 1 adds it to dout[t - 1]. After step 0 it is h0's gradient.
       const Matrix dgates = detail::allocate(engine, act.shape()), dr = T > 1 || c.needs[3] ? detail::allocate(engine, h0.shape()) : Matrix();
       std::vector<Matrix> grads(5);
       if (c.needs[3]) grads[3] = dr;
       if (c.needs[4]) grads[4] = detail::allocate(engine, c0.shape());
       std::vector<ComputeDispatch> ds;
       for (std::int64_t t = T - 1; t >= 0; --t) {
         const bool first = t == 0, last = t == T - 1;
         ComputeDispatch d;
         d.kernel = kernels::ml_rnn_lstm_cell_backward;
         d.specialization = {!first || c.needs[4], !last};
         d.bindings = {BufferBinding::read(dout.storage()),
                       BufferBinding::read((last ? dcn : dc).storage()),
                       BufferBinding::read(act.storage()),
                       BufferBinding::read((first ? c0 : cells).storage()),
                       BufferBinding::read((last ? cn : cells).storage()),
                       BufferBinding::write(dgates.storage()),
                       BufferBinding::write(!first ? dc.storage() : c.needs[4] ? grads[4].storage() : unused_output(engine)),
                       BufferBinding::read((last ? dout : dr).storage())};  // dout: not read as dr
         set_cell_grid(d, BH, H,
                       {t * BH, last ? 0 : t * BH, t * B * G, first ? 0 : (t - 1) * BH, last ? 0 : t * BH, t * B * G, first ? 0 : (t - 1) * BH});
         ds.push_back(std::move(d));
         if (!first || c.needs[3])
           detail::append_gemm(engine, {.m = B, .n = H, .k = G, .a = {&dgates, t * B * G, 0}, .b = {&w, 0, 0}, .c = {&dr, 0, 0}}, ds);
       }
       if (c.needs[1]) grads[1] = weight_gradient(engine, ds, dgates, h0, out);
       c.record(ds, {&dout, &dcn, &w, &act, &cells, &cn, &h0, &c0, &out}, {&dgates, &grads[1], &grads[3], &grads[4]});
       if (c.needs[0]) grads[0] = dgates;
       if (c.needs[2]) grads[2] = matrix::sum_to(dgates, Shape{G});
       return grads;
     }}};

// Outputs out [T, B, H]; auxiliary: r, z, n [T, B, 3H] and the recurrent
// gates h_{t-1} W_hh^T + b_hh [T, B, 3H].
const detail::Op<NoAttributes> kGruLayer{
    {.name = "oa::ml::gru_layer",
     .inputs = {"gates_x", "weight_hh", {"bias_hh", true}, "h0"},
     .infer = [](const OpCall<NoAttributes>& c) {
       const auto [T, B, H] = require_layer(c, 3);
       return std::vector<OutputSpec>{
           {Shape{T, B, H}}, {c.inputs[0].shape(), DType::F32, true}, {c.inputs[0].shape(), DType::F32, true}};
     },
     .lower = {{DType::F32,
                [](const OpCall<NoAttributes>& c, const std::vector<Matrix>& o, std::vector<ComputeDispatch>& ds) {
                  const Matrix &gx = c.inputs[0], &h0 = c.inputs[3];
                  const Matrix &out = o[0], &act = o[1], &gh = o[2];
                  const std::int64_t T = gx.shape()[0], B = gx.shape()[1], G = gx.shape()[2], H = G / 3, BH = B * H;
                  for (std::int64_t t = 0; t < T; ++t) {
                    const bool first = t == 0;
                    append_recurrent_gemm(c, t, out, gh, t * B * G, ds);
                    ComputeDispatch d;
                    d.kernel = kernels::ml_rnn_gru_cell;
                    d.bindings = {BufferBinding::read(gx.storage()), BufferBinding::read(gh.storage()),
                                  BufferBinding::read((first ? h0 : out).storage()), BufferBinding::write(out.storage()),
                                  BufferBinding::write(act.storage())};
                    set_cell_grid(d, BH, H, {t * B * G, t * B * G, first ? 0 : (t - 1) * BH, t * BH, t * B * G, 0, 0});
                    ds.push_back(std::move(d));
                  }
                }}},
     .saves = [](const OpCall<NoAttributes>&, const std::vector<bool>&) {
       return Saves{{false, true, false, true}, {true, true, true}};
     },
     .backward = [](const BackwardCall<NoAttributes>& c) {
       const Matrix &w = c.inputs[1], &h0 = c.inputs[3];
       const Matrix &out = c.outputs[0], &act = c.outputs[1], &gh = c.outputs[2], &dout = c.grad_outputs[0];
       const Engine& engine = dout.engine();
       const std::int64_t T = act.shape()[0], B = act.shape()[1], G = act.shape()[2], H = G / 3, BH = B * H;
       const Matrix dgh = detail::allocate(engine, act.shape());
       const Matrix dgx = c.needs[0] ? detail::allocate(engine, act.shape()) : Matrix();
       // dr: the part of h_{t-1}'s gradient that flows back through step t
       // (the cell's dh * z, then its recurrent GEMM); step t - 1 adds it to
       // dout[t - 1] and overwrites it. After step 0 it is h0's gradient.
       const Matrix dr = T > 1 || c.needs[3] ? detail::allocate(engine, h0.shape()) : Matrix();
       std::vector<Matrix> grads(4);
       if (c.needs[3]) grads[3] = dr;
       std::vector<ComputeDispatch> ds;
       for (std::int64_t t = T - 1; t >= 0; --t) {
         const bool first = t == 0, last = t == T - 1, dh_prev = !first || c.needs[3];
         ComputeDispatch d;
         d.kernel = kernels::ml_rnn_gru_cell_backward;
         d.specialization = {c.needs[0], true, dh_prev, !last};
         d.bindings = {BufferBinding::read(dout.storage()),
                       BufferBinding::read(act.storage()),
                       BufferBinding::read(gh.storage()),
                       BufferBinding::read((first ? h0 : out).storage()),
                       BufferBinding::write(c.needs[0] ? dgx.storage() : unused_output(engine)),
                       BufferBinding::write(dgh.storage()),
                       !dr.defined()      ? BufferBinding::write(unused_output(engine))
                       : !last && dh_prev ? BufferBinding::read_write(dr.storage())
                       : dh_prev          ? BufferBinding::write(dr.storage())
                                          : BufferBinding::read(dr.storage())};
         set_cell_grid(d, BH, H, {t * BH, t * B * G, t * B * G, first ? 0 : (t - 1) * BH, t * B * G, t * B * G, 0});
         ds.push_back(std::move(d));
         if (dh_prev)
           detail::append_gemm(engine, {.m = B, .n = H, .k = G, .beta = 1, .a = {&dgh, t * B * G, 0}, .b = {&w, 0, 0}, .c = {&dr, 0, 0}}, ds);
       }
       if (c.needs[1]) grads[1] = weight_gradient(engine, ds, dgh, h0, out);
       c.record(ds, {&dout, &w, &act, &gh, &h0, &out}, {&dgx, &grads[1], &grads[3]});
       grads[0] = dgx;
       if (c.needs[2]) grads[2] = matrix::sum_to(dgh, Shape{G});
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

std::pair<Matrix, Matrix> lstm_layer(const Matrix& gates_x, const Matrix& weight_hh, const Matrix& bias_hh, const Matrix& h0,
                                     const Matrix& c0) {
  std::vector<Matrix> r = detail::apply(kLstmLayer, {gates_x, weight_hh, bias_hh, h0, c0});
  return {std::move(r[0]), std::move(r[1])};
}

Matrix gru_layer(const Matrix& gates_x, const Matrix& weight_hh, const Matrix& bias_hh, const Matrix& h0) {
  return detail::apply(kGruLayer, {gates_x, weight_hh, bias_hh, h0})[0];
}

}  // namespace oa::ml
