// The transform artifact directory: write, read and cross-check.
#include "tern/transform/artifact.h"

#include <filesystem>

#include "tern/base/error.h"
#include "tern/io/atomic_file.h"
#include "tern/ir/parser.h"
#include "tern/ir/printer.h"
#include "tern/serve/rebatch.h"
#include "tern/transform/graph.h"

namespace tern::transform {

namespace fs = std::filesystem;

namespace {

constexpr uint64_t kMaxFileBytes = uint64_t{1} << 30;

std::string read_part(const std::string& dir, const char* name) {
  const std::string path = dir + "/" + name;
  if (!fs::is_regular_file(path))
    throw_error(ErrorCode::kNotFound, path, ": missing (not a transform artifact directory: it "
                "holds ", kSpecFile, ", ", kAnalysisFile, " and ", kGraphFile, ")");
  return io::read_file(path, kMaxFileBytes);
}

}  // namespace

TransformArtifact make_transform_artifact(TransformSpec spec, TransformAnalysis analysis) {
  TransformArtifact a;
  a.graph = build_transform_graph(spec, analysis, 1);
  a.output_shape = transform_output_shape(spec, analysis);
  a.output_dim = 1;
  for (int64_t d : a.output_shape) a.output_dim *= d;
  a.class_names = analysis.label.class_names();
  a.spec = std::move(spec);
  a.analysis = std::move(analysis);
  return a;
}

void write_transform_artifact(const TransformSpec& spec, const TransformAnalysis& analysis,
                              const std::string& dir) {
  const std::string graph = ir::print_graph(*build_transform_graph(spec, analysis, 1));
  fs::create_directories(dir);
  io::write_file_atomically(dir + "/" + kSpecFile, spec.toml);
  io::write_file_atomically(dir + "/" + kAnalysisFile, analysis_to_json(analysis));
  io::write_file_atomically(dir + "/" + kGraphFile, graph);
}

TransformArtifact read_transform_artifact(const std::string& dir) {
  if (!fs::is_directory(dir))
    throw_error(ErrorCode::kNotFound, "transform artifact '", dir, "' is not a directory");
  const std::string spec_text = read_part(dir, kSpecFile);
  const std::string analysis_text = read_part(dir, kAnalysisFile);
  const std::string graph_text = read_part(dir, kGraphFile);
  TransformSpec spec = parse_transform_spec(spec_text, dir + "/" + kSpecFile);
  TransformAnalysis analysis =
      parse_analysis_json(analysis_text, spec, dir + "/" + kAnalysisFile);
  const std::string graph_file = dir + "/" + kGraphFile;
  std::unique_ptr<ir::Graph> stored = ir::parse_graph(graph_text, graph_file);
  TransformArtifact a = make_transform_artifact(std::move(spec), std::move(analysis));
  std::string diff = serve::first_graph_difference(*stored, *a.graph);
  if (!diff.empty())
    throw_error(ErrorCode::kDataLoss, graph_file, ": does not match the graph built from ",
                kSpecFile, " and ", kAnalysisFile, " (edited, or left from another analysis): ",
                diff);
  a.dir = dir;
  return a;
}

}  // namespace tern::transform
