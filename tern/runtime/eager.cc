// Eager execution of single ops and whole graphs.
#include "tern/runtime/eager.h"

#include <map>
#include <unordered_map>

#include "tern/base/float_env.h"
#include "tern/ir/analysis/topo_order.h"
#include "tern/kernels/kernel.h"
#include "tern/ops/registry.h"
#include "tern/runtime/placement.h"
#include "tern/runtime/runtime.h"

namespace tern::runtime {
namespace {

// `t` where a kernel on `device` can read it (a copy only when it cannot).
Tensor readable_on(const Tensor& t, DeviceBackend& device) {
  return needs_copy(t, device) ? t.to_device(device) : t;
}

}  // namespace

std::vector<Tensor> eager_call(std::string_view op_name, const std::vector<Tensor>& inputs,
                               const ops::Attrs& attrs_in, const EagerOptions& options) {
  initialize();
  const ops::OpDef& op = ops::OpRegistry::global().get(op_name);
  if (op.has_trait(ops::kTraitSource)) {
    throw_error(ErrorCode::kInvalidArgument, "op '", op_name,
                "' is a source op and cannot be called eagerly");
  }
  std::vector<TensorType> in_types;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].defined()) {
      throw_error(ErrorCode::kInvalidArgument, "op '", op_name, "': input ", i, " is undefined");
    }
    in_types.push_back(inputs[i].type());
  }
  ops::Attrs attrs = attrs_in;
  std::vector<TensorType> out_types = op.check_and_infer(op_name, in_types, attrs);
  DeviceBackend& device = DeviceRegistry::global().get(options.device);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (needs_copy(inputs[i], device)) {
      throw_error(ErrorCode::kInvalidArgument, "op '", op_name, "': input ", i, " ",
                  inputs[i].type().to_string(), " lives on ", inputs[i].device().to_string(),
                  " but the op runs on ", device.device().to_string(),
                  " (copy it there with to_device())");
    }
  }
  kernels::KernelSignature sig{&op,
                               &attrs,
                               in_types,
                               out_types,
                               options.device,
                               options.deterministic,
                               options.constant_inputs};
  auto kernel = kernels::KernelRegistry::global().select(sig, options.kernel).kernel;
  std::vector<Tensor> outputs;
  for (const auto& t : out_types) {
    if (options.device == DeviceType::kCPU) {
      outputs.emplace_back(t.dtype, t.shape);
    } else {
      outputs.emplace_back(t.dtype, t.shape, device);
    }
  }
  kernels::KernelContext ctx{inputs, outputs, attrs, device.default_stream()};
  device.prepare_calling_thread();
  FlushDenormalsScope denormals;  // as in Executable::run
  kernel->run(ctx);
  return outputs;
}

void add_written_variables(const ir::Node& n, std::map<std::string, std::vector<DType>>& out) {
  if (!n.op().has_trait(ops::kTraitMutatesInputs)) return;
  for (const ir::Value* v : n.inputs()) {
    const ir::Node& src = *v->node();
    if (src.op_name() == "variable") {
      out[src.attrs().get_string("name")];
    } else if (src.op_name() == "variable_copy") {
      out[src.attrs().get_string("name")].push_back(src.attrs().get_dtype("dtype"));
    }
  }
}

std::vector<Tensor> run_graph_eager(const ir::Graph& g, const Feeds& feeds, VariableStore* vars,
                                    const EagerOptions& options) {
  initialize();
  DeviceBackend& device = DeviceRegistry::global().get(options.device);
  std::unordered_map<const ir::Value*, Tensor> values;
  for (ir::Node* n : ir::live_topo_order(g)) {
    const std::string& op = n->op_name();
    if (op == "input") {
      const std::string& name = n->attrs().get_string("name");
      const Tensor* fed = nullptr;
      for (const auto& [k, v] : feeds) {
        if (k == name) fed = &v;
      }
      if (!fed) throw_error(ErrorCode::kInvalidArgument, "graph input '", name, "' was not fed");
      if (fed->type() != n->output()->type()) {
        throw_error(ErrorCode::kInvalidArgument, "graph input '", name, "' expects ",
                    n->output()->type().to_string(), ", fed ", fed->type().to_string());
      }
      values[n->output()] = readable_on(*fed, device);
    } else if (op == "variable") {
      if (!vars)
        throw_error(ErrorCode::kInvalidArgument, "graph reads variables but no store was given");
      const Tensor& v = vars->get(n->attrs().get_string("name"));
      if (v.type() != n->output()->type()) {
        throw_error(ErrorCode::kInvalidArgument, "variable '", n->attrs().get_string("name"),
                    "' is ", v.type().to_string(), " but the graph expects ",
                    n->output()->type().to_string());
      }
      if (needs_copy(v, device)) {
        throw_error(ErrorCode::kInvalidArgument, "variable '", n->attrs().get_string("name"),
                    "' lives on ", v.device().to_string(), " but the graph runs on ",
                    device.device().to_string(), " (VariableStore::place_on)");
      }
      values[n->output()] = v;
    } else if (op == "variable_copy") {
      if (!vars)
        throw_error(ErrorCode::kInvalidArgument, "graph reads variables but no store was given");
      const std::string& name = n->attrs().get_string("name");
      DType dtype = n->attrs().get_dtype("dtype");
      Tensor& c = vars->copy(name, dtype);
      vars->refresh_copy(name, dtype);
      if (c.type() != n->output()->type() || needs_copy(c, device)) {
        throw_error(ErrorCode::kInvalidArgument, "the ", dtype_name(dtype), " copy of variable '",
                    name, "' is ", c.type().to_string(), " on ", c.device().to_string(),
                    " but the graph expects ", n->output()->type().to_string(), " on ",
                    device.device().to_string());
      }
      values[n->output()] = c;
    } else if (op == "constant") {
      values[n->output()] = readable_on(n->attrs().get_tensor("value"), device);
    } else {
      std::vector<Tensor> in;
      for (ir::Value* v : n->inputs()) in.push_back(values.at(v));
      std::vector<Tensor> out = eager_call(op, in, n->attrs(), options);
      for (int i = 0; i < n->num_outputs(); ++i) values[n->output(i)] = out[static_cast<size_t>(i)];
      std::map<std::string, std::vector<DType>> written;
      add_written_variables(*n, written);
      for (const auto& [name, copies] : written) vars->written(name, copies);
    }
  }
  std::vector<Tensor> result;
  for (const auto& o : g.outputs()) result.push_back(values.at(o.value));
  return result;
}

}  // namespace tern::runtime
