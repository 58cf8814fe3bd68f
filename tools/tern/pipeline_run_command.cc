// `tern pipeline run FILE [--out DIR] [--only COMPONENT] [--no-cache]` and `tern pipeline lineage
// ROOT TARGET [--json]`: flags, exit statuses and printing around tern/pipeline (docs/pipeline.md).
// A bad pipeline file exits 2 before anything runs; validation that finds an error-severity
// anomaly exits 1 with the list; a model that is not blessed is a normal outcome (exit 0).
#include <CLI/CLI.hpp>

#include <filesystem>
#include <iomanip>
#include <iostream>

#include "tern/base/error.h"
#include "tern/pipeline/lineage.h"
#include "tern/pipeline/pipeline_file.h"
#include "tern/pipeline/push.h"
#include "tern/pipeline/runner.h"
#include "tools/tern/cli_parse.h"
#include "tools/tern/commands.h"

namespace tern::tools {
namespace {

namespace fs = std::filesystem;

struct RunFlags {
  std::string file, out, only;
  bool no_cache = false;
};

void add_run(CLI::App& app, RunFlags& f) {
  CLI::App* sub = app.add_subcommand(
      "run", "run a pipeline file's components in order (or one of them with --only)");
  sub->add_option("file", f.file, "pipeline file (TOML), e.g. examples/autos_pipeline.toml")
      ->required();
  sub->add_option("--out", f.out,
                  "pipeline root: artifacts, metadata.sqlite, serving/ (default: the file's "
                  "[pipeline] root, else runs/pipelines/NAME)");
  sub->add_option("--only", f.only,
                  "run one component (ingest, statistics, schema, validate, transform, train, "
                  "evaluate, push) on the latest successful outputs of its upstream components "
                  "in the store: one step of an external orchestrator");
  sub->add_flag("--no-cache", f.no_cache, "run every component even if a cached result exists");
  sub->footer(
      "A model that is not blessed is not pushed, and the run still exits 0. Validation\n"
      "that finds an error-severity anomaly stops the run before training: exit 1 with\n"
      "the list. A bad pipeline file exits 2 naming file:line and the key.");
}

int run(const RunFlags& f) {
  pipeline::PipelineSpec spec = pipeline::load_pipeline(f.file, f.out);  // ConfigError: exit 2
  pipeline::RunOptions options;
  options.only = f.only;
  options.use_cache = !f.no_cache;
  options.progress = &std::cout;
  std::cout << "pipeline " << spec.name << ": root " << spec.root << "\n";
  pipeline::RunReport r;
  try {
    r = pipeline::run_pipeline(spec, options);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kInvalidArgument && !f.only.empty()) usage_error(e.message());
    throw;
  }
  if (r.stopped_by_anomalies) {
    std::cerr << "tern pipeline: validation found " << r.anomalies.size() << " error anomal"
              << (r.anomalies.size() == 1 ? "y" : "ies")
              << "; the pipeline stopped before transform and training:\n";
    for (const std::string& a : r.anomalies) std::cerr << "  - " << a << "\n";
    return kExitError;
  }
  size_t cached = 0;
  for (const auto& c : r.components) cached += c.state == pipeline::ExecutionState::kCached;
  std::cout << "done: " << r.components.size() << " component"
            << (r.components.size() == 1 ? "" : "s") << ", " << cached << " cached; store "
            << (fs::path(r.root) / pipeline::kMetadataFile).string() << "\n";
  if (r.blessed && !*r.blessed) {
    std::optional<int64_t> v = pipeline::latest_served_version(spec.serving_base_path);
    std::cout << "not blessed: " << r.blessing_reason << "; not pushed (serving "
              << (v ? str_cat("version ", *v) : std::string("nothing")) << " under "
              << spec.serving_base_path << ", unchanged)\n";
  }
  if (r.pushed_version) {
    std::cout << "serving: version " << *r.pushed_version << " at " << r.pushed_path
              << "\n  tern serve --model_name " << spec.model_name << " --model_base_path "
              << spec.serving_base_path << "\n";
  }
  return kExitOk;
}

struct LineageFlags {
  std::string root, target;
  bool json = false;
};

void add_lineage(CLI::App& app, LineageFlags& f) {
  CLI::App* sub = app.add_subcommand(
      "lineage",
      "where an artifact came from: data, statistics, schema, transform, training config, "
      "evaluation and blessing behind a pushed version");
  sub->add_option("root", f.root, "pipeline root (holds metadata.sqlite), or the pipeline file")
      ->required();
  sub->add_option("target", f.target,
                  "serving:VERSION (a pushed version), an artifact id (12 or artifact:12), or an "
                  "artifact's path")
      ->required();
  sub->add_flag("--json", f.json, "print the lineage tree as JSON");
}

int lineage(const LineageFlags& f) {
  std::string root = f.root;
  std::error_code ec;
  if (fs::is_regular_file(root, ec)) root = pipeline::load_pipeline(root).root;
  pipeline::MetadataStore store((fs::path(root) / pipeline::kMetadataFile).string(),
                                /*create=*/false);
  int64_t id = 0;
  try {
    id = pipeline::resolve_lineage_target(store, f.target);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kInvalidArgument) usage_error(e.message());
    throw;
  }
  pipeline::LineageNode node = pipeline::lineage(store, id);
  std::cout << (f.json ? pipeline::lineage_json(node) : pipeline::lineage_text(node));
  return kExitOk;
}

}  // namespace

int cmd_pipeline(int argc, char** argv) {
  CLI::App app{
      "Run an ML pipeline from raw data to a served model: ingest -> statistics -> schema -> "
      "validate -> transform -> train -> evaluate -> push, each execution and artifact recorded "
      "in ROOT/metadata.sqlite, unchanged components reused from the cache (docs/pipeline.md).\n"
      "  tern pipeline run examples/autos_pipeline.toml\n"
      "  tern pipeline run examples/autos_pipeline.toml --only statistics\n"
      "  tern pipeline lineage runs/pipelines/autos serving:1",
      "tern pipeline"};
  init_app(app);
  app.require_subcommand(1);
  RunFlags run_flags;
  LineageFlags lineage_flags;
  add_run(app, run_flags);
  add_lineage(app, lineage_flags);
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  if (app.got_subcommand("run")) return run(run_flags);
  return lineage(lineage_flags);
}

}  // namespace tern::tools
