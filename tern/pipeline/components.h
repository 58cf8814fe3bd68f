// The components of a pipeline, one file each (make_component in component.cc picks one):
// ingest_component.cc, statistics_component.cc, schema_component.cc, validate_component.cc,
// transform_component.cc, train_component.cc, evaluate_component.cc, push_component.cc.
#pragma once

#include <memory>

#include "tern/pipeline/component.h"

namespace tern::pipeline {

std::unique_ptr<Component> make_push_component();

}  // namespace tern::pipeline
