// ServerCore: config realization, version polling, load-before-unload, the serving snapshot,
// resolve / status / predict, and the poll thread. Over ~200 lines because the lifecycle is one
// state machine over one mutex; each part is one banner below.
#include "tern/serve/server_core.h"

#include <algorithm>
#include <charconv>
#include <set>

#include "tern/base/logging.h"
#include "tern/io/atomic_file.h"

namespace fs = std::filesystem;

namespace tern::serve {

// --- the serving snapshot ---

struct ServerCore::ServingModel {
  std::map<int64_t, ServablePtr> available;
  std::map<std::string, int64_t> labels;
  std::vector<std::pair<std::string, int64_t>> split;  // label, cumulative percent (ends at 100)
  std::shared_ptr<std::atomic<uint64_t>> split_counter;
};

struct ServerCore::ServingMap {
  std::map<std::string, ServingModel> models;
};

namespace {

// Coprime with 100: slot = (n * stride) % 100 visits every slot once per 100 requests,
// interleaving the labels instead of sending them in blocks.
constexpr uint64_t kSplitStride = 61;

std::optional<int64_t> parse_version(const std::string& name) {
  if (name.empty() ||
      !std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  int64_t v = 0;
  auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), v);
  if (ec != std::errc() || end != name.data() + name.size()) return std::nullopt;
  return v;
}

// What changes when a version folder is rewritten: its mtime and its entries' names and sizes.
std::string dir_stamp(const std::string& dir) {
  std::error_code ec;
  std::string stamp = std::to_string(fs::last_write_time(dir, ec).time_since_epoch().count());
  std::vector<std::string> entries;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::error_code size_ec;
    const auto size = e.is_regular_file(size_ec) ? e.file_size(size_ec) : 0;
    entries.push_back(e.path().filename().string() + ":" + std::to_string(size));
  }
  std::sort(entries.begin(), entries.end());
  for (const auto& e : entries) stamp += ";" + e;
  return stamp;
}

// A regular file of at most 64 MiB (see model_config.cc's read_file).
std::string read_text(const std::string& path) {
  try {
    return io::read_file(path, uint64_t{64} << 20);
  } catch (const Error& e) {
    throw_error(e.code(), "cannot read the model config file ", path, ": ", e.message());
  }
}

void log_transition(const std::string& model, int64_t version, VersionState state,
                    const std::string& reason = "") {
  const std::string line = str_cat("model ", model, " version ", version, ": ",
                                   version_state_name(state), reason.empty() ? "" : ": ", reason);
  if (state == VersionState::kEnd && reason != "unloaded") {
    log_warning(line);
  } else {
    log_info(line);
  }
}

}  // namespace

// --- construction ---

ServerCore::ServerCore(ServerCoreOptions options) : options_(std::move(options)) {
  TERN_CHECK_ARG(options_.loader != nullptr, "ServerCoreOptions.loader is not set");
  TERN_CHECK_ARG(options_.warmup_requests >= 0, "warmup_requests must be >= 0, got ",
                 options_.warmup_requests);
  TERN_CHECK_ARG(options_.batching_parameters_file.empty() || options_.enable_batching,
                 "batching parameters file ", options_.batching_parameters_file,
                 " given without enable_batching");
  std::vector<ModelConfig> models;
  if (!options_.model_config_file.empty()) {
    config_text_ = read_text(options_.model_config_file);
    models = parse_model_config(config_text_, options_.model_config_file);
  } else {
    TERN_CHECK_ARG(!options_.model_base_path.empty(),
                   "neither model_base_path nor model_config_file is set");
    TERN_CHECK_ARG(!options_.model_name.empty(), "model_name is empty");
    ModelConfig m;
    m.name = options_.model_name;
    m.base_path = options_.model_base_path;
    m.platform = "tensorflow";
    models.push_back(std::move(m));
  }
  if (options_.enable_batching) {
    BatchingOptions b = options_.batching_options.value_or(BatchingOptions{});
    if (!options_.batching_parameters_file.empty()) {
      b = read_batching_parameters_file(options_.batching_parameters_file);
    }
    batcher_ = std::make_unique<Batcher>(b, [this, pool = b.thread_pool_name](const BatchStats& s) {
      metrics_.record_batch(s.model_name, pool, s.input_size, s.padded_size, s.queuing);
    });
  }
  serving_.store(std::make_shared<const ServingMap>());
  {
    std::lock_guard<std::mutex> poll_lock(poll_mu_);
    apply_config(models, /*labels_must_apply=*/true);
  }
  if (options_.file_system_poll_wait_seconds > 0 ||
      options_.model_config_file_poll_wait_seconds > 0) {
    poll_thread_ = std::thread([this] { poll_loop(); });
  }
}

