// The pipeline's metadata store: a SQLite file (ROOT/metadata.sqlite) in the spirit of ML
// Metadata (docs/pipeline.md, "The metadata store"): artifact types, artifacts (uri, SHA-256
// content hash, state, properties), executions (component, state, cache key, settings JSON,
// start / end), the events linking them (INPUT / OUTPUT, with the role the artifact plays),
// contexts (the pipeline, each run) and the attributions / associations that put artifacts and
// executions in contexts.
//
// Every write is one transaction; the file runs in WAL mode with synchronous = FULL, so a process
// killed with SIGKILL at any moment leaves the store as of its last committed write (a component
// that was running is left RUNNING; abandon_running() settles it on the next run). The schema
// version is PRAGMA user_version and the file is marked with PRAGMA application_id 'tern': a
// newer schema, another program's SQLite file or a file that is not SQLite is a clear error.
//
// sqlite3.h is seen only by metadata_store.cc.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace tern::pipeline {

inline constexpr int kMetadataSchemaVersion = 1;
inline constexpr int32_t kMetadataApplicationId = 0x7465726e;  // "tern"
inline constexpr const char* kMetadataFile = "metadata.sqlite";

enum class ExecutionState { kRunning, kComplete, kFailed, kCached, kAbandoned };
std::string execution_state_name(ExecutionState s);  // "RUNNING", ...

enum class ArtifactState { kLive, kDeleted };      // kDeleted: found missing on disk
std::string artifact_state_name(ArtifactState s);  // "LIVE", "DELETED"

enum class EventType { kInput, kOutput };
std::string event_type_name(EventType t);  // "INPUT", "OUTPUT"

struct Artifact {
  int64_t id = 0;  // 0 until stored
  std::string type;
  std::string uri;
  std::string content_hash;  // hex SHA-256 (content_hash.h)
  ArtifactState state = ArtifactState::kLive;
  int64_t create_time_ms = 0;                     // milliseconds since the epoch
  std::map<std::string, std::string> properties;  // e.g. "split" -> "train", "records" -> "160"
  std::string property(const std::string& name, const std::string& fallback = "") const;
};

struct Execution {
  int64_t id = 0;
  std::string component;
  ExecutionState state = ExecutionState::kRunning;
  std::string cache_key;
  std::string settings_json;
  int64_t start_time_ms = 0, end_time_ms = 0;  // end 0 while running
  std::string message;                         // the result line, or why it failed / was abandoned
};

struct Event {
  int64_t execution_id = 0;
  int64_t artifact_id = 0;
  EventType type = EventType::kInput;
  std::string role;  // "examples:train", "schema", "model", ...
};

struct Context {
  int64_t id = 0;
  std::string type;  // "pipeline" | "run"
  std::string name;
  int64_t create_time_ms = 0;
};

// An artifact in a role, for recording an execution's inputs or outputs. An artifact with id 0 is
// inserted; one with an id is linked as it is.
struct RoleArtifact {
  std::string role;
  Artifact artifact;
};

int64_t now_ms();

class MetadataStore {
 public:
  // Opens `path`, creating it (and its schema) when `create` and it does not exist. NotFound when
  // it does not exist and !create; FailedPrecondition for a newer schema version, a file that is
  // not SQLite or a SQLite file of another program; Unavailable when SQLite fails to open it.
  explicit MetadataStore(const std::string& path, bool create = true);
  ~MetadataStore();
  MetadataStore(const MetadataStore&) = delete;
  MetadataStore& operator=(const MetadataStore&) = delete;

  const std::string& path() const { return path_; }

  // --- contexts ---
  // The context (type, name), created if missing.
  int64_t put_context(const std::string& type, const std::string& name);
  std::vector<Context> contexts_of_execution(int64_t execution_id);

  // --- executions ---
  // Inserts a RUNNING execution associated with `context_ids` and its INPUT events, in one
  // transaction. Input artifacts with id 0 (external files) are inserted, or reused when an
  // artifact of the same type, uri and content hash exists.
  int64_t begin_execution(const std::string& component, const std::string& cache_key,
                          const std::string& settings_json, const std::vector<int64_t>& context_ids,
                          std::vector<RoleArtifact>& inputs);
  // Ends a RUNNING execution as kComplete or kCached: its outputs (inserted when new, linked when
  // cached), OUTPUT events, attributions to the execution's contexts, the end time and message, in
  // one transaction. Fills the ids of inserted artifacts.
  void finish_execution(int64_t id, ExecutionState state, std::vector<RoleArtifact>& outputs,
                        const std::string& message);
  // Ends a RUNNING execution as kFailed with `message`.
  void fail_execution(int64_t id, const std::string& message);
  // Marks every RUNNING execution ABANDONED (the process that ran it is gone: the caller holds the
  // pipeline root's lock). Returns them as they were.
  std::vector<Execution> abandon_running(const std::string& message);

  std::optional<Execution> execution(int64_t id);
  // Executions of `component` (every component when empty) in `states` (all when empty), newest
  // first.
  std::vector<Execution> executions(const std::string& component,
                                    const std::vector<ExecutionState>& states = {});
  // kComplete executions with this cache key, newest first.
  std::vector<Execution> complete_with_cache_key(const std::string& cache_key);

  // --- artifacts and events ---
  std::optional<Artifact> artifact(int64_t id);
  void set_artifact_state(int64_t id, ArtifactState state);
  // Artifacts of `type` with property `name` = `value`, newest first.
  std::vector<Artifact> artifacts_with_property(const std::string& type, const std::string& name,
                                                const std::string& value);
  std::vector<Artifact> artifacts_of_type(const std::string& type);  // newest first
  std::vector<Artifact> artifacts_with_uri(const std::string& uri);  // newest first
  // The events of an execution, in role order, with their artifacts.
  std::vector<std::pair<Event, Artifact>> events_of_execution(int64_t execution_id,
                                                              std::optional<EventType> type = {});
  // The events that touch an artifact.
  std::vector<Event> events_of_artifact(int64_t artifact_id);
  // The execution that produced the artifact: the kComplete one with an OUTPUT event to it (a
  // kCached execution links the same artifact without producing it); nullopt for external inputs.
  std::optional<Execution> producer(int64_t artifact_id);

  // Raw SQL for tests and tools: the rows of a query, each column as text ("" for NULL).
  std::vector<std::vector<std::string>> query(const std::string& sql);

 private:
  class Statement;
  class Transaction;
  void create_schema();
  void check_schema();
  int64_t type_id(const std::string& type);
  int64_t insert_artifact(Artifact& a);
  Artifact read_artifact_row(Statement& s, int first_column);
  Execution read_execution_row(Statement& s);
  std::vector<Execution> read_executions(Statement& s);
  void exec(const std::string& sql);

  std::string path_;
  void* db_ = nullptr;  // sqlite3*
};

}  // namespace tern::pipeline
