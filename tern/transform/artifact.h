// The transform artifact: a directory holding
//   transform.toml   the [transform] table the analysis was made for
//   analysis.json    the analyzers' results (analysis.h)
//   transform.tern   the transform graph at batch 1 (graph.h), in the IR's text format
// (and, from `tern transform` / a pipeline, transformed/<split>/data.tfrecord). Each file is
// written atomically. Reading checks all three against each other: the analysis against the spec,
// and the graph file against the graph rebuilt from both (a hand-edited or stale transform.tern
// is refused, naming the first differing line).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "tern/ir/graph.h"
#include "tern/transform/analysis.h"
#include "tern/transform/spec.h"

namespace tern::transform {

inline constexpr const char* kSpecFile = "transform.toml";
inline constexpr const char* kAnalysisFile = "analysis.json";
inline constexpr const char* kGraphFile = "transform.tern";

struct TransformArtifact {
  TransformSpec spec;
  TransformAnalysis analysis;
  std::unique_ptr<ir::Graph> graph;      // at batch 1
  std::vector<int64_t> output_shape;     // x per example: [D] or [H, W, C]
  int64_t output_dim = 0;                // its element count
  std::vector<std::string> class_names;  // the label's classes (empty without a label)
  std::string dir;                       // where it was read ("" when made in memory)
};

// The artifact in memory (the graph built from the spec and analysis).
TransformArtifact make_transform_artifact(TransformSpec spec, TransformAnalysis analysis);

// Writes the three files into `dir` (created if missing; existing files are replaced).
void write_transform_artifact(const TransformSpec& spec, const TransformAnalysis& analysis,
                              const std::string& dir);

// Reads and cross-checks the three files. NotFound naming a missing file; InvalidArgument /
// DataLoss naming the file that is wrong.
TransformArtifact read_transform_artifact(const std::string& dir);

}  // namespace tern::transform
