// The input-pipeline keys of a config's [data] section (data.source, [data.features],
// [data.csv], [data.image_dir], [[data.transforms]]) read into TrainConfig::pipeline, a plain
// data::PipelineSpec that tern/data builds. Unknown ops, functions and keys are errors naming the
// file, the line and the closest valid name. Documented in docs/config.md.
#pragma once

#include "tools/tern/config.h"
#include "tools/tern/config_section.h"

namespace tern::tools {

// Reads the pipeline keys of `data` (the [data] table) into c.pipeline. Runs after [training]
// is read: batch sizes, seeds and one_hot depths default to c.batch_size, c.seed and
// c.num_classes. Without data.source, only checks that no pipeline-only key is present.
void read_pipeline_config(Section& data, TrainConfig& c);

// Its [[data.transforms]] part (pipeline_transforms_config.cc): appends to c.pipeline.spec and
// adds the batch and prefetch a pipeline lacks. Needs c.pipeline.source.
void read_pipeline_transforms(Section& data, TrainConfig& c);

}  // namespace tern::tools
