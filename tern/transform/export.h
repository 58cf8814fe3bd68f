// export_with_transform: a model trained on the transform's output, exported as a served model
// directory (tern/serve/model_dir.h) whose graph is the transform graph followed by the model's
// inference graph, so the server takes the RAW features by name (docs/transform.md, "Serving"):
//   numeric      DT_FLOAT [-1] (or [-1, n]); missing: NaN, or over REST null / the key left out
//   categorical  DT_STRING [-1] (the fingerprint decoder turns each string into the graph's i64);
//                missing: "" or null / left out
//   image        DT_UINT8 [-1, H, W, C] raw pixels
// Outputs as serve::export_model's classifier: logits, probabilities, classes; the class names
// (the label's vocabulary, or 0 .. K-1) in assets/class_names.txt; the spec and the analysis in
// assets/transform.toml and assets/transform_analysis.json.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tern/nn/model.h"
#include "tern/serve/export.h"
#include "tern/transform/artifact.h"

namespace tern::transform {

struct TransformExportOptions {
  bool classifier = true;                     // probabilities and classes outputs
  std::vector<std::string> class_names;       // default: the artifact's label classes
  std::map<std::string, std::string> assets;  // extra files for assets/
  int64_t trace_batch = 1;
  int64_t check_batch = 3;
};

// The model's input must take the transform's output (its element count per example; it is
// reshaped to the model's input shape). Writes `dir` atomically (FailedPrecondition if it exists).
serve::ExportReport export_with_transform(nn::Model& model, const TransformArtifact& artifact,
                                          const TransformExportOptions& options,
                                          const std::string& dir);

// The serve::ExportOptions export_with_transform uses (for callers composing their own export).
serve::ExportOptions transform_export_options(const TransformArtifact& artifact,
                                              const TransformExportOptions& options);

}  // namespace tern::transform
