// The one-line pipeline language of `tern data bench`, parsed into a PipelineSpec (built like the
// [data] section of a config: pipeline_spec.h). Stages are separated by '|'; the first is the
// source, the others transforms, each `name positional... key=value...`:
//
//   images DIR | shuffle 1024 | decode | crop 56 56 | flip | normalize mean=0.5 std=0.5 |
//   batch 128 | prefetch
//
// Sources: images DIR (an image folder: (path, label)), files PATTERN... (paths), tfrecord
// FILE... [compression=gzip], idx IMAGES [LABELS].
// Transforms (each one TransformSpec; consecutive maps run as one map stage when built):
//   parse_example [FEATURE...]  parse (FixedLen specs inferred from the first record; bytes lists
//                               of several values and empty lists become VarLen)
//   decode [channels=C]         map read_image (paths) or decode_image (encoded bytes)
//   resize H W                  map resize (bilinear)
//   crop H W                    map random_crop
//   flip                        map random_flip
//   brightness MAX_DELTA        map random_brightness
//   contrast LOWER UPPER        map random_contrast
//   normalize [mean=A,B,C] [std=A,B,C]   map normalize (default mean 0, std 1)
//   shuffle N [seed=S], batch N [drop_remainder], prefetch [N], repeat [N], take N, skip N, cache
// Maps run on `map_threads` threads with seed `seed` + their transform index; shuffles default to
// `seed`; shuffle and repeat apply in training only, as in a config. A mistake is an
// InvalidArgument naming the stage and its position ("pipeline stage 3 'crop 56': ...").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "tern/data/pipeline_spec.h"

namespace tern::data {

struct PipelineLineOptions {
  int64_t map_threads = kAutotune;
  uint64_t seed = 0;
};

struct PipelineLine {
  PipelineSpec spec;
  std::vector<std::string> inputs;  // the source's paths, for build_input_pipeline
};

PipelineLine parse_pipeline_line(const std::string& line, const PipelineLineOptions& options = {});

}  // namespace tern::data
