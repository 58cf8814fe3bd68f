// Functional models and Sequential: forward construction, building, weights, summary.
#include "tern/nn/model.h"

#include <iomanip>
#include <map>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace tern::nn {

// --- symbolic tensors ---

SymbolicTensor Input(const Shape& shape, DType dtype, const std::string& name) {
  auto node = std::make_shared<SymbolicNode>();
  node->input_type = {dtype, shape};
  node->input_name = name.empty() ? default_layer_name("input") : name;
  return SymbolicTensor(node, 0);
}

SymbolicTensor LayerRef::operator()(const SymbolicTensor& x) const {
  return (*this)(std::vector<SymbolicTensor>{x});
}

SymbolicTensor LayerRef::operator()(const std::vector<SymbolicTensor>& xs) const {
  for (const auto& x : xs) {
    TERN_CHECK_ARG(x.defined(), "layer '", layer_->name(), "' applied to an undefined tensor");
  }
  auto node = std::make_shared<SymbolicNode>();
  node->layer = layer_;
  node->inputs = xs;
  return SymbolicTensor(node, 0);
}

double EvaluateResult::metric(const std::string& name) const {
  if (name == "loss") return loss;
  for (const auto& [n, v] : metrics) {
    if (n == name) return v;
  }
  throw_error(ErrorCode::kNotFound, "no metric '", name, "' in the evaluation result");
}

// --- Model ---

namespace {

// Symbolic nodes reachable from `outputs`, inputs before users.
std::vector<SymbolicNode*> symbolic_order(const std::vector<SymbolicTensor>& outputs) {
  std::vector<SymbolicNode*> order;
  std::unordered_set<SymbolicNode*> done, visiting;
  std::function<void(SymbolicNode*)> visit = [&](SymbolicNode* n) {
    if (done.count(n)) return;
    if (!visiting.insert(n).second)
      throw_error(ErrorCode::kInvalidArgument, "the layer graph has a cycle");
    for (const auto& in : n->inputs) visit(in.node().get());
    visiting.erase(n);
    done.insert(n);
    order.push_back(n);
  };
  for (const auto& o : outputs) visit(o.node().get());
  return order;
}

}  // namespace

Model::Model(std::string name)
    : name_(std::move(name)), store_(std::make_unique<runtime::VariableStore>()) {}

Model::Model(std::vector<SymbolicTensor> inputs, std::vector<SymbolicTensor> outputs,
             std::string name)
    : Model(std::move(name)) {
  set_graph(std::move(inputs), std::move(outputs));
}

Model::~Model() = default;

void Model::set_graph(std::vector<SymbolicTensor> inputs, std::vector<SymbolicTensor> outputs) {
  TERN_CHECK_ARG(!inputs.empty(), "model '", name_, "' needs at least one input");
  TERN_CHECK_ARG(!outputs.empty(), "model '", name_, "' needs at least one output");
  for (const auto& in : inputs) {
    TERN_CHECK_ARG(in.defined() && in.node()->layer == nullptr, "model '", name_,
                   "': inputs must come from nn::Input()");
  }
  // Every Input the outputs depend on must be a model input.
  for (SymbolicNode* n : symbolic_order(outputs)) {
    if (n->layer) continue;
    bool listed = false;
    for (const auto& in : inputs) listed = listed || in.node().get() == n;
    TERN_CHECK_ARG(listed, "model '", name_, "': output depends on input '", n->input_name,
                   "' which is not among the model inputs");
  }
  inputs_ = std::move(inputs);
  outputs_ = std::move(outputs);
}

std::vector<TensorType> Model::input_types() const {
  std::vector<TensorType> out;
  for (const auto& in : inputs_) out.push_back(in.node()->input_type);
  return out;
}

