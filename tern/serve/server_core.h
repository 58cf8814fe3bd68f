// ServerCore: TF Serving's model lifecycle over model directories on disk (SERVING.md §2), behind
// the ServingBackend interface the REST and gRPC front ends call.
//
// - Models come from one (model_name, model_base_path) pair or a model config file (text
//   ModelServerConfig, model_config.h). A model's versions are the numeric folders of its base
//   path ("00001" = 1), polled every file_system_poll_wait_seconds; the version policy (latest N,
//   all, specific) picks the aspired ones.
// - Load before unload (AvailabilityPreservingPolicy): a new version is loaded by the Loader and
//   warmed up (warmup_requests runs of serving_default on zeros, batch 1) before it becomes
//   AVAILABLE; only then do un-aspired versions leave the serving map. The last serving version
//   is never unloaded while no aspired version is AVAILABLE; an empty base path unloads the model.
// - A version whose loader (or warmup) throws is refused: END with the error in its status, a
//   logged reason, retried only when its folder changes (entries or mtime).
// - The serving map is an immutable snapshot swapped atomically: resolve() takes no lock and never
//   waits for a load. A ServableHandle holds its version alive; unloading drops the map's
//   reference, so requests in flight finish on the version they resolved.
// - Labels (version_labels) may only point to AVAILABLE versions (else the config is refused
//   with FailedPrecondition naming the label). A traffic split (tern's extension) sends requests
//   naming no version and no label to labels by percent, deterministically: in every 100
//   consecutive such requests each label gets exactly its percent, interleaved.
// - The config file is re-read when its contents change (model_config_file_poll_wait_seconds >
//   0) and realized as a whole: models missing from it are unloaded.
// - Every transition is logged on one line: "model m version 3: LOADING", "... AVAILABLE",
//   "... UNLOADING", "... END: unloaded" or "... END: <error>".
// - With enable_batching, predict() goes through a Batcher (batcher.h); metrics in metrics.h.
#pragma once

#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tern/serve/backend.h"
#include "tern/serve/batcher.h"
#include "tern/serve/metrics.h"
#include "tern/serve/model_config.h"

namespace tern::serve {

// Loads one version folder (the lead plugs in load_servable from model_dir.h); throws on failure.
using Loader = std::function<ServablePtr(const std::string& version_dir)>;

struct ServerCoreOptions {
  std::string model_name = "default";  // single-model mode
  std::string model_base_path;
  std::string model_config_file;                   // overrides the two above
  double file_system_poll_wait_seconds = 1;        // 0: poll once (at start); < 0: never
  double model_config_file_poll_wait_seconds = 0;  // > 0: re-read the file when it changes
  bool enable_batching = false;
  std::string batching_parameters_file;  // text BatchingParameters; needs enable_batching
  std::optional<BatchingOptions> batching_options;  // with enable_batching and no file
  int warmup_requests = 3;  // runs of serving_default before a version becomes AVAILABLE
  Loader loader;
};

class ServerCore : public ServingBackend {
 public:
  // Validates the options and reads the files (errors name the file, line and column), polls
  // once and loads synchronously, then starts the poll thread. FailedPrecondition when a label
  // points to a version that is not AVAILABLE after the first load.
  explicit ServerCore(ServerCoreOptions options);
  ~ServerCore() override;  // stop()

  ServableHandle resolve(const ModelSpec& spec) const override;
  std::vector<VersionStatus> status(const ModelSpec& spec) const override;
  TensorMap predict(const ServableHandle& handle, const std::string& signature,
                    const TensorMap& inputs, Clock::time_point deadline) override;
  void record_request(const RequestInfo& info, std::optional<ErrorCode> code,
                      std::chrono::microseconds latency) override;
  std::string prometheus_metrics() const override;

  // One file-system poll of every model (loads and unloads), after re-reading the config file if
  // its poll is on and its contents changed. Tests call this instead of sleeping.
  void poll_now();
  // Realizes `models` as the whole new config (HandleReloadConfigRequest): loads, unloads, then
  // the labels. FailedPrecondition (labels unchanged) when a label's version is not AVAILABLE.
  void reload_config(const std::vector<ModelConfig>& models);
  // Stops the poll thread and drains the batcher; idempotent.
  void stop();

  std::vector<std::string> model_names() const;
  const ServingMetrics& metrics() const { return metrics_; }
  Batcher* batcher() { return batcher_.get(); }  // nullptr without batching

 private:
  struct VersionRecord {
    VersionStatus status;
    std::string dir;
    ServablePtr servable;       // while AVAILABLE
    std::string refused_stamp;  // END with an error: the folder's stamp when it failed
  };
  struct ModelState {
    ModelConfig config;
    std::map<int64_t, VersionRecord> versions;
    std::map<std::string, int64_t> labels;  // realized (every one pointed to an AVAILABLE version)
    std::string last_poll_note;             // logged once per change
  };
  struct ServingModel;
  struct ServingMap;

  void apply_config(const std::vector<ModelConfig>& models, bool labels_must_apply);
  void poll_model(const std::string& name);
  void load_version(const std::string& name, int64_t version, const std::string& dir);
  void unload_version(const std::string& name, int64_t version);
  void warm_up(const Servable& servable) const;
  // Every model's labels from its config; FailedPrecondition (nothing changed) if one points to
  // a version that is not AVAILABLE.
  void realize_labels();
  void publish();  // under mu_: a new snapshot from models_
  void maybe_reload_config_file();
  void poll_loop();

  ServerCoreOptions options_;
  ServingMetrics metrics_;
  std::unique_ptr<Batcher> batcher_;

  std::mutex poll_mu_;  // one poll or config change at a time
  mutable std::mutex mu_;
  std::map<std::string, ModelState> models_;
  bool labels_pending_ = false;  // the config's labels are not realized yet (retried each poll)
  std::string config_text_;      // the config file as last read
  std::map<std::string, std::shared_ptr<std::atomic<uint64_t>>> split_counters_;
  std::atomic<std::shared_ptr<const ServingMap>> serving_;

  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
  std::thread poll_thread_;
};

}  // namespace tern::serve
