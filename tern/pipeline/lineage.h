// Lineage (`tern pipeline lineage ROOT TARGET`): where an artifact came from, read from the
// metadata store. From the target (a pushed version "serving:7", an artifact id "12" or
// "artifact:12", or an artifact's path) back through the execution that produced it to that
// execution's inputs, recursively, down to the external inputs (the raw files, the training
// config): "which data, schema, transform and config produced serving version 7, and what did it
// score?". A kCached execution reuses outputs without producing them, so the chain follows each
// artifact's COMPLETE producer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tern/pipeline/metadata_store.h"

namespace tern::pipeline {

struct LineageNode {
  std::string role;  // the role it played for the execution above ("" for the target)
  Artifact artifact;
  std::optional<Execution> producer;  // nullopt: an external input
  std::string run;                    // the producer's run context
  std::vector<LineageNode> inputs;    // the producer's inputs
  bool shown_above = false;           // reached twice: listed in full the first time only
  bool producer_shown_above = false;  // its producer made an artifact listed above: not repeated
  // An input that is another artifact's history, not this one's: the served model an evaluation
  // compared with ("baseline"), the previous run's statistics ("previous_statistics"). Shown, not
  // followed (its own lineage answers for it).
  bool reference = false;
};

// The artifact id `target` names. NotFound naming the target (and, for serving:N, the versions the
// store knows) when there is none; InvalidArgument for a malformed target.
int64_t resolve_lineage_target(MetadataStore& store, const std::string& target);

// The lineage tree of an artifact.
LineageNode lineage(MetadataStore& store, int64_t artifact_id);

// The answer first: every artifact of the tree by kind (model, training config, transform, schema,
// statistics, data splits, raw inputs, evaluation, blessing, ...), one line each with its id, path
// and main properties; then the indented chain (each producer under its output, "<-" marking
// "produced by").
std::string lineage_text(const LineageNode& root);
// The same tree as JSON: {"role", "artifact": {...}, "produced_by": {"execution": {...}, "run",
// "inputs": [...]}} ("shown_above": true for repeats), and "summary": {type: [artifact ids]}.
std::string lineage_json(const LineageNode& root);

}  // namespace tern::pipeline
