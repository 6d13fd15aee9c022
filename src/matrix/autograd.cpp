// The autograd tape: Nodes, gradient slots, and the reverse walk.
#include "oa/matrix/autograd.hpp"

#include <atomic>
#include <queue>
#include <unordered_map>
#include <unordered_set>

#include "matrix/op_def.hpp"
#include "oa/matrix/autocast.hpp"
#include "oa/matrix/cast.hpp"
#include "oa/matrix/elementwise.hpp"

namespace oa::autograd {

// Where a Node sends the gradient of one input: the Node that produced it
// (and which of its outputs), or the leaf's own autograd state.
struct Edge {
  std::shared_ptr<Node> node;
  std::uint32_t output = 0;
  std::shared_ptr<AutogradMeta> leaf;
  bool defined() const { return node || leaf; }
};

struct Node {
  Node(std::string n, std::uint64_t seq, BackwardFn fn, Engine e)
      : name(std::move(n)), sequence(seq), backward(std::move(fn)), engine(std::move(e)) {}
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  // Frees a chain of Nodes iteratively: a deep graph must not recurse once per Node.
  ~Node() {
    std::vector<std::shared_ptr<Node>> dying;
    auto take_edges = [&dying](Node& n) {
      for (Edge& e : n.edges)
        if (e.node) dying.push_back(std::move(e.node));
    };
    take_edges(*this);
    while (!dying.empty()) {
      std::shared_ptr<Node> n = std::move(dying.back());
      dying.pop_back();
      if (n.use_count() == 1) take_edges(*n);
    }
  }
  std::string name;         // the forward semantic op
  std::uint64_t sequence;   // creation order; later Nodes run first among ready ones
  BackwardFn backward;      // holds the saved values; dropped on release
  std::vector<Edge> edges;  // one per input
  std::vector<Shape> input_shapes;
  std::vector<DType> input_dtypes;  // a gradient has its input's dtype
  std::vector<Shape> output_shapes;
  std::vector<DType> output_dtypes;  // a missing output gradient is zeros of its output's dtype
  Engine engine;
  bool released = false;

