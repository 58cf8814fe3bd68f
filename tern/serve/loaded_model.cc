// LoadedModel: signature checks, host-side decoders, executables per batch size.
#include "tern/serve/loaded_model.h"

#include <cstring>
#include <limits>
#include <set>

#include "tern/base/error.h"
#include "tern/base/fingerprint.h"
#include "tern/base/strings.h"
#include "tern/data/example_parser.h"
#include "tern/data/example_proto.h"
#include "tern/data/image_codec.h"
#include "tern/runtime/runtime.h"
#include "tern/serve/rebatch.h"

namespace tern::serve {

struct LoadedModel::Pool {
  std::vector<std::unique_ptr<runtime::Executable>> idle;
  uint64_t last_use = 0;
};

struct LoadedModel::Lease {
  std::pair<std::string, int64_t> key;
  std::shared_ptr<Pool> pool;
  std::unique_ptr<runtime::Executable> exe;
};

namespace {

std::string spec_type(const TensorSpec& spec) {
  TensorValue v;
  v.dtype = spec.dtype;
  v.shape = spec.shape;
  return v.type_string();
}

// Writes `x` into element i of `t`; integer targets must hold it exactly.
void store_value(Tensor& t, int64_t i, double x, const std::string& what) {
  if (is_integer(t.dtype()) || t.dtype() == DType::kBool) {
    double lo = t.dtype() == DType::kU8 ? 0 : t.dtype() == DType::kBool ? 0 : -9.3e18;
    double hi = t.dtype() == DType::kU8 ? 255 : t.dtype() == DType::kBool ? 1 : 9.3e18;
    if (t.dtype() == DType::kI8) lo = -128, hi = 127;
    if (t.dtype() == DType::kI32) lo = -2147483648.0, hi = 2147483647.0;
    if (!(x >= lo && x <= hi))
      throw_error(ErrorCode::kInvalidArgument, what, ": value ", x, " at index ", i,
                  " does not fit ", dtype_name(t.dtype()));
  }
  t.set(i, x);
}

}  // namespace

LoadedModel::LoadedModel(ModelDirContents contents) : contents_(std::move(contents)) {
  runtime::initialize();
  for (const auto& [name, t] : contents_.weights) vars_.create(name, t);
  contents_.weights.clear();
  // The weights never change: fold them into the graph once (batch norms into convolutions,
  // ...), so that every executable compiled from it shares the folded tensors. The file's
  // copy is dropped once the store has it, and the store's once the graph no longer reads it:
  // one copy of each weight stays (the folded one where a norm was folded). Served ResNet-18's
  // peak RSS in workloads_bench 204 -> 188 MB (it had kept the file's copy and the store's).
  runtime::fold_frozen_variables(*contents_.graph, vars_);
  std::set<std::string> read;
  for (const ir::Node* n : contents_.graph->nodes_of("variable"))
    read.insert(n->attrs().get_string("name"));
  for (const std::string& name : vars_.names()) {
    if (!read.count(name)) vars_.erase(name);
  }
  for (const auto& [name, s] : contents_.signatures) signatures_[name] = s.signature;
  const auto& outs = contents_.graph->outputs();
  for (size_t i = 0; i < outs.size(); ++i) output_index_[outs[i].name] = i;
  for (const auto& [name, s] : contents_.signatures) {
    for (const auto& [alias, asset] : s.output_labels)
      labels_[asset] = split_lines(contents_.assets.at(asset));
  }
  // Signatures that leave some graph input unfed run only the part of the graph they read.
  size_t num_inputs = contents_.graph->nodes_of("input").size();
  for (const auto& [name, s] : contents_.signatures) {
    std::set<std::string> fed;
    for (const auto& [alias, tensor] : s.input_tensors) fed.insert(tensor);
    if (fed.size() == num_inputs) continue;
    std::vector<std::string> outputs;
    for (const auto& [alias, tensor] : s.output_tensors) outputs.push_back(tensor);
    PrunedGraph p;
    p.graph = prune_to_outputs(*contents_.graph, outputs);
    for (size_t i = 0; i < p.graph->outputs().size(); ++i)
      p.output_index[p.graph->outputs()[i].name] = i;
    pruned_[name] = std::move(p);
  }
}

LoadedModel::RunGraph LoadedModel::run_graph(const std::string& signature) const {
  if (auto p = pruned_.find(signature); p != pruned_.end())
    return {signature, p->second.graph.get(), &p->second.output_index};
  return {"", contents_.graph.get(), &output_index_};
}

LoadedModel::~LoadedModel() = default;

size_t LoadedModel::compiled_batch_sizes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pools_.size();
}