ServerCore::~ServerCore() {
  stop();
}

void ServerCore::stop() {
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (poll_thread_.joinable()) poll_thread_.join();
  if (batcher_) batcher_->stop();
}

std::vector<std::string> ServerCore::model_names() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> names;
  for (const auto& [name, m] : models_) names.push_back(name);
  return names;
}

// --- config realization ---

void ServerCore::apply_config(const std::vector<ModelConfig>& models, bool labels_must_apply) {
  std::set<std::string> wanted;
  for (const ModelConfig& m : models) wanted.insert(m.name);
  std::vector<std::string> removed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [name, m] : models_) {
      if (!wanted.count(name)) removed.push_back(name);
    }
    for (const ModelConfig& m : models) models_[m.name].config = m;
    labels_pending_ = true;
  }
  for (const std::string& name : removed) {
    std::vector<int64_t> loaded;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& [v, r] : models_[name].versions) {
        if (r.status.state == VersionState::kAvailable) loaded.push_back(v);
      }
    }
    for (int64_t v : loaded) unload_version(name, v);
    std::lock_guard<std::mutex> lock(mu_);
    models_.erase(name);
    split_counters_.erase(name);
    publish();
    log_info("model ", name, " left the config: unloaded");
  }
  for (const ModelConfig& m : models) poll_model(m.name);
  try {
    realize_labels();
  } catch (const Error& e) {
    if (labels_must_apply) throw;
    log_warning(e.what(), " (labels unchanged; retried on every poll)");
  }
}

void ServerCore::realize_labels() {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [name, m] : models_) {
    for (const auto& [label, version] : m.config.labels) {
      auto it = m.versions.find(version);
      if (it == m.versions.end() || it->second.status.state != VersionState::kAvailable) {
        throw_error(ErrorCode::kFailedPrecondition, "Request to assign label '", label,
                    "' to version ", version, " of model ", name,
                    ", which is not currently available for inference");
      }
    }
  }
  for (auto& [name, m] : models_) m.labels = m.config.labels;
  labels_pending_ = false;
  publish();
}

void ServerCore::reload_config(const std::vector<ModelConfig>& models) {
  std::lock_guard<std::mutex> poll_lock(poll_mu_);
  apply_config(models, /*labels_must_apply=*/true);
}

void ServerCore::maybe_reload_config_file() {
  if (options_.model_config_file.empty() || options_.model_config_file_poll_wait_seconds <= 0) {
    return;
  }
  std::string text;
  std::vector<ModelConfig> models;
  try {
    text = read_text(options_.model_config_file);
    if (text == config_text_) return;
    models = parse_model_config(text, options_.model_config_file);
  } catch (const Error& e) {
    log_warning("model config not reloaded: ", e.what());
    config_text_ = text;  // report a bad file once, not on every poll
    return;
  }
  config_text_ = text;
  log_info("model config ", options_.model_config_file, " changed: realizing ", models.size(),
           " model(s)");
  apply_config(models, /*labels_must_apply=*/false);
}

// --- polling ---

void ServerCore::poll_now() {
  std::lock_guard<std::mutex> poll_lock(poll_mu_);
  maybe_reload_config_file();
  for (const std::string& name : model_names()) {
    try {
      poll_model(name);
    } catch (const std::exception& e) {
      log_warning("model ", name, ": poll failed: ", e.what());
    }
  }
  bool pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending = labels_pending_;
  }
  if (pending) {
    try {
      realize_labels();
    } catch (const Error&) {
      // logged when the config was applied
    }
  }
}

