// `tern transform SPEC.toml --train FILE... --out DIR [--apply NAME=FILE...]` (analyze, write the
// artifact, apply it to splits) and `tern transform SPEC.toml --artifact DIR --apply NAME=FILE...`
// (apply an existing analysis): flags and printing around tern/transform (docs/transform.md).
// A bad spec or flag exits 2 before any file is read.
#include <CLI/CLI.hpp>

#include <chrono>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <map>

#include "tern/base/error.h"
#include "tern/transform/transform.h"
#include "tools/tern/cli_parse.h"
#include "tools/tern/commands.h"

namespace tern::tools {
namespace {

bool plain_name(const std::string& s) {
  if (s.empty() || s == "." || s == "..") return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.')
      return false;
  }
  return true;
}

// NAME=FILE flags -> NAME -> files, in the order the names first appear.
std::vector<std::pair<std::string, std::vector<std::string>>> apply_splits(
    const std::vector<std::string>& flags) {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (const std::string& f : flags) {
    const size_t eq = f.find('=');
    if (eq == std::string::npos || eq + 1 == f.size())
      usage_error("--apply takes NAME=FILE (a split name and a TFRecord file), got '", f, "'");
    const std::string name = f.substr(0, eq), file = f.substr(eq + 1);
    if (!plain_name(name))
      usage_error("--apply '", f, "': the split name must be letters, digits, '_', '-' or '.'");
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& s) { return s.first == name; });
    if (it == out.end()) {
      out.push_back({name, {file}});
    } else {
      it->second.push_back(file);
    }
  }
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

void print_analysis(const transform::TransformSpec& spec, const transform::TransformAnalysis& a) {
  for (size_t k = 0; k < spec.features.size(); ++k) {
    const transform::FeatureTransform& f = spec.features[k];
    const transform::FeatureAnalysis& fa = a.features[k];
    std::cout << "  " << std::left << std::setw(18) << f.name << std::setw(13)
              << transform::transform_op_name(f.op);
    switch (f.op) {
      case transform::TransformOp::kZScore:
        std::cout << "mean " << fa.mean << ", std " << fa.std;
        break;
      case transform::TransformOp::kScaleTo01:
        std::cout << "min " << fa.min << ", max " << fa.max;
        break;
      case transform::TransformOp::kIdentity:
        std::cout << "mean " << fa.mean;
        break;
      case transform::TransformOp::kBucketize:
        std::cout << fa.boundaries.size() + 1 << " buckets"
                  << (fa.quantile_rank_error > 0
                          ? str_cat(" (rank error <= ", fa.quantile_rank_error * 100, "%)")
                          : "");
        break;
      case transform::TransformOp::kVocabulary:
        std::cout << fa.vocabulary.size() << " of " << fa.unique << " values kept, "
                  << f.num_oov_buckets << " OOV bucket(s)";
        break;
      case transform::TransformOp::kHash:
      case transform::TransformOp::kCross:
        std::cout << f.hash_buckets << " hash buckets";
        break;
    }
    if (fa.missing > 0) std::cout << "; missing in " << fa.missing << " records";
    std::cout << "\n";
  }
  if (!a.label.feature.empty())
    std::cout << "  label " << a.label.feature << ": " << a.label.num_classes << " classes ("
              << (a.label.bytes ? "bytes, vocabulary" : "int64") << ")\n";
}

}  // namespace

