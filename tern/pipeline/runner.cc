// run_pipeline: the root's lock, abandoned executions, input resolution, the cache, the store
// records and the progress lines around each component's run().
#include "tern/pipeline/runner.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iomanip>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>

#include "tern/base/error.h"
#include "tern/base/sha256.h"
#include "tern/base/version.h"
#include "tern/io/atomic_file.h"
#include "tern/pipeline/content_hash.h"

namespace tern::pipeline {

namespace fs = std::filesystem;
using json = nlohmann::json;

std::string cache_key(const std::string& component, const std::string& settings_json,
                      const Artifacts& inputs) {
  json in = json::object();
  for (const auto& [role, a] : inputs) in[role] = a.content_hash;
  json key = {{"component", component},
              {"settings", json::parse(settings_json)},
              {"inputs", in},
              {"tern_version", version()}};
  return sha256_hex(key.dump());
}

namespace {

// ROOT/.lock, held with flock for the run (released by the kernel if the process dies).
class RootLock {
 public:
  explicit RootLock(const std::string& root) {
    const std::string path = root + "/.lock";
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0)
      throw_error(ErrorCode::kUnavailable, path,
                  ": cannot open the lock file: ", std::strerror(errno));
    if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
      char buf[32] = {};
      ssize_t n = ::pread(fd_, buf, sizeof(buf) - 1, 0);
      ::close(fd_);
      throw_error(ErrorCode::kUnavailable, "another `tern pipeline run` is using ", root,
                  n > 0 ? str_cat(" (pid ", std::string(buf, static_cast<size_t>(n)), ")") : "",
                  ": wait for it to finish");
    }
    std::string pid = std::to_string(::getpid());
    if (::ftruncate(fd_, 0) == 0) (void)!::pwrite(fd_, pid.data(), pid.size(), 0);
  }
  ~RootLock() { ::close(fd_); }
  RootLock(const RootLock&) = delete;
  RootLock& operator=(const RootLock&) = delete;

 private:
  int fd_ = -1;
};

// "20261127T012345.678Z-4242-1": UTC time to the millisecond, the process and its run count.
std::string make_run_id() {
  static std::atomic<int> runs{0};
  const int64_t ms = now_ms();
  std::time_t t = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::ostringstream os;
  os << std::put_time(&tm, "%Y%m%dT%H%M%S") << "." << std::setw(3) << std::setfill('0') << ms % 1000
     << "Z-" << ::getpid() << "-" << runs.fetch_add(1) + 1;
  return os.str();
}

bool role_matches(const std::string& role, const std::vector<std::string>& wanted) {
  for (const std::string& w : wanted) {
    if (role == w || (!w.empty() && w.back() == ':' && role.rfind(w, 0) == 0)) return true;
  }
  return false;
}

std::string format_seconds(double s) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(s < 10 ? 1 : 0) << s << " s";
  return os.str();
}

class Runner {
 public:
  Runner(const PipelineSpec& spec, const RunOptions& options)
      : spec_(spec), options_(options), root_(spec.root) {
    if (!options_.factory) options_.factory = make_component;
  }

  RunReport run() {
    if (!options_.only.empty() && !spec_.has(options_.only)) {
      const auto& names = component_names();
      if (std::find(names.begin(), names.end(), options_.only) == names.end())
        throw_error(ErrorCode::kInvalidArgument, "--only ", options_.only,
                    ": not a component (ingest, statistics, schema, validate, transform, train, "
                    "evaluate, push)");
      throw_error(ErrorCode::kInvalidArgument, "--only ", options_.only, ": ", spec_.path,
                  " has no [", options_.only, "] section");
    }
    io::check_writable_directory(root_, "pipeline root");
    RootLock lock(root_);
    MetadataStore store((fs::path(root_) / kMetadataFile).string());
    report_.root = root_;
    report_.run_id = make_run_id();
    settle_abandoned(store);
    contexts_ = {store.put_context("pipeline", spec_.name),
                 store.put_context("run", report_.run_id)};
    std::vector<std::string> order =
        options_.only.empty() ? spec_.components() : std::vector<std::string>{options_.only};
    for (size_t i = 0; i < order.size(); ++i) {
      std::unique_ptr<Component> c = options_.factory(order[i]);
      ComponentReport r = run_component(store, *c, i, order.size());
      const Artifacts outputs = r.outputs;
      report_.components.push_back(std::move(r));
      produced_[c->name()] = outputs;
      if (std::vector<std::string> stop = c->stop_reasons(outputs); !stop.empty()) {
        report_.stopped_by_anomalies = true;
        report_.anomalies = std::move(stop);
        break;
      }
      note_outcome(c->name(), outputs);
    }
    return report_;
  }