void ServerCore::poll_model(const std::string& name) {
  ModelConfig config;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = models_.find(name);
    if (it == models_.end()) return;
    config = it->second.config;
  }
  // Conditions worth a warning are logged once, until they change (polls run every second).
  auto note = [&](const std::string& text) {
    std::lock_guard<std::mutex> lock(mu_);
    std::string& last = models_[name].last_poll_note;
    if (text != last && !text.empty()) log_warning(text);
    last = text;
  };
  std::error_code ec;
  if (!fs::is_directory(config.base_path, ec)) {
    note(str_cat("model ", name, ": base path ", config.base_path,
                 " does not exist or is not a directory; the served versions stay"));
    return;
  }
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(config.base_path, ec)) {
    if (e.is_directory()) names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  std::map<int64_t, std::string> on_disk;
  for (const std::string& n : names) {
    auto v = parse_version(n);
    if (!v) continue;
    if (!on_disk.emplace(*v, (fs::path(config.base_path) / n).string()).second) {
      log_warning("model ", name, ": Duplicate version directories detected for version ", *v,
                  " under ", config.base_path, "; using ", on_disk[*v]);
    }
  }
  std::string notes;
  if (on_disk.empty()) {
    notes = str_cat("No versions of servable ", name, " found under base path ", config.base_path,
                    ". Did you forget to name your leaf directory as a number (eg. '/1/')?");
  }

  std::set<int64_t> aspired;
  const VersionPolicy& policy = config.policy;
  if (policy.kind == VersionPolicy::Kind::kAll) {
    for (const auto& [v, dir] : on_disk) aspired.insert(v);
  } else if (policy.kind == VersionPolicy::Kind::kLatest) {
    // A version refused at its last load (and unchanged since) does not count towards the latest
    // N: with a broken version 4 on disk, deleting version 3 rolls back to version 2. (TF Serving
    // keeps aspiring the broken version and so keeps serving 3 from memory.)
    auto refused = [&](int64_t v, const std::string& dir) {
      std::lock_guard<std::mutex> lock(mu_);
      auto& versions = models_[name].versions;
      auto rec = versions.find(v);
      return rec != versions.end() && rec->second.status.state == VersionState::kEnd &&
             rec->second.status.error && rec->second.refused_stamp == dir_stamp(dir);
    };
    for (auto it = on_disk.rbegin();
         it != on_disk.rend() && static_cast<int64_t>(aspired.size()) < policy.num_versions; ++it) {
      if (!refused(it->first, it->second)) aspired.insert(it->first);
    }
  } else {
    std::vector<int64_t> missing;
    for (int64_t v : policy.versions) {
      if (on_disk.count(v)) {
        aspired.insert(v);
      } else {
        missing.push_back(v);
      }
    }
    if (!missing.empty()) {
      std::string list;
      for (int64_t v : missing) list += (list.empty() ? "" : ", ") + std::to_string(v);
      notes = str_cat("model ", name, ": specific version(s) ", list, " not found under ",
                      config.base_path);
    }
  }

  note(notes);

  // Load the new aspired versions, highest first.
  for (auto it = aspired.rbegin(); it != aspired.rend(); ++it) {
    const std::string& dir = on_disk[*it];
    bool load = true;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto& versions = models_[name].versions;
      auto rec = versions.find(*it);
      if (rec != versions.end()) {
        const VersionStatus& s = rec->second.status;
        load =
            s.state != VersionState::kAvailable && !(s.state == VersionState::kEnd && s.error &&
                                                     rec->second.refused_stamp == dir_stamp(dir));
      }
    }
    if (load) load_version(name, *it, dir);
  }

  // Unload the un-aspired AVAILABLE versions, keeping the newest one while no aspired version is
  // AVAILABLE (availability preserving).
  std::vector<int64_t> unaspired_ready;
  bool aspired_ready = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [v, r] : models_[name].versions) {
      if (r.status.state != VersionState::kAvailable) continue;
      if (aspired.count(v)) {
        aspired_ready = true;
      } else {
        unaspired_ready.push_back(v);
      }
    }
  }
  if (!aspired.empty() && !aspired_ready && !unaspired_ready.empty()) unaspired_ready.pop_back();
  for (int64_t v : unaspired_ready) unload_version(name, v);
}

// --- load and unload ---

void ServerCore::load_version(const std::string& name, int64_t version, const std::string& dir) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    VersionRecord& r = models_[name].versions[version];
    r.status = VersionStatus{version, VersionState::kLoading, std::nullopt, ""};
    r.dir = dir;
  }
  log_transition(name, version, VersionState::kLoading);
  ServablePtr servable;
  std::optional<ErrorCode> code;
  std::string message;
  try {
    servable = options_.loader(dir);
    if (!servable) throw_error(ErrorCode::kInternal, "the loader returned no servable for ", dir);
    warm_up(*servable);
  } catch (const Error& e) {
    code = e.code();
    message = e.message();
  } catch (const std::exception& e) {
    code = ErrorCode::kInternal;
    message = e.what();
  }
  const std::string stamp = code ? dir_stamp(dir) : "";
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto m = models_.find(name);
    if (m == models_.end()) return;  // cannot happen: config changes wait for poll_mu_
    VersionRecord& r = m->second.versions[version];
    if (code) {
      r.status = VersionStatus{version, VersionState::kEnd, code, message};
      r.refused_stamp = stamp;
    } else {
      r.status = VersionStatus{version, VersionState::kAvailable, std::nullopt, ""};
      r.servable = servable;
      publish();
    }
  }
  if (code) {
    log_transition(name, version, VersionState::kEnd, message);
  } else {
    log_transition(name, version, VersionState::kAvailable);
  }
}