LoadedModel::Lease LoadedModel::acquire(const RunGraph& rg, int64_t batch) const {
  Lease lease;
  lease.key = {rg.key, batch};
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::shared_ptr<Pool>& pool = pools_[lease.key];
    if (!pool) pool = std::make_shared<Pool>();
    pool->last_use = ++tick_;
    lease.pool = pool;
    if (!pool->idle.empty()) {
      lease.exe = std::move(pool->idle.back());
      pool->idle.pop_back();
    }
    while (pools_.size() > kMaxBatchSizes) {
      auto lru = pools_.begin();
      for (auto it = pools_.begin(); it != pools_.end(); ++it) {
        if (it->second->last_use < lru->second->last_use) lru = it;
      }
      pools_.erase(lru);
    }
  }
  if (!lease.exe) {
    std::lock_guard<std::mutex> lock(compile_mu_);
    const ir::Graph& g = *rg.graph;
    runtime::CompileOptions options;
    options.frozen_variables = true;  // a loaded model's weights never change
    if (graph_batch_size(g) == batch) {
      lease.exe = runtime::Executable::compile(g, vars_, options);
    } else {
      lease.exe = runtime::Executable::compile(*rebatch(g, batch), vars_, options);
    }
  }
  return lease;
}

void LoadedModel::release(Lease& lease) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pools_.find(lease.key);
  // A pool evicted meanwhile is not refilled.
  if (it != pools_.end() && it->second == lease.pool && lease.pool->idle.size() < kMaxIdlePerSize)
    lease.pool->idle.push_back(std::move(lease.exe));
  lease.exe.reset();
}