std::vector<ir::Value*> Model::forward(LayerContext& ctx, std::span<ir::Value* const> inputs) {
  if (inputs.size() != inputs_.size()) {
    throw_error(ErrorCode::kInvalidArgument, "model '", name_, "' expects ", inputs_.size(),
                " inputs, got ", inputs.size());
  }
  std::unordered_map<SymbolicNode*, std::vector<ir::Value*>> values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorType& want = inputs_[i].node()->input_type;
    const Shape& got = inputs[i]->shape();
    std::vector<int64_t> sample(got.dims().begin() + (got.rank() > 0 ? 1 : 0), got.dims().end());
    if (got.rank() == 0 || Shape(sample) != want.shape) {
      throw_error(ErrorCode::kInvalidArgument, "model '", name_, "' input '",
                  inputs_[i].node()->input_name, "' expects per-sample shape ", want.shape,
                  " (batch first), got ", got);
    }
    values[inputs_[i].node().get()] = {inputs[i]};
  }
  uint64_t layer_index = 0;
  for (SymbolicNode* n : symbolic_order(outputs_)) {
    if (!n->layer) continue;
    ++layer_index;
    std::vector<ir::Value*> in;
    std::vector<TensorType> in_types;
    for (const auto& s : n->inputs) {
      ir::Value* v = values.at(s.node().get()).at(static_cast<size_t>(s.index()));
      in.push_back(v);
      in_types.push_back(v->type());
    }
    n->layer->ensure_built(*store_, in_types, seed_ + layer_index);
    try {
      values[n] = n->layer->call(ctx, in);
    } catch (const Error& e) {
      if (e.message().find("layer '") != std::string::npos) throw;
      throw_error(e.code(), "layer '", n->layer->name(), "' (", n->layer->type_name(),
                  "): ", e.message());
    }
  }
  std::vector<ir::Value*> out;
  for (const auto& o : outputs_)
    out.push_back(values.at(o.node().get()).at(static_cast<size_t>(o.index())));
  return out;
}

void Model::build() {
  if (built_) return;
  ir::Graph g("build");
  std::vector<ir::Value*> in;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const TensorType& t = inputs_[i].node()->input_type;
    std::vector<int64_t> dims{1};
    dims.insert(dims.end(), t.shape.dims().begin(), t.shape.dims().end());
    in.push_back(g.input(str_cat("x", i), {t.dtype, Shape(dims)}));
  }
  LayerContext ctx{g};
  forward(ctx, in);
  built_ = true;
}

std::vector<LayerPtr> Model::layers() const {
  std::vector<LayerPtr> out;
  std::unordered_set<Layer*> seen;
  for (SymbolicNode* n : symbolic_order(outputs_)) {
    if (n->layer && seen.insert(n->layer.get()).second) out.push_back(n->layer);
  }
  return out;
}

LayerPtr Model::get_layer(const std::string& name) const {
  for (const auto& l : layers()) {
    if (l->name() == name) return l;
  }
  throw_error(ErrorCode::kNotFound, "model '", name_, "' has no layer '", name, "'");
}

std::vector<WeightSpec> Model::trainable_weights() const {
  std::vector<WeightSpec> out;
  for (const auto& l : layers()) {
    for (auto& w : l->trainable_weights()) out.push_back(w);
  }
  return out;
}

std::vector<WeightSpec> Model::non_trainable_weights() const {
  std::vector<WeightSpec> out;
  for (const auto& l : layers()) {
    for (auto& w : l->non_trainable_weights()) out.push_back(w);
  }
  return out;
}

std::vector<WeightSpec> Model::weights() const {
  std::vector<WeightSpec> out;
  for (const auto& l : layers()) {
    for (auto& w : l->weights()) out.push_back(w);
  }
  return out;
}

int64_t Model::count_params() const {
  int64_t n = 0;
  for (const auto& l : layers()) n += l->count_params();
  return n;
}