void ServerCore::unload_version(const std::string& name, int64_t version) {
  ServablePtr dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    VersionRecord& r = models_[name].versions[version];
    r.status.state = VersionState::kUnloading;
    dropped = std::move(r.servable);
    r.servable.reset();
    publish();
  }
  log_transition(name, version, VersionState::kUnloading);
  dropped.reset();  // requests still holding a handle keep the version alive until they finish
  {
    std::lock_guard<std::mutex> lock(mu_);
    models_[name].versions[version].status.state = VersionState::kEnd;
  }
  log_transition(name, version, VersionState::kEnd, "unloaded");
}

void ServerCore::warm_up(const Servable& servable) const {
  if (options_.warmup_requests == 0) return;
  auto sig = servable.signatures().find(kDefaultSignature);
  if (sig == servable.signatures().end()) return;
  TensorMap inputs;
  for (const auto& [alias, spec] : sig->second.inputs) {
    auto dtype = tern_dtype_of(spec.dtype);
    if (!dtype || spec.unknown_rank) return;  // strings, or nothing to build zeros from
    std::vector<int64_t> dims = spec.shape;
    for (int64_t& d : dims) d = d < 0 ? 1 : d;
    if (!dims.empty()) dims[0] = 1;
    TensorValue v = TensorValue::from_tensor(Tensor::zeros(*dtype, Shape(dims)));
    v.dtype = spec.dtype;
    inputs[alias] = std::move(v);
  }
  for (int i = 0; i < options_.warmup_requests; ++i) {
    try {
      servable.run(kDefaultSignature, inputs);
    } catch (const Error& e) {
      throw_error(e.code(), "warmup request ", i + 1, " of ", options_.warmup_requests,
                  " failed: ", e.message());
    }
  }
}

void ServerCore::publish() {
  auto map = std::make_shared<ServingMap>();
  for (const auto& [name, m] : models_) {
    ServingModel& s = map->models[name];
    for (const auto& [v, r] : m.versions) {
      if (r.status.state == VersionState::kAvailable) s.available[v] = r.servable;
    }
    s.labels = m.labels;
    int64_t cumulative = 0;
    for (const auto& [label, percent] : m.config.traffic_split) {
      if (!m.labels.count(label)) continue;
      cumulative += percent;
      s.split.emplace_back(label, cumulative);
    }
    if (cumulative != 100) s.split.clear();  // labels not realized yet
    auto& counter = split_counters_[name];
    if (!counter) counter = std::make_shared<std::atomic<uint64_t>>(0);
    s.split_counter = counter;
  }
  auto old = serving_.load();
  for (const auto& [name, s] : old->models) {
    if (!map->models.count(name)) metrics_.set_loaded_versions(name, 0);
  }
  for (const auto& [name, s] : map->models) {
    metrics_.set_loaded_versions(name, static_cast<int64_t>(s.available.size()));
  }
  serving_.store(std::move(map));
}

// --- requests ---

ServableHandle ServerCore::resolve(const ModelSpec& spec) const {
  TERN_CHECK_ARG(!(spec.version && spec.label), "Both model version (", *spec.version,
                 ") and model version label (", *spec.label, ") cannot be supplied.");
  const std::shared_ptr<const ServingMap> map = serving_.load();
  auto m = map->models.find(spec.name);
  if (m == map->models.end() || (m->second.available.empty() && !spec.version && !spec.label)) {
    // TF Serving's words for a request to a model it does not serve (SERVING.md 1.6).
    if (spec.version) {
      throw_error(ErrorCode::kNotFound, "Servable not found for request: Specific(", spec.name,
                  ", ", *spec.version, ")");
    }
    throw_error(ErrorCode::kNotFound, "Servable not found for request: Latest(", spec.name, ")");
  }
  const ServingModel& s = m->second;
  std::optional<int64_t> version = spec.version;
  if (spec.label) {
    auto l = s.labels.find(*spec.label);
    if (l == s.labels.end()) {
      throw_error(ErrorCode::kInvalidArgument,
                  "Unrecognized servable version label: ", *spec.label);
    }
    version = l->second;
  }
  if (!version && !s.split.empty()) {
    const uint64_t slot = (s.split_counter->fetch_add(1) * kSplitStride) % 100;
    for (const auto& [label, cumulative] : s.split) {
      if (static_cast<int64_t>(slot) < cumulative) {
        const int64_t v = s.labels.at(label);
        if (s.available.count(v)) version = v;  // else: the latest, below
        break;
      }
    }
  }
  if (!version) {
    auto latest = s.available.rbegin();
    return ServableHandle{spec.name, latest->first, latest->second};
  }
  auto it = s.available.find(*version);
  if (it == s.available.end()) {
    throw_error(ErrorCode::kNotFound, "Servable not found for request: Specific(", spec.name, ", ",
                *version, ")");
  }
  return ServableHandle{spec.name, it->first, it->second};
}