Tensor LoadedModel::decode_input(const std::string& alias, const InputDecoder& decoder,
                                 const TensorValue& value, const TensorType& graph_type) const {
  int64_t n = value.shape[0];
  std::vector<int64_t> dims = graph_type.shape.dims();
  dims[0] = n;
  Tensor out(graph_type.dtype, Shape(dims));
  int64_t per = n == 0 ? 0 : out.num_elements() / n;
  if (decoder.kind == DecoderKind::kFingerprint) {
    // The one fingerprint the transform's analysis and apply use (tern/base/fingerprint.h).
    int64_t* dst = out.data<int64_t>();
    for (int64_t i = 0; i < n; ++i)
      dst[i] = fingerprint64_i64(value.strings[static_cast<size_t>(i)]);
    return out;
  }
  for (int64_t i = 0; i < n; ++i) {
    const std::string& bytes = value.strings[static_cast<size_t>(i)];
    std::string what = str_cat("input '", alias, "' example ", i);
    if (decoder.kind == DecoderKind::kImage) {
      Tensor img = run_image_decoder(decoder, bytes, what);
      std::vector<int64_t> want(dims.begin() + 1, dims.end());
      if (img.shape().dims() != want)
        throw_error(ErrorCode::kInvalidArgument, what, ": decoded image is ", img.shape(),
                    " but the model takes ", Shape(want),
                    decoder.height == 0 && decoder.steps.empty()
                        ? " (the exported pipeline does not resize: send images of that size)"
                        : "");
      if (img.dtype() != out.dtype())
        throw_error(ErrorCode::kInternal, what, ": decoded image is ", dtype_name(img.dtype()),
                    " but graph input is ", dtype_name(out.dtype()));
      std::memcpy(static_cast<char*>(out.raw_data()) + i * img.nbytes(), img.raw_data(),
                  img.nbytes());
      continue;
    }
    if (!decoder.example_spec.empty()) {
      // The training pipeline's parse: the same parser and feature spec.
      Tensor t;
      try {
        t = data::parse_example_record(bytes, decoder.example_spec)[0];
      } catch (const Error& e) {
        throw_error(ErrorCode::kInvalidArgument, what, ": ", e.message());
      }
      std::vector<int64_t> want(dims.begin() + 1, dims.end());
      if (t.shape().dims() != want || t.dtype() != out.dtype())
        throw_error(ErrorCode::kInvalidArgument, what, ": feature '", decoder.feature, "' is ",
                    dtype_name(t.dtype()), " ", t.shape(), " but the model takes ",
                    dtype_name(out.dtype()), " ", Shape(want));
      std::memcpy(static_cast<char*>(out.raw_data()) + i * t.nbytes(), t.raw_data(), t.nbytes());
      continue;
    }
    data::Example ex = data::parse_example_proto(bytes, what);
    auto f = ex.features.find(decoder.feature);
    if (f == ex.features.end())
      throw_error(ErrorCode::kInvalidArgument, what, ": tf.Example has no feature '",
                  decoder.feature, "'");
    const data::Feature& feat = f->second;
    std::string fwhat = str_cat(what, " feature '", decoder.feature, "'");
    if (feat.kind == data::FeatureKind::kBytes) {
      // Raw bytes: one value of exactly `per` bytes, each a u8 element.
      if (feat.bytes_list.size() != 1 || static_cast<int64_t>(feat.bytes_list[0].size()) != per)
        throw_error(ErrorCode::kInvalidArgument, fwhat, ": expected one bytes value of ", per,
                    " bytes, got ", feat.bytes_list.size(), " value(s)",
                    feat.bytes_list.empty()
                        ? ""
                        : str_cat(" (first ", feat.bytes_list[0].size(), " bytes)"));
      const std::string& raw = feat.bytes_list[0];
      for (int64_t k = 0; k < per; ++k)
        store_value(out, i * per + k, static_cast<uint8_t>(raw[static_cast<size_t>(k)]), fwhat);
      continue;
    }
    if (static_cast<int64_t>(feat.size()) != per)
      throw_error(ErrorCode::kInvalidArgument, fwhat, ": expected ", per, " values, got ",
                  feat.size(), " (", data::feature_kind_name(feat.kind), ")");
    for (int64_t k = 0; k < per; ++k) {
      double x = feat.kind == data::FeatureKind::kInt64
                     ? static_cast<double>(feat.int64_list[static_cast<size_t>(k)])
                     : static_cast<double>(feat.float_list[static_cast<size_t>(k)]);
      store_value(out, i * per + k, x, fwhat);
    }
  }
  return out;
}