  void release() {
    backward = nullptr;
    released = true;
  }
};

namespace {

thread_local bool t_grad_enabled = true;

std::atomic<std::uint64_t> g_sequence{0};
std::atomic<std::uint64_t> g_hook_ids{1};

AutogradMeta* meta_of(const Matrix& m) { return m.defined() ? m.impl()->autograd.get() : nullptr; }

AutogradMeta& ensure_meta(const Matrix& m) {
  auto& a = m.impl()->autograd;
  if (!a) a = std::make_shared<AutogradMeta>();
  return *a;
}

bool wants_grad(const Matrix& m) {
  const AutogradMeta* a = meta_of(m);
  return a && (a->requires_grad || a->grad_fn);
}

// A gradient being summed during one backward call.
struct Slot {
  Matrix grad;
  bool owned = false;
};

struct LeafSlot {
  std::shared_ptr<AutogradMeta> meta;
  Slot slot;
};

// y += x in place for same-shape f32 matrices (chunked like elementwise ops).
const detail::Op<detail::NoAttributes> kAccumulate{
    {.name = "oa::autograd::accumulate",
     .inputs = {"y", "x"},
     .infer = [](const detail::OpCall<detail::NoAttributes>& c) {
       return std::vector<detail::OutputSpec>{{.shape = c.inputs[0].shape(), .in_place = 0}};
     },
     .lower = {{DType::F32,
                [](const detail::OpCall<detail::NoAttributes>& c, const std::vector<Matrix>& out,
                   std::vector<runtime::ComputeDispatch>& ds) {
                  const Matrix &y = out[0], &x = c.inputs[1];
                  for (auto chunk : detail::element_chunks(c.engine, y.numel())) {
                    const auto off = static_cast<std::uint64_t>(chunk.begin) * 4, bytes = static_cast<std::uint64_t>(chunk.count) * 4;
                    runtime::ComputeDispatch d;
                    d.kernel = kernels::matrix_accumulate;
                    d.bindings = {runtime::BufferBinding::read_write(y.storage(), off, bytes),
                                  runtime::BufferBinding::read(x.storage(), off, bytes)};
                    d.push.set(push::matrix_accumulate{.n = static_cast<std::uint32_t>(chunk.count)});
                    d.groups = {detail::elementwise_groups(DType::F32, chunk.count), 1, 1};
                    ds.push_back(std::move(d));
                  }
                }}}}};

// Copies `m` into a fresh buffer (GPU copy).
Matrix clone(const Matrix& m) {
  Matrix c = detail::allocate(m.engine(), m.shape(), m.dtype());
  m.engine().copy(*m.storage(), 0, *c.storage(), 0, static_cast<std::uint64_t>(m.numel()) * size_of(m.dtype()));
  return c;
}

// The Nodes reachable from `root`, each with the number of reachable Nodes
// consuming one of its outputs. Throws FailedPrecondition on a released Node
// before any backward work is recorded.
std::unordered_map<Node*, std::size_t> discover(Node* root, const char* op) {
  std::unordered_map<Node*, std::size_t> consumers{{root, 0}};
  std::vector<Node*> stack{root};
  while (!stack.empty()) {
    Node* n = stack.back();
    stack.pop_back();
    if (n->released)
      fail(ErrorKind::FailedPrecondition,
           "{}: the graph through {} was already released by an earlier backward (its saved values are freed); pass "
           "retain_graph = true to the earlier backward, or run the forward pass again",
           op, n->name);
    for (const Edge& e : n->edges) {
      if (!e.node) continue;
      auto [it, fresh] = consumers.try_emplace(e.node.get(), 0);
      ++it->second;
      if (fresh) stack.push_back(e.node.get());
    }
  }
  return consumers;
}

// Adds the leaf gradients of one backward call into the leaves. A first
// contribution whose buffer another leaf (or the caller's output_gradient)
// already holds is copied, so no two leaves share a gradient buffer.
void commit(std::vector<LeafSlot>& leaves, const Matrix& user_seed) {
  std::unordered_set<const runtime::Storage*> handed;
  if (user_seed.defined()) handed.insert(user_seed.storage().get());
  for (auto& [meta, slot] : leaves) {
    if (!slot.grad.defined()) continue;
    if (!slot.owned && handed.count(slot.grad.storage().get())) {
      slot.grad = clone(slot.grad);
      slot.owned = true;
    }
    handed.insert(slot.grad.storage().get());
    if (!meta->grad.defined()) {
      meta->grad = slot.grad;
      meta->grad_owned = slot.owned;
    } else {
      accumulate(meta->grad, meta->grad_owned, slot.grad);
    }
  }
}

void require_history(const Matrix& root, const char* op) {
  if (!wants_grad(root))
    fail(ErrorKind::FailedPrecondition,
         "{}: the output {} does not require grad (no input of the ops that produced it requires grad, or they ran under "
         "NoGradGuard)",
         op, root.shape());
}

void run_backward(const Matrix& root, const Matrix& seed, const Matrix& user_seed, bool retain_graph, const char* op) {
  require_history(root, op);
  AutogradMeta* rm = meta_of(root);
  NoGradGuard no_grad;
  const AutocastGuard no_autocast(DType::F32, false);  // rules run in the saved dtypes
  std::vector<LeafSlot> leaves;
  std::unordered_map<const AutogradMeta*, std::size_t> leaf_index;
  auto to_leaf = [&](const std::shared_ptr<AutogradMeta>& meta, const Matrix& g) {
    auto [it, fresh] = leaf_index.try_emplace(meta.get(), leaves.size());
    if (fresh) leaves.push_back({meta, {}});
    Slot& s = leaves[it->second].slot;
    accumulate(s.grad, s.owned, g);
  };

  auto run_hooks = [&](const AutogradMeta& meta) {
    const Matrix& g = leaves[leaf_index.at(&meta)].slot.grad;
    for (const auto& [id, hook] : meta.grad_ready_hooks) hook(g);
  };

  if (!rm->grad_fn) {  // the output is itself a leaf
    to_leaf(root.impl()->autograd, seed);
    run_hooks(*rm);
    commit(leaves, user_seed);
    return;
  }

  Node* start = rm->grad_fn.get();
  auto consumers = discover(start, op);
  // Edges still to run into each hooked leaf: its gradient is complete at 0.
  std::unordered_map<const AutogradMeta*, std::size_t> hooked_edges;
  for (const auto& [n, count] : consumers)
    for (const Edge& e : n->edges)
      if (e.leaf && !e.leaf->grad_ready_hooks.empty()) ++hooked_edges[e.leaf.get()];
  std::unordered_map<Node*, std::vector<Slot>> pending;
  pending[start].resize(start->output_shapes.size());
  {
    Slot& s = pending[start][rm->output_index];
    accumulate(s.grad, s.owned, seed);
  }
  auto later_first = [](const Node* a, const Node* b) { return a->sequence < b->sequence; };
  std::priority_queue<Node*, std::vector<Node*>, decltype(later_first)> ready(later_first);
  ready.push(start);

  while (!ready.empty()) {
    Node* n = ready.top();
    ready.pop();
    std::vector<Matrix> grad_outputs(n->output_shapes.size());
    {
      auto slots = std::move(pending[n]);
      pending.erase(n);
      slots.resize(n->output_shapes.size());
      for (std::size_t i = 0; i < slots.size(); ++i)
        grad_outputs[i] = slots[i].grad.defined() ? slots[i].grad : detail::zeros(n->engine, n->output_shapes[i], n->output_dtypes[i]);
    }
    std::vector<bool> needs(n->edges.size());
    for (std::size_t i = 0; i < needs.size(); ++i) needs[i] = n->edges[i].defined();

    std::vector<Matrix> grad_inputs;
    try {
      grad_inputs = n->backward(grad_outputs, needs);
    } catch (const Error& e) {
      throw Error(e.kind(), fmt::format("{} through {}: {}", op, n->name, e.message()));
    }
    grad_outputs.clear();
    if (grad_inputs.size() != n->edges.size())
      fail(ErrorKind::Internal, "{}: the backward rule of {} returned {} gradients for {} inputs", op, n->name,
           grad_inputs.size(), n->edges.size());

    for (std::size_t i = 0; i < n->edges.size(); ++i) {
      const Edge& e = n->edges[i];
      if (!e.defined()) continue;
      const Matrix& g = grad_inputs[i];
      if (g.defined()) {
        if (!(g.shape() == n->input_shapes[i]) || g.dtype() != n->input_dtypes[i])
          fail(ErrorKind::Internal, "{}: the backward rule of {} returned a {} {} gradient for input {} ({} {})", op, n->name,
               to_string(g.dtype()), g.shape(), i, to_string(n->input_dtypes[i]), n->input_shapes[i]);
        if (e.node) {
          auto& slots = pending[e.node.get()];
          slots.resize(e.node->output_shapes.size());
          accumulate(slots[e.output].grad, slots[e.output].owned, g);
        } else {
          to_leaf(e.leaf, g);
        }
      }
      if (e.node && --consumers[e.node.get()] == 0) ready.push(e.node.get());
      if (e.leaf) {
        auto it = hooked_edges.find(e.leaf.get());
        if (it != hooked_edges.end() && --it->second == 0 && leaf_index.count(e.leaf.get())) run_hooks(*e.leaf);
      }
    }
    if (!retain_graph) n->release();
  }
  commit(leaves, user_seed);
}

}  // namespace

SavedValue::SavedValue(const Matrix& m) {
  if (!m.defined()) return;
  value_ = detach(m);
  version_ = m.version();
  if (const AutogradMeta* a = meta_of(m)) name_ = a->name;
}

const Matrix& SavedValue::get() const {
  if (released_)
    fail(ErrorKind::FailedPrecondition,
         "oa::autograd: a value saved for backward was already freed by an earlier backward (pass retain_graph = true to "
         "backward more than once)");
  if (value_.defined() && value_.version() != version_)
    fail(ErrorKind::FailedPrecondition,
         "{} was modified in place after it was saved for backward (version {} when saved, {} now); run the forward pass "
         "again after updating it",
         name_.empty() ? fmt::format("a value of shape {}", value_.shape())
                       : fmt::format("Parameter '{}' (shape {})", name_, value_.shape()),
         version_, value_.version());
  return value_;
}

bool needs_record(std::initializer_list<const Matrix*> inputs) {
  if (!t_grad_enabled) return false;
  for (const Matrix* m : inputs)
    if (m && wants_grad(*m)) return true;
  return false;
}

bool needs_record(const std::vector<Matrix>& inputs) {
  if (!t_grad_enabled) return false;
  for (const Matrix& m : inputs)
    if (wants_grad(m)) return true;
  return false;
}

void record(const std::string& name, const std::vector<Matrix>& inputs, const std::vector<Matrix>& outputs, BackwardFn backward) {
  if (!needs_record(inputs)) return;
  if (outputs.empty()) fail(ErrorKind::Internal, "oa::autograd::record: {} recorded without outputs", name);
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].defined()) fail(ErrorKind::Internal, "oa::autograd::record: output {} of {} is undefined", i, name);
    if (const AutogradMeta* a = meta_of(outputs[i]); a && (a->grad_fn || a->requires_grad))
      fail(ErrorKind::Internal, "oa::autograd::record: output {} of {} already has autograd history", i, name);
  }
  auto node = std::make_shared<Node>(name, g_sequence.fetch_add(1, std::memory_order_relaxed), std::move(backward),
                                     outputs.front().engine());
  for (const Matrix& in : inputs) {
    Edge e;
    if (const AutogradMeta* a = meta_of(in)) {
      if (a->grad_fn) {
        e.node = a->grad_fn;
        e.output = a->output_index;
      } else if (a->requires_grad) {
        e.leaf = in.impl()->autograd;
      }
    }
    node->edges.push_back(std::move(e));
    node->input_shapes.push_back(in.defined() ? in.shape() : Shape{});
    node->input_dtypes.push_back(in.defined() ? in.dtype() : DType::F32);
  }
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    AutogradMeta& a = ensure_meta(outputs[i]);
    a.grad_fn = node;
    a.output_index = static_cast<std::uint32_t>(i);
    node->output_shapes.push_back(outputs[i].shape());
    node->output_dtypes.push_back(outputs[i].dtype());
  }
}

