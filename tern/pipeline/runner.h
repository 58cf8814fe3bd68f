// Runs a pipeline (docs/pipeline.md): the components of a pipeline file in dependency order, or
// one of them (--only: its inputs are the latest successful outputs of its upstream components in
// the store), recording every execution and artifact in ROOT/metadata.sqlite.
//
//   - One run at a time per root: ROOT/.lock is held (flock) while a run writes. A RUNNING
//     execution found at the start belongs to a run that died (kill -9): it is marked ABANDONED,
//     its output folder is removed and the component runs again; completed components are reused
//     through the cache.
//   - Cache key = SHA-256 over the component's name, its resolved settings (canonical JSON), the
//     content hashes of its inputs by role, and tern's version. A COMPLETE execution with the same
//     key whose outputs are still on disk with the same content hash is reused: the component is
//     skipped and a CACHED execution linked to the same outputs is recorded. no_cache forces runs.
//   - Validation that finds an error-severity anomaly stops the run before transform and training
//     (RunReport::stopped_by_anomalies). A model that is not blessed is not pushed (a normal
//     outcome).
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tern/pipeline/component.h"
#include "tern/pipeline/metadata_store.h"
#include "tern/pipeline/pipeline_file.h"

namespace tern::pipeline {

struct RunOptions {
  std::string only;                  // run this component alone
  bool use_cache = true;             // false: --no-cache
  std::ostream* progress = nullptr;  // one line per component (nullptr: silent)
  // The components (tests substitute their own); default make_component.
  std::function<std::unique_ptr<Component>(const std::string&)> factory;
};

struct ComponentReport {
  std::string component;
  ExecutionState state = ExecutionState::kComplete;  // kComplete or kCached
  int64_t execution_id = 0;
  int64_t reused_execution_id = 0;  // kCached: the execution whose outputs were reused
  std::string summary;
  double seconds = 0;
  Artifacts outputs;
};

struct RunReport {
  std::string root;
  std::string run_id;
  std::vector<ComponentReport> components;
  std::vector<Execution> abandoned;  // RUNNING executions of a dead run, settled at the start
  bool stopped_by_anomalies = false;
  std::vector<std::string> anomalies;  // error-severity anomalies, one line each
  std::optional<bool> blessed;
  std::string blessing_reason;
  std::optional<int64_t> pushed_version;
  std::string pushed_path;
};

// The cache key of a component run (hex SHA-256).
std::string cache_key(const std::string& component, const std::string& settings_json,
                      const Artifacts& inputs);

// Runs the pipeline. InvalidArgument for an --only component the file lacks; FailedPrecondition
// naming what is missing when --only finds no successful upstream output; Unavailable when another
// run holds the root; a component's own error (after recording it as FAILED) otherwise.
RunReport run_pipeline(const PipelineSpec& spec, const RunOptions& options = {});

}  // namespace tern::pipeline
