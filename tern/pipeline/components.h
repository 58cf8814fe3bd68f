// The components of a pipeline (make_component in component.cc picks one): ingest, statistics,
// schema and validate around the data side's library calls in data_components.cc;
// transform_component.cc, train_component.cc, evaluate_component.cc, push_component.cc.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tern/pipeline/component.h"

namespace tern::pipeline {

std::unique_ptr<Component> make_ingest_component();
std::unique_ptr<Component> make_statistics_component();
std::unique_ptr<Component> make_schema_component();
std::unique_ptr<Component> make_validate_component();
std::unique_ptr<Component> make_transform_component();
std::unique_ptr<Component> make_train_component();
std::unique_ptr<Component> make_evaluate_component();
std::unique_ptr<Component> make_push_component();

// train_component.cc: the `--set` overrides that make the user's training config the pipeline's
// ([data] over the transformed splits, [output] the artifact folder, then [train]'s keys).
std::vector<std::string> generated_overrides(const TrainSettings& settings, const Artifacts& inputs,
                                             const std::string& out_dir);

// The artifacts whose role starts with `prefix` ("examples:", "transformed:"), as (split,
// artifact), the train split first.
std::vector<std::pair<std::string, const Artifact*>> splits_of(const Artifacts& artifacts,
                                                               const std::string& prefix);

// The TFRecord files of a split folder (*.tfrecord), sorted; NotFound when there are none.
std::vector<std::string> tfrecord_files(const std::string& dir);

}  // namespace tern::pipeline