void accumulate(Matrix& slot, bool& owned, const Matrix& contribution) {
  detail::require_defined(contribution, "oa::autograd::accumulate", "contribution");
  if (!is_floating_point(contribution.dtype()))
    fail(ErrorKind::InvalidArgument, "oa::autograd::accumulate: contribution must be f32, f16 or bf16; found {} {}",
         to_string(contribution.dtype()), contribution.shape());
  if (!slot.defined()) {
    slot = detach(contribution);
    owned = false;
    return;
  }
  if (!(slot.shape() == contribution.shape()))
    fail(ErrorKind::InvalidArgument, "oa::autograd::accumulate: contribution {} does not match the gradient slot {}",
         contribution.shape(), slot.shape());
  detail::require_same_engine(slot, "slot", contribution, "contribution", "oa::autograd::accumulate");
  if (slot.dtype() != contribution.dtype())
    fail(ErrorKind::InvalidArgument, "oa::autograd::accumulate: contribution {} {} does not match the gradient slot's dtype {}",
         to_string(contribution.dtype()), contribution.shape(), to_string(slot.dtype()));
  NoGradGuard no_grad;
  if (!owned || slot.dtype() != DType::F32) {  // 16-bit gradients add in f32 and round once (out of place)
    slot = matrix::add(slot, contribution);
    owned = true;
    return;
  }
  detail::apply(kAccumulate, {slot, contribution});
}