int cmd_transform(int argc, char** argv) {
  CLI::App app{
      "Analyze a [transform] spec over training TFRecords (one pass), write the transform "
      "artifact (transform.toml, analysis.json, transform.tern) and apply it to splits; or "
      "apply an existing artifact. Transformed splits go to DIR/transformed/NAME/data.tfrecord "
      "(features x and label).\n"
      "  tern transform spec.toml --train train.tfrecord --out out/transform \\\n"
      "      --apply train=train.tfrecord --apply eval=eval.tfrecord\n"
      "  tern transform spec.toml --artifact out/transform --apply test=test.tfrecord",
      "tern transform"};
  init_app(app);
  std::string spec_path, out, artifact_dir;
  std::vector<std::string> train, apply;
  int threads = 0;
  app.add_option("spec", spec_path, "a TOML file with a [transform] table")->required();
  app.add_option("--train", train, "training TFRecord files to analyze (one pass)");
  app.add_option("--out", out,
                 "the artifact directory to write (with --train); with --artifact, where the "
                 "transformed splits go (default: the artifact)");
  app.add_option("--artifact", artifact_dir, "an existing artifact to apply instead of analyzing");
  app.add_option("--apply", apply, "NAME=FILE: transform FILE into split NAME (repeatable)");
  app.add_option("--threads", threads, "analysis threads (default: every core)")
      ->check(CLI::Range(0, 1024));
  if (int rc = parse(app, argc, argv); rc >= 0) return rc;
  if (train.empty() == artifact_dir.empty())
    usage_error(train.empty() ? "needs --train FILE... (analyze) or --artifact DIR (apply an "
                                "existing analysis)"
                              : "--train and --artifact exclude each other");
  if (!train.empty() && out.empty()) usage_error("--train needs --out DIR (the artifact)");
  if (!artifact_dir.empty() && apply.empty())
    usage_error("--artifact needs --apply NAME=FILE (nothing to do otherwise)");
  const auto splits = apply_splits(apply);

  transform::TransformSpec spec;
  try {
    spec = transform::read_transform_spec(spec_path);
  } catch (const transform::SpecError& e) {
    throw UsageError(e.what());
  }
  transform::TransformArtifact artifact;
  std::string dir = out;
  if (!train.empty()) {
    const auto start = std::chrono::steady_clock::now();
    transform::TransformAnalysis analysis =
        transform::analyze(spec, train, {.threads = threads});
    const double s = seconds_since(start);
    std::cout << "analyzed " << analysis.records << " records (" << std::fixed
              << std::setprecision(1) << analysis.bytes / 1e6 << " MB) of " << train.size()
              << " file(s) in " << std::setprecision(2) << s << " s ("
              << std::setprecision(1) << analysis.bytes / 1e6 / std::max(s, 1e-9)
              << " MB/s)\n";
    std::cout.unsetf(std::ios::fixed);
    std::cout << std::setprecision(6);
    print_analysis(spec, analysis);
    transform::write_transform_artifact(spec, analysis, out);
    std::cout << "wrote " << out << "/{" << transform::kSpecFile << ", "
              << transform::kAnalysisFile << ", " << transform::kGraphFile << "}\n";
    artifact = transform::make_transform_artifact(std::move(spec), std::move(analysis));
  } else {
    artifact = transform::read_transform_artifact(artifact_dir);
    if (artifact.spec.toml != spec.toml)
      usage_error(spec_path, " is not the spec of ", artifact_dir, "/", transform::kSpecFile,
                  " (analyze again with --train)");
    if (dir.empty()) dir = artifact_dir;
  }
  std::cout << "x: " << artifact.output_dim << " values per example";
  if (artifact.output_shape.size() > 1) {
    std::cout << " (shape";
    for (int64_t d : artifact.output_shape) std::cout << " " << d;
    std::cout << ")";
  }
  std::cout << "\n";
  for (const auto& [name, files] : splits) {
    const std::string path = str_cat(dir, "/transformed/", name, "/data.tfrecord");
    const auto start = std::chrono::steady_clock::now();
    const int64_t n = transform::apply_transform(artifact, files, path);
    std::cout << "transformed " << name << ": " << n << " records -> " << path << " ("
              << std::fixed << std::setprecision(2) << seconds_since(start) << " s)\n";
    std::cout.unsetf(std::ios::fixed);
  }
  return 0;
}

}  // namespace tern::tools
