// `tern export` (a config's trained model as a served model directory) and `tern predict --model`
// (an exported model run on IDX images, no config needed).
#include <unistd.h>
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>

#include "tern/base/progress_line.h"
#include "tern/base/terminal.h"
#include "tern/config/export.h"
#include "tern/data/idx_dataset.h"
#include "tern/serve/model_dir.h"
#include "tools/tern/cli_parse.h"
#include "tools/tern/commands.h"

namespace tern::tools {
namespace {

bool numeric(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

void write_rows(std::ostream& os, const serve::TensorMap& out, int64_t offset) {
  const Tensor& scores =
      out.count("probabilities") ? out.at("probabilities").numbers : out.at("logits").numbers;
  int64_t rows = scores.shape().dim(0), k = scores.num_elements() / std::max<int64_t>(rows, 1);
  os << std::setprecision(6);
  for (int64_t r = 0; r < rows; ++r) {
    const float* p = scores.data<float>() + r * k;
    os << offset + r << "," << (std::max_element(p, p + k) - p);
    for (int64_t c = 0; c < k; ++c) os << "," << p[c];
    os << "\n";
  }
}

}  // namespace

int cmd_export(int argc, char** argv) {
  CLI::App app{
      "Export a config's trained model as a served model directory (graph, weights, "
      "signatures, preprocessing inside).",
      "tern export"};
  init_app(app);
  std::string config, out, weights;
  std::vector<std::string> sets;
  app.add_option("config", config, "training config (TOML)")->required();
  app.add_option("--out", out, "BASE/VERSION: the new version directory (VERSION numeric)")
      ->required();
  app.add_option("--set", sets, "override a config key (repeatable)");
  app.add_option("--weights", weights, "weights file (default: <output.dir>/weights.safetensors)");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  std::filesystem::path p = std::filesystem::path(out).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  if (!numeric(p.filename().string()))
    usage_error("--out must end in a numeric version directory (BASE/1), got '", out, "'");
  if (std::filesystem::exists(p)) {
    std::cerr << "tern export: version directory '" << out << "' already exists\n";
    return 1;
  }
  config::TrainConfig cfg = config::load_config(config, sets);
  serve::ExportReport r;
  {
    ProgressLine line(std::cerr, "export", "steps", config::kExportSteps,
                      is_interactive_terminal(STDERR_FILENO));
    r = config::export_from_config(
        cfg, p.string(), weights,
        [&](int step, const std::string& what) { line.update(step - 1, what); });
  }
  for (const auto& d : r.dropped) std::cout << "dropped random augmentation: " << d << "\n";
  std::cout << "exported " << p.string() << " (signatures:";
  for (const auto& s : r.signatures) std::cout << " " << s;
  std::cout << ")\nfingerprint: " << r.fingerprint << "\n";
  return 0;
}

int cmd_predict_model(int argc, char** argv) {
  CLI::App app{
      "Run an exported model directory on IDX images; writes CSV (index, predicted, "
      "probabilities or logits).",
      "tern predict --model"};
  init_app(app);
  std::string model, input = "/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz", output;
  int64_t limit = 10, batch = 256;
  app.add_option("--model", model, "exported model version directory")->required();
  app.add_option("--input", input, "IDX images file (raw pixels, as the model takes them)");
  app.add_option("--limit", limit, "number of images (-1 = all)");
  app.add_option("--batch", batch, "images per run");
  app.add_option("--output", output, "CSV file to write (default: stdout)");
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  if (limit == 0 || batch <= 0)
    usage_error("nothing to predict (--limit ", limit, ", --batch ", batch, ")");
  serve::ServablePtr s = serve::load(model);
  const serve::Signature& sig = s->signatures().at(serve::kDefaultSignature);
  TERN_CHECK_ARG(sig.inputs.size() == 1, "predict: ", model, " takes ", sig.inputs.size(),
                 " inputs; --model runs single-input models");
  const auto& [alias, spec] = *sig.inputs.begin();
  Tensor x = data::read_idx(input);
  int64_t n = x.shape().dim(0);
  if (limit >= 0) n = std::min(n, limit);
  std::ofstream file;
  if (!output.empty()) {
    file.open(output);
    TERN_CHECK_ARG(file.good(), "predict: cannot write '", output, "'");
  }
  std::ostream& os = output.empty() ? std::cout : file;
  for (int64_t begin = 0; begin < n; begin += batch) {
    int64_t end = std::min(n, begin + batch);
    serve::TensorValue v = serve::TensorValue::from_tensor(x.slice_rows(begin, end));
    if (v.dtype != spec.dtype) {
      auto d = serve::tern_dtype_of(spec.dtype);
      TERN_CHECK_ARG(d.has_value(), "predict: ", model, " input '", alias, "' is ",
                     serve::wire_dtype_name(spec.dtype), "; --input gives IDX numbers");
      v = serve::TensorValue::from_tensor(v.numbers.cast(*d));
    }
    write_rows(os, s->run(serve::kDefaultSignature, {{alias, v}}), begin);
  }
  return 0;
}

}  // namespace tern::tools
