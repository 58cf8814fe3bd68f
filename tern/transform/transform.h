// tern/transform: TF Transform for tern (docs/transform.md). A `[transform]` spec (spec.h) is
// analyzed over the training split in one pass (analysis.h), becomes a graph in tern's IR
// (graph.h), is applied to TFRecords for training (apply.h) and is put in front of the trained
// model in the served model directory (export.h), so training and serving run one definition.
//
//   TransformSpec spec = read_transform_spec("examples/autos_transform.toml");
//   TransformAnalysis analysis = analyze(spec, {"train.tfrecord"});
//   write_transform_artifact(spec, analysis, "out/transform");
//   TransformArtifact artifact = read_transform_artifact("out/transform");
//   apply_transform(artifact, {"train.tfrecord"}, "out/transform/transformed/train/data.tfrecord");
//   ... train a model on `x` / `label` ...
//   export_with_transform(model, artifact, {}, "models/autos/1");
#pragma once

#include "tern/transform/analysis.h"
#include "tern/transform/apply.h"
#include "tern/transform/artifact.h"
#include "tern/transform/export.h"
#include "tern/transform/graph.h"
#include "tern/transform/spec.h"