 private:
  void print(const std::string& s, bool newline = true) {
    if (!options_.progress) return;
    *options_.progress << s;
    if (newline) *options_.progress << "\n";
    options_.progress->flush();
  }

  // RUNNING executions left by a dead run: ABANDONED, their partial outputs removed.
  void settle_abandoned(MetadataStore& store) {
    report_.abandoned = store.abandon_running(
        "abandoned: the run executing it ended without finishing (killed or crashed)");
    std::error_code ec;
    for (const Execution& x : report_.abandoned) {
      fs::remove_all(fs::path(root_) / "artifacts" / x.component / std::to_string(x.id), ec);
      print(str_cat("note: execution ", x.id, " (", x.component,
                    ") of an earlier run never finished: marked ABANDONED, it runs again"));
    }
    // Temporary folders of an interrupted push.
    if (fs::is_directory(spec_.serving_base_path, ec)) {
      for (const auto& e : fs::directory_iterator(spec_.serving_base_path, ec)) {
        if (e.path().filename().string().rfind(".tern-push-", 0) == 0) fs::remove_all(e.path(), ec);
      }
    }
  }

  // The latest successful outputs of `component` in the store (for --only).
  Artifacts stored_outputs(MetadataStore& store, const std::string& component) {
    std::vector<Execution> xs =
        store.executions(component, {ExecutionState::kComplete, ExecutionState::kCached});
    if (xs.empty())
      throw_error(ErrorCode::kFailedPrecondition, "--only ", options_.only, ": no successful '",
                  component, "' execution in ", store.path(), ": run `tern pipeline run ",
                  spec_.path, " --only ", component, "` first (or the whole pipeline)");
    Artifacts out;
    for (auto& [e, a] : store.events_of_execution(xs.front().id, EventType::kOutput)) {
      std::error_code ec;
      if (!fs::exists(a.uri, ec))
        throw_error(ErrorCode::kFailedPrecondition, "--only ", options_.only, ": the output '",
                    e.role, "' of the latest '", component, "' execution (", xs.front().id,
                    ") is gone from disk (", a.uri, "): run --only ", component, " again");
      out[e.role] = a;
    }
    if (std::vector<std::string> stop = options_.factory(component)->stop_reasons(out);
        !stop.empty()) {
      std::string list;
      for (const auto& s : stop) list += "\n  " + s;
      throw_error(ErrorCode::kFailedPrecondition, "--only ", options_.only, ": the latest '",
                  component, "' execution (", xs.front().id, ") stopped the pipeline:", list);
    }
    return out;
  }

  Artifacts resolve_inputs(MetadataStore& store, const Component& c) {
    Artifacts inputs;
    for (const UpstreamRoles& u : c.upstream(spec_)) {
      auto it = produced_.find(u.component);
      Artifacts from = it != produced_.end() ? it->second : stored_outputs(store, u.component);
      for (auto& [role, a] : from) {
        if (role_matches(role, u.roles)) inputs[role] = a;
      }
    }
    c.add_inputs(spec_, store, inputs);
    return inputs;
  }

