// Model evaluation (TFX's Evaluator) as plain computations: metrics over predictions (accuracy,
// mean cross-entropy loss, per-class precision / recall), the same per slice (per value of a
// feature), the blessing decision (absolute thresholds, and no regression beyond a tolerance
// against the model being served), and the reports: evaluation.json and evaluation.md, which says
// why the model was or was not blessed. The evaluate component (evaluate_component.cc) feeds it
// the served candidate's outputs on the raw eval split.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "tern/pipeline/pipeline_file.h"

namespace tern::pipeline {

// One evaluated example: its true class, the model's logits, and its slice values
// (feature -> value as text).
struct EvalRow {
  int64_t label = 0;
  std::vector<float> logits;
  std::map<std::string, std::string> slices;
};

struct Metrics {
  int64_t count = 0;
  double accuracy = 0;
  double loss = 0;  // mean sparse categorical cross-entropy of the logits
};

struct ClassMetrics {
  std::string name;
  int64_t support = 0;  // examples of the class
  double precision = 0, recall = 0;
};

struct SliceMetrics {
  std::string feature, value;
  Metrics metrics;
};

struct BlessingCheck {
  std::string name;  // "accuracy >= threshold", "loss <= threshold", "no regression"
  bool passed = false;
  std::string detail;
};

struct Baseline {
  int64_t version = 0;
  std::string path;
  std::optional<Metrics> metrics;  // nullopt: it could not be evaluated on this data
  std::string error;
};

struct Evaluation {
  std::string model_name;
  Metrics overall;
  std::vector<ClassMetrics> per_class;
  std::vector<SliceMetrics> slices;  // by feature (in slice_by order), then by count
  std::optional<Baseline> baseline;
  std::vector<BlessingCheck> checks;
  bool blessed = false;
  std::string reason;  // one line: the failed checks, or what passed
};

Metrics compute_metrics(const std::vector<EvalRow>& rows);
// Rows' labels index `class_names`.
std::vector<ClassMetrics> per_class_metrics(const std::vector<EvalRow>& rows,
                                            const std::vector<std::string>& class_names);
std::vector<SliceMetrics> slice_metrics(const std::vector<EvalRow>& rows,
                                        const std::vector<std::string>& slice_by);

// The checks and the decision (fills checks, blessed, reason).
void decide_blessing(const EvaluateSettings& settings, Evaluation& e);

// The JSON holds every metric computed; the markdown shows the loss row only when settings.metrics
// names "loss" (accuracy always: blessing reads it), per class when the evaluation has it.
std::string evaluation_json(const Evaluation& e, const EvaluateSettings& settings);
std::string evaluation_markdown(const Evaluation& e, const EvaluateSettings& settings);

}  // namespace tern::pipeline