std::string grad_fn_name(const Matrix& m) {
  const AutogradMeta* a = meta_of(m);
  return a && a->grad_fn ? a->grad_fn->name : std::string();
}

}  // namespace oa::autograd

namespace oa {

using autograd::meta_of;

const Matrix& set_requires_grad(const Matrix& m, bool value) {
  detail::require_defined(m, "oa::set_requires_grad", "m");
  if (!is_floating_point(m.dtype()))
    fail(ErrorKind::InvalidArgument, "oa::set_requires_grad: only a floating-point m (f32, f16, bf16) can require gradients; found {} {}",
         to_string(m.dtype()), m.shape());
  AutogradMeta& a = autograd::ensure_meta(m);
  if (a.grad_fn) {
    if (!value)
      fail(ErrorKind::InvalidArgument,
           "oa::set_requires_grad: cannot clear requires_grad of a value {} computed by {} (use detach)", m.shape(),
           a.grad_fn->name);
    return m;
  }
  a.requires_grad = value;
  return m;
}

bool requires_grad(const Matrix& m) { return autograd::wants_grad(m); }

namespace {

// A defined f32, f16 or bf16 `m`, else InvalidArgument naming oa::backward and `arg`.
void require_floating(const Matrix& m, const char* arg) {
  detail::require_defined(m, "oa::backward", arg);
  if (!is_floating_point(m.dtype()))
    fail(ErrorKind::InvalidArgument, "oa::backward: {} must be f32, f16 or bf16; found {} {}", arg, to_string(m.dtype()), m.shape());
}

}  // namespace

void backward(const Matrix& loss, bool retain_graph) {
  require_floating(loss, "loss");
  if (loss.numel() != 1)
    fail(ErrorKind::InvalidArgument,
         "oa::backward: loss {} has {} elements; a non-scalar output needs an explicit output_gradient", loss.shape(),
         loss.numel());
  autograd::require_history(loss, "oa::backward");
  const Matrix seed = matrix::cast(Matrix::ones(loss.shape(), loss.engine()), loss.dtype());
  autograd::run_backward(loss, seed, Matrix(), retain_graph, "oa::backward");
}

void backward(const Matrix& output, const Matrix& output_gradient, bool retain_graph) {
  require_floating(output, "output");
  require_floating(output_gradient, "output_gradient");
  detail::require_same_engine(output, "output", output_gradient, "output_gradient", "oa::backward");
  if (!(output.shape() == output_gradient.shape()))
    fail(ErrorKind::InvalidArgument, "oa::backward: output_gradient {} does not match output {}", output_gradient.shape(),
         output.shape());
  NoGradGuard no_grad;  // the seed's cast to output's dtype is not part of the graph
  autograd::run_backward(output, matrix::cast(output_gradient, output.dtype()), output_gradient, retain_graph, "oa::backward");
}

Matrix grad(const Matrix& leaf) {
  const AutogradMeta* a = meta_of(leaf);
  return a ? a->grad : Matrix();
}

void zero_grad(const Matrix& leaf) {
  if (!leaf.defined()) return;
  if (auto& a = leaf.impl()->autograd) {
    a->grad = Matrix();
    a->grad_owned = false;
  }
}

namespace {

// The autograd state of `leaf`, which must be a leaf that requires grad.
AutogradMeta& require_leaf(const Matrix& leaf, const char* op) {
  detail::require_defined(leaf, op, "leaf");
  AutogradMeta* a = leaf.impl()->autograd.get();
  if (!a || !a->requires_grad || a->grad_fn)
    fail(ErrorKind::InvalidArgument, "{}: leaf {} is not a leaf that requires grad{}", op, leaf.shape(),
         a && a->grad_fn ? fmt::format(" (it was computed by {})", a->grad_fn->name) : std::string());
  return *a;
}

}  // namespace

void set_grad(const Matrix& leaf, const Matrix& gradient) {
  AutogradMeta& a = require_leaf(leaf, "oa::set_grad");
  detail::require_defined(gradient, "oa::set_grad", "gradient");
  detail::require_same_engine(leaf, "leaf", gradient, "gradient", "oa::set_grad");
  if (!(gradient.shape() == leaf.shape()) || gradient.dtype() != leaf.dtype())
    fail(ErrorKind::InvalidArgument, "oa::set_grad: gradient {} {} does not match leaf {} {}", to_string(gradient.dtype()),
         gradient.shape(), to_string(leaf.dtype()), leaf.shape());
  a.grad = detach(gradient);
  a.grad_owned = false;
}

std::uint64_t register_grad_ready_hook(const Matrix& leaf, std::function<void(const Matrix& gradient)> hook) {
  AutogradMeta& a = require_leaf(leaf, "oa::register_grad_ready_hook");
  if (!hook) fail(ErrorKind::InvalidArgument, "oa::register_grad_ready_hook: the hook is empty");
  const std::uint64_t id = autograd::g_hook_ids.fetch_add(1, std::memory_order_relaxed);
  a.grad_ready_hooks.emplace_back(id, std::move(hook));
  return id;
}

void remove_grad_ready_hook(const Matrix& leaf, std::uint64_t id) {
  if (!leaf.defined() || !leaf.impl()->autograd) return;
  auto& hooks = leaf.impl()->autograd->grad_ready_hooks;
  std::erase_if(hooks, [id](const auto& h) { return h.first == id; });
}

Matrix detach(const Matrix& m) {
  detail::require_defined(m, "oa::detach", "m");
  // Aggregate initialisation: a default-constructed MatrixImpl would create a new Engine.
  return Matrix(std::make_shared<MatrixImpl>(MatrixImpl{m.engine(), m.storage(), m.shape(), m.dtype(), nullptr}));
}

NoGradGuard::NoGradGuard() : previous_(autograd::t_grad_enabled) { autograd::t_grad_enabled = false; }
NoGradGuard::~NoGradGuard() { autograd::t_grad_enabled = previous_; }
bool grad_enabled() { return autograd::t_grad_enabled; }
void set_grad_enabled(bool enabled) { autograd::t_grad_enabled = enabled; }

}  // namespace oa