std::vector<VersionStatus> ServerCore::status(const ModelSpec& spec) const {
  TERN_CHECK_ARG(!(spec.version && spec.label), "Both model version (", *spec.version,
                 ") and model version label (", *spec.label, ") cannot be supplied.");
  std::lock_guard<std::mutex> lock(mu_);
  auto m = models_.find(spec.name);
  if (m == models_.end() || m->second.versions.empty()) {
    throw_error(ErrorCode::kNotFound, "Could not find any versions of model ", spec.name);
  }
  std::optional<int64_t> version = spec.version;
  if (spec.label) {
    auto l = m->second.labels.find(*spec.label);
    if (l == m->second.labels.end()) {
      throw_error(ErrorCode::kInvalidArgument,
                  "Unrecognized servable version label: ", *spec.label);
    }
    version = l->second;
  }
  std::vector<VersionStatus> out;
  for (auto it = m->second.versions.rbegin(); it != m->second.versions.rend(); ++it) {
    if (!version || it->first == *version) out.push_back(it->second.status);
  }
  if (out.empty()) {
    throw_error(ErrorCode::kNotFound, "Could not find version ", *version, " of model ", spec.name);
  }
  return out;
}

TensorMap ServerCore::predict(const ServableHandle& handle, const std::string& signature,
                              const TensorMap& inputs, Clock::time_point deadline) {
  TERN_CHECK_ARG(handle.servable != nullptr, "model ", handle.model_name, " version ",
                 handle.version, ": the handle holds no servable");
  TERN_CHECK_ARG(handle.servable->signatures().count(signature), "Serving signature name: \"",
                 signature, "\" not found in signature def");
  if (Clock::now() >= deadline) {
    throw_error(ErrorCode::kDeadlineExceeded, "the deadline passed before model ",
                handle.model_name, " version ", handle.version, " ran");
  }
  const Clock::time_point start = Clock::now();
  TensorMap out = batcher_ ? batcher_->run(handle, signature, inputs, deadline)
                           : handle.servable->run(signature, inputs);
  metrics_.record_runtime(
      handle.model_name, "Predict",
      std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start));
  return out;
}

void ServerCore::record_request(const RequestInfo& info, std::optional<ErrorCode> code,
                                std::chrono::microseconds latency) {
  metrics_.record_request(info.model_name, info.version, info.api, info.entrypoint, code, latency);
}

std::string ServerCore::prometheus_metrics() const {
  return metrics_.prometheus_text();
}

// --- the poll thread ---

void ServerCore::poll_loop() {
  using Seconds = std::chrono::duration<double>;
  const double fs_wait = options_.file_system_poll_wait_seconds;
  const double cfg_wait = options_.model_config_file_poll_wait_seconds;
  const double wait =
      fs_wait > 0 && cfg_wait > 0 ? std::min(fs_wait, cfg_wait) : std::max(fs_wait, cfg_wait);
  const auto interval = std::chrono::duration_cast<Clock::duration>(Seconds(wait));
  std::unique_lock<std::mutex> lock(stop_mu_);
  for (;;) {
    if (stop_cv_.wait_for(lock, interval, [this] { return stopping_; })) return;
    lock.unlock();
    try {
      if (fs_wait > 0) {
        poll_now();
      } else {
        std::lock_guard<std::mutex> poll_lock(poll_mu_);
        maybe_reload_config_file();
      }
    } catch (const std::exception& e) {
      log_warning("model server poll failed: ", e.what());
    }
    lock.lock();
  }
}

}  // namespace tern::serve