TensorMap LoadedModel::run(const std::string& signature, const TensorMap& inputs) const {
  auto sit = contents_.signatures.find(signature);
  if (sit == contents_.signatures.end()) {
    std::string have;
    for (const auto& [name, s] : contents_.signatures)
      have += str_cat(have.empty() ? "" : ", ", name);
    throw_error(ErrorCode::kInvalidArgument, "Serving signature name: \"", signature,
                "\" not found in signature def (have: ", have, ")");
  }
  const StoredSignature& sig = sit->second;
  for (const auto& [alias, v] : inputs) {
    if (!sig.signature.inputs.count(alias)) {
      std::string have;
      for (const auto& [a, s] : sig.signature.inputs) have += str_cat(have.empty() ? "" : ", ", a);
      throw_error(ErrorCode::kInvalidArgument, "signature '", signature, "' has no input '", alias,
                  "' (inputs: ", have, ")");
    }
  }
  int64_t batch = -1;
  std::string batch_alias;
  for (const auto& [alias, spec] : sig.signature.inputs) {
    auto it = inputs.find(alias);
    if (it == inputs.end())
      throw_error(ErrorCode::kInvalidArgument, "signature '", signature, "': missing input '",
                  alias, "' (", spec_type(spec), ")");
    const TensorValue& v = it->second;
    bool ok = v.dtype == spec.dtype && v.shape.size() == spec.shape.size();
    for (size_t d = 0; ok && d < spec.shape.size(); ++d)
      ok = v.shape[d] >= 0 && (spec.shape[d] == -1 || spec.shape[d] == v.shape[d]);
    if (!ok)
      throw_error(ErrorCode::kInvalidArgument, "input '", alias, "': expected ", spec_type(spec),
                  ", got ", v.type_string());
    if (v.is_string()) {
      TERN_CHECK_ARG(static_cast<int64_t>(v.strings.size()) == v.num_elements(), "input '", alias,
                     "': ", v.type_string(), " needs ", v.num_elements(), " strings, got ",
                     v.strings.size());
    } else {
      TERN_CHECK_ARG(
          v.numbers.dtype() == *tern_dtype_of(v.dtype) && v.numbers.shape().dims() == v.shape,
          "input '", alias, "': ", v.type_string(), " holds a tensor of ",
          v.numbers.type().to_string());
    }
    if (batch < 0) {
      batch = v.shape[0];
      batch_alias = alias;
    } else if (v.shape[0] != batch) {
      throw_error(ErrorCode::kInvalidArgument, "input '", alias, "' has batch size ", v.shape[0],
                  " but input '", batch_alias, "' has ", batch);
    }
  }
  const ir::Graph& g = *contents_.graph;
  TensorMap out;
  auto label_rows = [&](const std::string& alias, const std::string& asset) {
    const std::vector<std::string>& names = labels_.at(asset);
    std::vector<std::string> rows;
    for (int64_t i = 0; i < batch; ++i) rows.insert(rows.end(), names.begin(), names.end());
    out[alias] = TensorValue::from_strings({batch, static_cast<int64_t>(names.size())}, rows);
  };
  if (batch == 0) {
    // Nothing to run: empty outputs of the signature's types.
    for (const auto& [alias, spec] : sig.signature.outputs) {
      if (auto l = sig.output_labels.find(alias); l != sig.output_labels.end()) {
        label_rows(alias, l->second);
        continue;
      }
      const ir::Value* v = g.outputs()[output_index_.at(sig.output_tensors.at(alias))].value;
      std::vector<int64_t> dims = v->shape().dims();
      if (dims.empty()) {  // a reduction over no rows
        out[alias] = TensorValue::from_tensor(Tensor::zeros(v->dtype(), Shape{}));
        continue;
      }
      dims[0] = 0;
      out[alias] = TensorValue::from_tensor(Tensor(v->dtype(), Shape(dims)));
    }
    return out;
  }
  const RunGraph rg = run_graph(signature);
  if (rg.graph->outputs().empty()) {  // class names only: nothing to run
    for (const auto& [alias, asset] : sig.output_labels) label_rows(alias, asset);
    return out;
  }
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (const auto& [alias, spec] : sig.signature.inputs) {
    const TensorValue& v = inputs.at(alias);
    const std::string& tensor = sig.input_tensors.at(alias);
    if (!rg.graph->find_input(tensor)) continue;  // fed but not read by the signature's outputs
    auto d = sig.decoders.find(alias);
    if (d != sig.decoders.end() && d->second.kind != DecoderKind::kNone) {
      // A request's bytes that do not decode are the client's error, not data loss here.
      try {
        feeds.emplace_back(
            tensor, decode_input(alias, d->second, v, g.find_input(tensor)->output()->type()));
      } catch (const Error& e) {
        if (e.code() == ErrorCode::kInvalidArgument) throw;
        throw_error(ErrorCode::kInvalidArgument, e.message());
      }
    } else {
      feeds.emplace_back(tensor, v.numbers);
    }
  }
  Lease lease = acquire(rg, batch);
  try {
    for (const auto& [name, t] : feeds) lease.exe->feed(name, t);
    lease.exe->run();
    for (const auto& [alias, spec] : sig.signature.outputs) {
      if (auto l = sig.output_labels.find(alias); l != sig.output_labels.end()) {
        label_rows(alias, l->second);
        continue;
      }
      size_t index = rg.output_index->at(sig.output_tensors.at(alias));
      out[alias] = TensorValue::from_tensor(lease.exe->output_host(index).clone());
    }
  } catch (...) {
    release(lease);
    throw;
  }
  release(lease);
  return out;
}

ServablePtr load_servable(const std::string& dir) {
  return std::make_shared<LoadedModel>(read_model_dir(dir));
}

}  // namespace tern::serve
