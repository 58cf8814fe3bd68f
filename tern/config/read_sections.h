// The readers of a config's sections, one per table, run by load_config in this order: model,
// training, data (its pipeline keys default to training's batch size and seed), loss, optimizer,
// schedule, output, callbacks (their paths default under output.dir). Each reads its keys into
// the TrainConfig, checks their values (errors name the file, the line and the key) and finishes
// its table. Internal to tern/config: Section wraps toml++.
#pragma once

#include "tern/config/config.h"
#include "tern/config/config_section.h"

namespace tern::config {

// read_sections.cc
void read_model(Section& top, TrainConfig& cfg);
void read_training(Section& top, TrainConfig& cfg);
void read_data(Section& top, TrainConfig& cfg);
void read_loss(Section& top, TrainConfig& cfg);
void read_distribute(Section& top, TrainConfig& cfg);
void read_output(Section& top, TrainConfig& cfg);

// read_optimizer.cc: [optimizer] and [schedule], keys checked against the chosen name.
void read_optimizer(Section& top, TrainConfig& cfg);
void read_schedule(Section& top, TrainConfig& cfg);

// read_callbacks.cc
void read_callbacks(Section& top, TrainConfig& cfg);

// read_pipeline.cc: the input-pipeline keys of [data] (data.source, [data.features], [data.csv],
// [data.image_dir]) into cfg.data.pipeline. Without data.source, only checks that no pipeline-only
// key is present.
void read_pipeline(Section& data, TrainConfig& cfg);

// read_transforms.cc: [[data.transforms]]; appends to cfg.data.pipeline and adds the batch and
// prefetch a pipeline lacks. Needs cfg.data.source.
void read_pipeline_transforms(Section& data, TrainConfig& cfg);

}  // namespace tern::config