  // A COMPLETE execution with `key` whose outputs are all still on disk, unchanged.
  std::optional<std::pair<Execution, std::vector<RoleArtifact>>> cache_hit(MetadataStore& store,
                                                                           const std::string& key) {
    for (const Execution& x : store.complete_with_cache_key(key)) {
      std::vector<RoleArtifact> outs;
      bool ok = true;
      for (auto& [e, a] : store.events_of_execution(x.id, EventType::kOutput)) {
        std::optional<std::string> h = content_hash_if_present(a.uri);
        if (!h) {
          if (a.state == ArtifactState::kLive)
            store.set_artifact_state(a.id, ArtifactState::kDeleted);
          ok = false;
        } else if (*h != a.content_hash) {
          ok = false;
        }
        outs.push_back({e.role, a});
      }
      if (ok) return std::make_pair(x, outs);
    }
    return std::nullopt;
  }

  ComponentReport run_component(MetadataStore& store, const Component& c, size_t index,
                                size_t count) {
    const auto t0 = std::chrono::steady_clock::now();
    ComponentReport r;
    r.component = c.name();
    Artifacts inputs = resolve_inputs(store, c);
    const std::string settings = spec_.settings_json(c.name());
    const std::string key = cache_key(c.name(), settings, inputs);
    std::vector<RoleArtifact> in_list;
    for (const auto& [role, a] : inputs) in_list.push_back({role, a});
    print(str_cat("[", index + 1, "/", count, "] ", c.name(), " ... "), false);

    if (options_.use_cache) {
      if (auto hit = cache_hit(store, key)) {
        r.state = ExecutionState::kCached;
        r.reused_execution_id = hit->first.id;
        for (auto& o : hit->second) r.outputs[o.role] = o.artifact;
        r.summary = c.summarize(r.outputs);
        r.execution_id = store.begin_execution(c.name(), key, settings, contexts_, in_list);
        store.finish_execution(
            r.execution_id, ExecutionState::kCached, hit->second,
            str_cat("cached: reused execution ", hit->first.id, ": ", r.summary));
        r.seconds = seconds_since(t0);
        print(str_cat("cached (execution ", hit->first.id, "): ", r.summary));
        return r;
      }
    }

    r.execution_id = store.begin_execution(c.name(), key, settings, contexts_, in_list);
    const fs::path dir = fs::path(root_) / "artifacts" / c.name() / std::to_string(r.execution_id);
    std::error_code ec;
    fs::remove_all(dir, ec);
    fs::create_directories(dir);
    ComponentOutput out;
    try {
      ComponentRun run{spec_, store, inputs, dir.string(), r.execution_id};
      out = c.run(run);
      for (RoleArtifact& o : out.outputs) {
        o.artifact.content_hash = content_hash(o.artifact.uri);
        o.artifact.create_time_ms = now_ms();
      }
      store.finish_execution(r.execution_id, ExecutionState::kComplete, out.outputs, out.summary);
    } catch (const std::exception& e) {
      const Error* te = dynamic_cast<const Error*>(&e);
      const std::string msg = te ? te->message() : e.what();
      store.fail_execution(r.execution_id, msg);
      fs::remove_all(dir, ec);
      print(str_cat("FAILED (execution ", r.execution_id, ")"));
      throw;
    }
    for (RoleArtifact& o : out.outputs) r.outputs[o.role] = o.artifact;
    r.summary = out.summary;
    r.seconds = seconds_since(t0);
    print(str_cat(out.summary, " (", format_seconds(r.seconds), ")"));
    return r;
  }

  void note_outcome(const std::string& component, const Artifacts& outputs) {
    if (component == "evaluate") {
      if (auto it = outputs.find("blessing"); it != outputs.end()) {
        report_.blessed = it->second.property("blessed") == "1";
        report_.blessing_reason = it->second.property("reason");
      }
    } else if (component == "push") {
      if (auto it = outputs.find("pushed"); it != outputs.end()) {
        report_.pushed_version = std::stoll(it->second.property("version", "0"));
        report_.pushed_path = it->second.uri;
      }
    }
  }

  static double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  const PipelineSpec& spec_;
  RunOptions options_;
  std::string root_;
  RunReport report_;
  std::vector<int64_t> contexts_;
  std::map<std::string, Artifacts> produced_;  // component -> outputs, this run
};

}  // namespace

RunReport run_pipeline(const PipelineSpec& spec, const RunOptions& options) {
  return Runner(spec, options).run();
}

}  // namespace tern::pipeline