void Model::summary(std::ostream& os) const {
  TERN_CHECK_ARG(built_, "model '", name_, "' is not built yet: call build() or fit() first");
  // Output shapes from a batch-1 trace.
  ir::Graph g("summary");
  std::vector<ir::Value*> in;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const TensorType& t = inputs_[i].node()->input_type;
    std::vector<int64_t> dims{1};
    dims.insert(dims.end(), t.shape.dims().begin(), t.shape.dims().end());
    in.push_back(g.input(str_cat("x", i), {t.dtype, Shape(dims)}));
  }
  std::unordered_map<SymbolicNode*, std::vector<ir::Value*>> values;
  for (size_t i = 0; i < inputs_.size(); ++i) values[inputs_[i].node().get()] = {in[i]};
  LayerContext ctx{g};
  auto shape_str = [](const Shape& s) {
    std::string r = "(None";
    for (int i = 1; i < s.rank(); ++i) r += str_cat(", ", s.dim(i));
    return r + ")";
  };
  const int w1 = 34, w2 = 26, w3 = 12;
  std::string rule(w1 + w2 + w3, '_');
  std::string thick(w1 + w2 + w3, '=');
  os << "Model: \"" << name_ << "\"\n" << rule << "\n";
  os << std::left << std::setw(w1) << " Layer (type)" << std::setw(w2) << "Output Shape"
     << "Param #\n";
  os << thick << "\n";
  for (const auto& in_node : inputs_) {
    SymbolicNode* n = in_node.node().get();
    os << std::left << std::setw(w1) << str_cat(" ", n->input_name, " (InputLayer)")
       << std::setw(w2) << shape_str(values[n][0]->shape()) << 0 << "\n";
  }
  int64_t trainable = 0, frozen = 0;
  for (SymbolicNode* n : symbolic_order(outputs_)) {
    if (!n->layer) continue;
    std::vector<ir::Value*> args;
    for (const auto& s : n->inputs)
      args.push_back(values.at(s.node().get()).at(static_cast<size_t>(s.index())));
    values[n] = n->layer->call(ctx, args);
    os << std::left << std::setw(w1)
       << str_cat(" ", n->layer->name(), " (", n->layer->type_name(), ")") << std::setw(w2)
       << shape_str(values[n][0]->shape()) << n->layer->count_params() << "\n";
  }
  for (const auto& l : layers()) {
    for (const auto& w : l->trainable_weights()) trainable += w.type.shape.num_elements();
    for (const auto& w : l->non_trainable_weights()) frozen += w.type.shape.num_elements();
  }
  os << thick << "\n";
  os << "Total params: " << trainable + frozen << "\n";
  os << "Trainable params: " << trainable << "\n";
  os << "Non-trainable params: " << frozen << "\n" << rule << "\n";
}

std::string Model::summary() const {
  std::ostringstream os;
  summary(os);
  return os.str();
}

// --- Sequential ---

Sequential::Sequential(std::vector<LayerPtr> layers, std::optional<Shape> input_shape,
                       std::string name)
    : Model(std::move(name)), stack_(std::move(layers)), input_shape_(std::move(input_shape)) {
  for (const auto& l : stack_)
    TERN_CHECK_ARG(l != nullptr, "Sequential '", this->name(), "': null layer");
  if (input_shape_) link();
}

void Sequential::add(LayerPtr layer) {
  TERN_CHECK_ARG(layer != nullptr, "Sequential '", name(), "': null layer");
  TERN_CHECK_ARG(!built(), "Sequential '", name(), "': cannot add layers after the model is built");
  stack_.push_back(std::move(layer));
  if (input_shape_) link();
}

void Sequential::build(const Shape& sample_shape, DType dtype) {
  if (input_shape_ && (*input_shape_ != sample_shape || input_dtype_ != dtype)) {
    if (built()) {
      throw_error(ErrorCode::kInvalidArgument, "Sequential '", name(), "' was built for input ",
                  *input_shape_, " but got samples of shape ", sample_shape);
    }
  }
  input_shape_ = sample_shape;
  input_dtype_ = dtype;
  link();
  Model::build();
}

void Sequential::link() {
  TERN_CHECK_ARG(!stack_.empty(), "Sequential '", name(), "' has no layers");
  SymbolicTensor x = Input(*input_shape_, input_dtype_, "input");
  SymbolicTensor in = x;
  for (const auto& l : stack_) x = LayerRef(l)(x);
  set_graph({in}, {x});
}

}  // namespace tern::nn
