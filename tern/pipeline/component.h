// A pipeline component as the runner (runner.h) sees it: which upstream outputs it reads, which
// other inputs it has (external files, the served model it is compared with), how it runs into its
// own output folder, and the one-line summary of its outputs. The runner does the rest: input
// resolution (this run's outputs, or with --only the latest successful ones in the store), the
// cache key, the cache lookup, the store records and the progress line.
//
// Roles name what an artifact is to its consumers; every role has one producer:
//   ingest      examples:<split> (Examples)            statistics  statistics (ExampleStatistics)
//   schema      schema (Schema)                        validate    anomalies (ExampleAnomalies)
//   transform   transform (TransformGraph), transformed:<split> (TransformedExamples)
//   train       model (Model)
//   evaluate    evaluation (ModelEvaluation), candidate (ExportedModel), blessing (ModelBlessing)
//   push        pushed (PushedModel)
// and external inputs: input:<i> (ExternalFile), pinned_schema, training_config, baseline
// (PushedModel or ServedModel), previous_statistics.
#pragma once

#include <iosfwd>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "tern/pipeline/metadata_store.h"
#include "tern/pipeline/pipeline_file.h"

namespace tern::pipeline {

using Artifacts = std::map<std::string, Artifact>;  // role -> artifact

// What a component reads from one upstream component: the roles (a trailing ':' matches every
// role with that prefix, e.g. "examples:").
struct UpstreamRoles {
  std::string component;
  std::vector<std::string> roles;
};

struct ComponentRun {
  const PipelineSpec& spec;
  MetadataStore& store;
  const Artifacts& inputs;
  std::string dir;  // the execution's output folder (exists, empty): ROOT/artifacts/NAME/ID
  int64_t execution_id = 0;
};

struct ComponentOutput {
  // Artifacts to record: type, uri and properties (content hashes are the runner's).
  std::vector<RoleArtifact> outputs;
  std::string summary;  // the progress line's result
};

class Component {
 public:
  virtual ~Component() = default;
  virtual std::string name() const = 0;
  virtual std::vector<UpstreamRoles> upstream(const PipelineSpec& spec) const = 0;
  // Inputs that are no upstream outputs, added to `inputs` (hashed now): external files, the
  // served baseline model, the previous statistics. Default: none.
  virtual void add_inputs(const PipelineSpec& spec, MetadataStore& store, Artifacts& inputs) const;
  virtual ComponentOutput run(ComponentRun& run) const = 0;
  // The result line for outputs reused from the cache, from their properties.
  virtual std::string summarize(const Artifacts& outputs) const = 0;
  // Why the pipeline must stop after this component's outputs (validation's error-severity
  // anomalies, one line each); empty: go on. Default: never stops.
  virtual std::vector<std::string> stop_reasons(const Artifacts& outputs) const;
};

// The component that implements `name` (one of component_names()).
std::unique_ptr<Component> make_component(const std::string& name);

// An artifact for an external file or folder (type ExternalFile unless given), hashed now.
Artifact external_artifact(const std::string& path, const std::string& type = "ExternalFile");

}  // namespace tern::pipeline
