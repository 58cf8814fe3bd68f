// export_model: trace the inference graph with preprocessing inside, check that it rebatches,
// write the model directory.
#include "tern/serve/export.h"

#include <nlohmann/json.hpp>

#include "tern/base/logging.h"
#include "tern/serve/rebatch.h"

namespace tern::serve {
namespace {

ir::Value* to_f32(ir::Graph& g, ir::Value* x, const std::string& name) {
  if (x->dtype() == DType::kF32) return x;
  return g.add("cast", {x}, {{"dtype", DType::kF32}}, name);
}

// A per-channel f32 constant [c] for the last axis (one value broadcasts to every channel).
ir::Value* channel_constant(ir::Graph& g, ir::Value* x, const std::vector<float>& v,
                            const std::string& name, bool reciprocal) {
  int64_t c = x->shape().rank() > 1 ? x->shape().dims().back() : 1;
  TERN_CHECK_ARG(v.size() == 1 || static_cast<int64_t>(v.size()) == c, "export: ", name, ": ",
                 v.size(), " values for a last axis of ", c, " (shape ", x->shape(), ")");
  std::vector<float> out(static_cast<size_t>(c));
  for (int64_t k = 0; k < c; ++k) {
    float f = v[v.size() == 1 ? 0 : static_cast<size_t>(k)];
    out[static_cast<size_t>(k)] = reciprocal ? 1.0f / f : f;
  }
  return g.constant(Tensor::from_vector(Shape{c}, out), name);
}

// One element function as graph ops on the batched value x (bit-identical to element_fns.cc's
// evaluation form); nullptr when the function is dropped.
ir::Value* apply_fn(ir::Graph& g, ir::Value* x, const data::ElementFnSpec& f, size_t i,
                    std::vector<std::string>* dropped) {
  std::string p = str_cat("preprocess/", i, "_", data::element_fn_name(f.kind));
  switch (f.kind) {
    case data::ElementFnKind::kScale: {
      ir::Value* y = to_f32(g, x, p + "/cast");
      return g.add(
          "mul",
          {y, g.constant(Tensor::scalar(DType::kF32, static_cast<float>(f.factor)), p + "/factor")},
          {}, p);
    }
    case data::ElementFnKind::kCast:
      return x->dtype() == f.dtype ? x : g.add("cast", {x}, {{"dtype", f.dtype}}, p);
    case data::ElementFnKind::kNormalize: {
      ir::Value* y = to_f32(g, x, p + "/cast");
      if (x->dtype() == DType::kU8)
        y = g.add("mul", {y, g.constant(Tensor::scalar(DType::kF32, 1.0f / 255.0f), p + "/u8")}, {},
                  p + "/to_unit");
      y = g.add("sub", {y, channel_constant(g, y, f.mean, p + "/mean", false)}, {}, p + "/center");
      return g.add("mul", {y, channel_constant(g, y, f.stddev, p + "/inv_std", true)}, {}, p);
    }
    case data::ElementFnKind::kReshape: {
      std::vector<int64_t> dims{nn::reshape_batch_dim(x->shape().dim(0))};
      dims.insert(dims.end(), f.shape.begin(), f.shape.end());
      return g.add("reshape", {x}, {{"shape", dims}}, p);
    }
    case data::ElementFnKind::kRandomFlip:
    case data::ElementFnKind::kRandomBrightness:
    case data::ElementFnKind::kRandomContrast:
      if (dropped) dropped->push_back(data::element_fn_name(f.kind));
      return x;
    default:
      throw_error(ErrorCode::kUnimplemented, "export: element function '",
                  data::element_fn_name(f.kind),
                  "' is not a graph step: the graph takes scale, cast, normalize and reshape; "
                  "decode, resize and crops run in the input decoder, right after the decode");
  }
}

std::vector<std::string> class_names(const ExportOptions& o, int64_t classes) {
  if (!o.class_names.empty()) {
    TERN_CHECK_ARG(static_cast<int64_t>(o.class_names.size()) == classes,
                   "export: ", o.class_names.size(), " class names for a model with ", classes,
                   " outputs");
    for (const auto& n : o.class_names)
      TERN_CHECK_ARG(n.find('\n') == std::string::npos, "export: class name '", n,
                     "' contains a newline");
    return o.class_names;
  }
  std::vector<std::string> out;
  for (int64_t k = 0; k < classes; ++k) out.push_back(std::to_string(k));
  return out;
}

TensorSpec batch_spec(const ir::Value* v, const std::string& tensor) {
  TensorSpec s;
  s.dtype = wire_dtype_of(v->dtype());
  s.shape = v->shape().dims();
  s.shape[0] = -1;
  s.name = tensor + ":0";
  return s;
}

}  // namespace

std::unique_ptr<ir::Graph> trace_inference_graph(nn::Model& model, const ExportOptions& o,
                                                 int64_t batch, std::vector<std::string>* dropped) {
  TERN_CHECK_ARG(batch >= 1, "export: batch must be >= 1, got ", batch);
  model.build();
  std::vector<TensorType> in_types = model.input_types();
  TERN_CHECK_ARG(in_types.size() == 1, "export: model '", model.name(), "' has ", in_types.size(),
                 " inputs; export supports single-input models");
  const TensorType& want = in_types[0];
  std::unique_ptr<ir::Graph> g;
  ir::Value* x = nullptr;
  if (o.front.graph) {
    // The front graph at this batch; its output feeds the model.
    g = rebatch(*o.front.graph, batch);
    for (const auto& out : g->outputs()) {
      if (out.name == o.front.output) x = out.value;
    }
    TERN_CHECK_ARG(x != nullptr, "export: the front graph has no output '", o.front.output, "'");
    g->clear_outputs();
  } else {
    Shape raw_shape = o.input.shape.rank() == 0 ? want.shape : o.input.shape;
    DType raw_dtype = o.input.dtype.value_or(
        o.input.decoder.kind == DecoderKind::kImage ? DType::kU8 : want.dtype);
    g = std::make_unique<ir::Graph>("serving");
    std::vector<int64_t> dims{batch};
    dims.insert(dims.end(), raw_shape.dims().begin(), raw_shape.dims().end());
    x = g->input(o.input.alias, {raw_dtype, Shape(dims)});
    for (size_t i = 0; i < o.input.preprocessing.size(); ++i) {
      const data::ElementFnSpec& f = o.input.preprocessing[i];
      if (f.component != 0) continue;
      data::validate_element_fn(f, str_cat("export: preprocessing step ", i));
      x = apply_fn(*g, x, f, i, dropped);
    }
  }
  if (x->dtype() != want.dtype) x = g->add("cast", {x}, {{"dtype", want.dtype}}, "to_model_dtype");
  if (x->shape().num_elements() / batch != want.shape.num_elements())
    throw_error(ErrorCode::kInvalidArgument, "export: preprocessed input is ", x->shape(),
                " per batch of ", batch, " but model '", model.name(), "' takes per-example ",
                want.shape);
  std::vector<int64_t> model_dims{-1};
  model_dims.insert(model_dims.end(), want.shape.dims().begin(), want.shape.dims().end());
  std::vector<int64_t> have = x->shape().dims();
  have[0] = -1;
  if (have != model_dims) x = g->add("reshape", {x}, {{"shape", model_dims}}, "to_model_shape");
  nn::LayerContext ctx{*g};
  std::vector<ir::Value*> outs = model.forward(ctx, std::vector<ir::Value*>{x});
  TERN_CHECK_ARG(outs.size() == 1, "export: model '", model.name(), "' has ", outs.size(),
                 " outputs; export supports single-output models");
  ir::Value* logits = outs[0];
  if (logits->dtype() != DType::kF32)
    logits = g->add("cast", {logits}, {{"dtype", DType::kF32}}, "output_f32");
  g->add_output("logits", logits);
  if (o.classifier) {
    TERN_CHECK_ARG(logits->shape().rank() == 2, "export: a classifier's output must be [batch, ",
                   "classes], model '", model.name(), "' gives ", logits->shape());
    g->add_output("probabilities",
                  g->add("softmax", {logits}, {{"axis", int64_t{-1}}}, "probabilities"));
    g->add_output("classes", g->add("argmax", {logits}, {{"axis", int64_t{-1}}}, "classes"));
  }
  return g;
}

ExportReport export_model(nn::Model& model, const ExportOptions& o, const std::string& dir) {
  ExportReport report;
  TERN_CHECK_ARG(o.trace_batch >= 1 && o.check_batch >= 1 && o.trace_batch != o.check_batch,
                 "export: trace_batch and check_batch must be distinct and >= 1");
  auto stage = [&](const std::string& what) {
    if (o.on_stage) o.on_stage(what);
  };
  ModelDirContents c;
  c.model_name = model.name();
  stage("tracing the inference graph");
  c.graph = trace_inference_graph(model, o, o.trace_batch, &report.dropped);
  stage(str_cat("self-check (traced again at batch ", o.check_batch, ")"));
  std::unique_ptr<ir::Graph> other = trace_inference_graph(model, o, o.check_batch);
  std::string diff;
  try {
    diff = first_graph_difference(*rebatch(*c.graph, o.check_batch), *other);
  } catch (const Error& e) {
    diff = e.what();
  }
  if (!diff.empty())
    throw_error(ErrorCode::kFailedPrecondition, "export: model '", model.name(),
                "' is not batch-polymorphic: its graph traced at batch ", o.trace_batch,
                " and rebuilt at ", o.check_batch, " differs from the graph traced at ",
                o.check_batch, ", first at ", diff,
                " (a layer bakes the batch size into an attribute)");
  for (const std::string& d : report.dropped)
    log_info("export: dropped random augmentation '", d, "' (identity when serving)");
  for (ir::Node* n : c.graph->nodes()) {
    if (n->op_name() != "variable") continue;
    const std::string& name = n->attrs().get_string("name");
    c.weights.emplace_back(name, model.variables().get(name).to_host());
  }
  c.assets = o.assets;
  // The predict signature.
  const ir::Graph& g = *c.graph;
  StoredSignature predict;
  if (o.front.graph) {
    for (ir::Node* input : g.nodes_of("input")) {
      const std::string& alias = input->attrs().get_string("name");
      auto d = o.front.decoders.find(alias);
      TensorSpec spec = batch_spec(input->output(), alias);
      if (d != o.front.decoders.end() && d->second.kind != DecoderKind::kNone) {
        spec = {WireDType::kString, {-1}, false, alias + ":0"};
        predict.decoders[alias] = d->second;
      }
      spec.nullable = o.front.nullable.count(alias) > 0;
      predict.signature.inputs[alias] = spec;
      predict.input_tensors[alias] = alias;
    }
  } else {
    ir::Node* input = g.find_input(o.input.alias);
    if (o.input.decoder.kind == DecoderKind::kNone) {
      predict.signature.inputs[o.input.alias] = batch_spec(input->output(), o.input.alias);
    } else {
      predict.signature.inputs[o.input.alias] = {
          WireDType::kString, {-1}, false, o.input.alias + ":0"};
      predict.decoders[o.input.alias] = o.input.decoder;
    }
    predict.input_tensors[o.input.alias] = o.input.alias;
  }
  for (const auto& out : g.outputs()) {
    predict.signature.outputs[out.name] = batch_spec(out.value, out.name);
    predict.output_tensors[out.name] = out.name;
  }
  c.signatures[kDefaultSignature] = predict;
  if (o.classifier && o.front.graph) {
    int64_t classes = g.outputs()[0].value->shape().dim(1);
    std::string names;
    for (const auto& n : class_names(o, classes)) names += n + "\n";
    c.assets["class_names.txt"] = names;
  }
  if (o.classifier && o.input.decoder.kind == DecoderKind::kNone && !o.front.graph) {
    int64_t classes = g.outputs()[0].value->shape().dim(1);
    std::string names;
    for (const auto& n : class_names(o, classes)) names += n + "\n";
    c.assets["class_names.txt"] = names;
    StoredSignature classify;
    classify.signature.method_name = kClassifyMethod;
    classify.signature.inputs["inputs"] = {WireDType::kString, {-1}, false, "inputs:0"};
    classify.input_tensors["inputs"] = o.input.alias;
    classify.decoders["inputs"] = {DecoderKind::kExample, o.example_feature, 0};
    classify.signature.outputs["scores"] = batch_spec(g.outputs()[1].value, "probabilities");
    classify.output_tensors["scores"] = "probabilities";
    classify.signature.outputs["classes"] = {WireDType::kString, {-1, classes}, false, ""};
    classify.output_labels["classes"] = "class_names.txt";
    c.signatures["classify"] = classify;
  }
  // What the decoder and the graph do before the model, for people reading the directory.
  nlohmann::json decoder_steps = nlohmann::json::array();
  if (o.input.decoder.height > 0)
    decoder_steps.push_back(
        {{"fn", "image_dir_decode"}, {"size", {o.input.decoder.height, o.input.decoder.width}}});
  for (const auto& f : o.input.decoder.steps)
    decoder_steps.push_back({{"fn", data::element_fn_name(f.kind)}, {"size", {f.height, f.width}}});
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& f : o.input.preprocessing) {
    if (f.component != 0) continue;
    nlohmann::json s = {{"fn", data::element_fn_name(f.kind)}};
    if (f.kind == data::ElementFnKind::kScale) s["factor"] = f.factor;
    if (f.kind == data::ElementFnKind::kNormalize) {
      s["mean"] = f.mean;
      s["std"] = f.stddev;
    }
    if (f.kind == data::ElementFnKind::kCast) s["dtype"] = std::string(dtype_name(f.dtype));
    if (f.kind == data::ElementFnKind::kReshape) s["shape"] = f.shape;
    if (data::element_fn_is_random(f.kind)) s["dropped"] = true;
    steps.push_back(s);
  }
  if (o.front.graph) {
    nlohmann::json inputs = nlohmann::json::array();
    for (const auto& [alias, spec] : predict.signature.inputs) inputs.push_back(alias);
    c.assets["preprocessing.json"] = nlohmann::json({{"front", o.front.description},
                                                     {"inputs", inputs},
                                                     {"output", o.front.output}})
                                         .dump(2) +
                                     "\n";
  } else {
  c.assets["preprocessing.json"] =
      nlohmann::json({{"input", o.input.alias},
                      {"decoder", std::string(decoder_kind_name(o.input.decoder.kind))},
                      {"decoder_steps", decoder_steps},
                      {"steps", steps}})
          .dump(2) +
      "\n";
  }
  for (const auto& [name, s] : c.signatures) report.signatures.push_back(name);
  stage("writing the model directory");
  report.fingerprint = write_model_dir(c, dir);
  return report;
}

}  // namespace tern::serve
