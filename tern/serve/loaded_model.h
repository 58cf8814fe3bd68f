// LoadedModel: a model directory (model_dir.h) as a Servable. The graph is stored at one batch
// size, its variables folded in once as constants (runtime::fold_frozen_variables: batch norms
// into the convolutions before them); the first request of another size compiles rebatch(graph, n)
// (rebatch.h) into an Executable. A signature that feeds only some of the graph's inputs runs its
// own part of the graph (prune_to_outputs). Executables are kept per (graph, batch size) (at most
// kMaxBatchSizes of them, the least recently used dropped first), each with a small pool so
// concurrent run() calls never share one (at most kMaxIdlePerSize kept idle). DT_STRING inputs with
// a decoder are decoded on the host before the graph (tf.Example features, JPEG / PNG images,
// categorical strings to their i64 fingerprint64); label outputs are class names from an asset
// file, one row per example.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "tern/runtime/executable.h"
#include "tern/runtime/variable_store.h"
#include "tern/serve/model_dir.h"

namespace tern::serve {

class LoadedModel : public Servable {
 public:
  static constexpr size_t kMaxBatchSizes = 16;
  static constexpr size_t kMaxIdlePerSize = 4;

  // Takes validated contents (read_model_dir).
  explicit LoadedModel(ModelDirContents contents);
  ~LoadedModel() override;

  const SignatureMap& signatures() const override { return signatures_; }
  TensorMap run(const std::string& signature, const TensorMap& inputs) const override;
  std::string fingerprint() const override { return contents_.fingerprint; }

  // The directory's contents as loaded: the graph with its weights folded in as constants (the
  // weights list itself is then empty).
  const ModelDirContents& contents() const { return contents_; }
  // Batch sizes with compiled executables right now (tests).
  size_t compiled_batch_sizes() const;

 private:
  struct Pool;
  struct Lease;
  // The graph a signature runs: the whole graph (key "") or its pruned part (key = signature).
  struct RunGraph {
    std::string key;
    const ir::Graph* graph = nullptr;
    const std::map<std::string, size_t>* output_index = nullptr;  // graph output -> index
  };
  struct PrunedGraph {
    std::unique_ptr<ir::Graph> graph;
    std::map<std::string, size_t> output_index;
  };
  RunGraph run_graph(const std::string& signature) const;
  Lease acquire(const RunGraph& rg, int64_t batch) const;
  void release(Lease& lease) const;
  Tensor decode_input(const std::string& alias, const InputDecoder& decoder,
                      const TensorValue& value, const TensorType& graph_type) const;

  ModelDirContents contents_;
  SignatureMap signatures_;
  mutable runtime::VariableStore vars_;
  std::map<std::string, size_t> output_index_;              // graph output -> index
  std::map<std::string, PrunedGraph> pruned_;               // signature -> its part of the graph
  std::map<std::string, std::vector<std::string>> labels_;  // asset -> class names
  mutable std::mutex mu_;
  mutable std::mutex compile_mu_;
  mutable std::map<std::pair<std::string, int64_t>, std::shared_ptr<Pool>> pools_;
  mutable uint64_t tick_ = 0;
};

}  // namespace tern::serve
