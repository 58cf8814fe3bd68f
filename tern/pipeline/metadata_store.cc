// MetadataStore on SQLite (Debian's libsqlite3): the schema, its version check, transactions and
// the queries the runner, the cache and lineage use.
#include "tern/pipeline/metadata_store.h"

#include <sqlite3.h>

#include <chrono>
#include <filesystem>

#include "tern/base/error.h"

namespace tern::pipeline {

namespace fs = std::filesystem;

// --- names ---

std::string execution_state_name(ExecutionState s) {
  switch (s) {
    case ExecutionState::kRunning:
      return "RUNNING";
    case ExecutionState::kComplete:
      return "COMPLETE";
    case ExecutionState::kFailed:
      return "FAILED";
    case ExecutionState::kCached:
      return "CACHED";
    case ExecutionState::kAbandoned:
      return "ABANDONED";
  }
  return "?";
}

std::string artifact_state_name(ArtifactState s) {
  return s == ArtifactState::kLive ? "LIVE" : "DELETED";
}

std::string event_type_name(EventType t) {
  return t == EventType::kInput ? "INPUT" : "OUTPUT";
}

namespace {

ExecutionState parse_execution_state(const std::string& s) {
  for (ExecutionState e :
       {ExecutionState::kRunning, ExecutionState::kComplete, ExecutionState::kFailed,
        ExecutionState::kCached, ExecutionState::kAbandoned}) {
    if (execution_state_name(e) == s) return e;
  }
  throw_error(ErrorCode::kDataLoss, "metadata store: unknown execution state '", s, "'");
}

// The schema (version 1). Times are milliseconds since the epoch; states are the names above.
constexpr const char* kSchema = R"sql(
CREATE TABLE artifact_types (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE
);
CREATE TABLE artifacts (
  id INTEGER PRIMARY KEY,
  type_id INTEGER NOT NULL REFERENCES artifact_types(id),
  uri TEXT NOT NULL,
  content_hash TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('LIVE', 'DELETED')),
  create_time INTEGER NOT NULL
);
CREATE INDEX artifacts_by_uri ON artifacts(uri);
CREATE TABLE artifact_properties (
  artifact_id INTEGER NOT NULL REFERENCES artifacts(id),
  name TEXT NOT NULL,
  value TEXT NOT NULL,
  PRIMARY KEY (artifact_id, name)
);
CREATE TABLE executions (
  id INTEGER PRIMARY KEY,
  component TEXT NOT NULL,
  state TEXT NOT NULL
    CHECK (state IN ('RUNNING', 'COMPLETE', 'FAILED', 'CACHED', 'ABANDONED')),
  cache_key TEXT NOT NULL,
  settings TEXT NOT NULL,
  start_time INTEGER NOT NULL,
  end_time INTEGER,
  message TEXT NOT NULL DEFAULT ''
);
CREATE INDEX executions_by_cache_key ON executions(cache_key);
CREATE TABLE events (
  execution_id INTEGER NOT NULL REFERENCES executions(id),
  artifact_id INTEGER NOT NULL REFERENCES artifacts(id),
  type TEXT NOT NULL CHECK (type IN ('INPUT', 'OUTPUT')),
  role TEXT NOT NULL,
  PRIMARY KEY (execution_id, type, role)
);
CREATE INDEX events_by_artifact ON events(artifact_id);
CREATE TABLE contexts (
  id INTEGER PRIMARY KEY,
  type TEXT NOT NULL CHECK (type IN ('pipeline', 'run')),
  name TEXT NOT NULL,
  create_time INTEGER NOT NULL,
  UNIQUE (type, name)
);
CREATE TABLE attributions (
  context_id INTEGER NOT NULL REFERENCES contexts(id),
  artifact_id INTEGER NOT NULL REFERENCES artifacts(id),
  PRIMARY KEY (context_id, artifact_id)
);
CREATE TABLE associations (
  context_id INTEGER NOT NULL REFERENCES contexts(id),
  execution_id INTEGER NOT NULL REFERENCES executions(id),
  PRIMARY KEY (context_id, execution_id)
);
)sql";

}  // namespace

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Artifact::property(const std::string& name, const std::string& fallback) const {
  auto it = properties.find(name);
  return it == properties.end() ? fallback : it->second;
}

// --- statements and transactions ---

class MetadataStore::Statement {
 public:
  Statement(MetadataStore& store, const std::string& sql) : store_(store) {
    sqlite3* db = static_cast<sqlite3*>(store.db_);
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr) != SQLITE_OK)
      throw_error(ErrorCode::kInternal, store.path_, ": preparing '", sql,
                  "': ", sqlite3_errmsg(db));
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  Statement& bind(int i, int64_t v) {
    check(sqlite3_bind_int64(stmt_, i, v));
    return *this;
  }
  Statement& bind(int i, const std::string& v) {
    check(sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
    return *this;
  }
  // True while there is a row.
  bool step() {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail(rc);
  }
  void run() {
    while (step()) {
    }
  }
  int64_t integer(int col) const { return sqlite3_column_int64(stmt_, col); }
  std::string text(int col) const {
    const unsigned char* p = sqlite3_column_text(stmt_, col);
    return p ? std::string(reinterpret_cast<const char*>(p),
                           static_cast<size_t>(sqlite3_column_bytes(stmt_, col)))
             : std::string();
  }
  int columns() const { return sqlite3_column_count(stmt_); }

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) fail(rc);
  }
  [[noreturn]] void fail(int rc) {
    sqlite3* db = static_cast<sqlite3*>(store_.db_);
    throw_error(
        rc == SQLITE_BUSY || rc == SQLITE_LOCKED ? ErrorCode::kUnavailable : ErrorCode::kDataLoss,
        store_.path_, ": ", sqlite3_errmsg(db), " (in '", sqlite3_sql(stmt_), "')");
  }
  MetadataStore& store_;
  sqlite3_stmt* stmt_ = nullptr;
};

// BEGIN IMMEDIATE ... COMMIT; rolled back when left without commit() (an exception).
class MetadataStore::Transaction {
 public:
  explicit Transaction(MetadataStore& store) : store_(store) { store_.exec("BEGIN IMMEDIATE"); }
  ~Transaction() {
    if (!done_)
      sqlite3_exec(static_cast<sqlite3*>(store_.db_), "ROLLBACK", nullptr, nullptr, nullptr);
  }
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;
  void commit() {
    store_.exec("COMMIT");
    done_ = true;
  }

 private:
  MetadataStore& store_;
  bool done_ = false;
};

void MetadataStore::exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(static_cast<sqlite3*>(db_), sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "unknown error";
    sqlite3_free(err);
    throw_error(ErrorCode::kDataLoss, path_, ": ", msg, " (in '", sql.substr(0, 60), "')");
  }
}

// --- opening ---

MetadataStore::MetadataStore(const std::string& path, bool create) : path_(path) {
  std::error_code ec;
  const bool exists = fs::exists(path, ec);
  if (!exists && !create)
    throw_error(ErrorCode::kNotFound, path, ": no metadata store (no pipeline has run here)");
  if (exists && !fs::is_regular_file(path, ec))
    throw_error(ErrorCode::kFailedPrecondition, path, ": not a regular file");
  sqlite3* db = nullptr;
  const int flags = SQLITE_OPEN_READWRITE | (create ? SQLITE_OPEN_CREATE : 0) | SQLITE_OPEN_NOMUTEX;
  if (sqlite3_open_v2(path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    throw_error(ErrorCode::kUnavailable, path, ": cannot open the metadata store: ", msg);
  }
  db_ = db;
  try {
    sqlite3_busy_timeout(db, 10000);  // a concurrent reader (lineage) or writer waits, bounded
    check_schema();
    exec("PRAGMA foreign_keys = ON");
    exec("PRAGMA synchronous = FULL");
  } catch (...) {
    sqlite3_close(db);
    db_ = nullptr;
    throw;
  }
}

MetadataStore::~MetadataStore() {
  if (db_) sqlite3_close(static_cast<sqlite3*>(db_));
}

void MetadataStore::check_schema() {
  int64_t app_id = 0, version = 0, tables = 0;
  try {
    Statement a(*this, "PRAGMA application_id");
    if (a.step()) app_id = a.integer(0);
  } catch (const Error& e) {
    // SQLITE_NOTADB surfaces on the first read.
    throw_error(ErrorCode::kFailedPrecondition, path_,
                ": not a tern metadata store (not a SQLite database: ", e.message(), ")");
  }
  {
    Statement v(*this, "PRAGMA user_version");
    if (v.step()) version = v.integer(0);
    Statement t(*this, "SELECT count(*) FROM sqlite_master");
    if (t.step()) tables = t.integer(0);
  }
  if (app_id == 0 && version == 0 && tables == 0) {
    create_schema();
    return;
  }
  if (app_id != kMetadataApplicationId)
    throw_error(
        ErrorCode::kFailedPrecondition, path_,
        ": not a tern metadata store (a SQLite database of another program: application_id ",
        app_id, ", ", tables, " schema objects)");
  if (version > kMetadataSchemaVersion)
    throw_error(ErrorCode::kFailedPrecondition, path_, ": written by a newer tern (schema version ",
                version, "; this tern reads version ", kMetadataSchemaVersion,
                "): use that tern, or another pipeline root");
  if (version < 1)
    throw_error(ErrorCode::kFailedPrecondition, path_, ": damaged metadata store (schema version ",
                version, ")");
  // WAL mode is a property of the file, set when it was created.
}

void MetadataStore::create_schema() {
  exec("PRAGMA journal_mode = WAL");
  Transaction t(*this);
  exec(kSchema);
  exec("PRAGMA application_id = " + std::to_string(kMetadataApplicationId));
  exec("PRAGMA user_version = " + std::to_string(kMetadataSchemaVersion));
  t.commit();
}

// --- contexts ---

int64_t MetadataStore::put_context(const std::string& type, const std::string& name) {
  Transaction t(*this);
  Statement ins(*this,
                "INSERT OR IGNORE INTO contexts (type, name, create_time) VALUES (?1, ?2, ?3)");
  ins.bind(1, type).bind(2, name).bind(3, now_ms()).run();
  Statement sel(*this, "SELECT id FROM contexts WHERE type = ?1 AND name = ?2");
  sel.bind(1, type).bind(2, name);
  TERN_CHECK(sel.step());
  int64_t id = sel.integer(0);
  t.commit();
  return id;
}

std::vector<Context> MetadataStore::contexts_of_execution(int64_t execution_id) {
  Statement s(*this,
              "SELECT c.id, c.type, c.name, c.create_time FROM contexts c JOIN associations a ON "
              "a.context_id = c.id WHERE a.execution_id = ?1 ORDER BY c.id");
  s.bind(1, execution_id);
  std::vector<Context> out;
  while (s.step()) out.push_back({s.integer(0), s.text(1), s.text(2), s.integer(3)});
  return out;
}

// --- artifacts ---

int64_t MetadataStore::type_id(const std::string& type) {
  Statement ins(*this, "INSERT OR IGNORE INTO artifact_types (name) VALUES (?1)");
  ins.bind(1, type).run();
  Statement sel(*this, "SELECT id FROM artifact_types WHERE name = ?1");
  sel.bind(1, type);
  TERN_CHECK(sel.step());
  return sel.integer(0);
}

int64_t MetadataStore::insert_artifact(Artifact& a) {
  if (a.create_time_ms == 0) a.create_time_ms = now_ms();
  Statement s(*this,
              "INSERT INTO artifacts (type_id, uri, content_hash, state, create_time) VALUES (?1, "
              "?2, ?3, ?4, ?5)");
  s.bind(1, type_id(a.type))
      .bind(2, a.uri)
      .bind(3, a.content_hash)
      .bind(4, artifact_state_name(a.state))
      .bind(5, a.create_time_ms)
      .run();
  a.id = sqlite3_last_insert_rowid(static_cast<sqlite3*>(db_));
  for (const auto& [k, v] : a.properties) {
    Statement p(*this,
                "INSERT INTO artifact_properties (artifact_id, name, value) VALUES (?1, ?2, ?3)");
    p.bind(1, a.id).bind(2, k).bind(3, v).run();
  }
  return a.id;
}

namespace {
constexpr const char* kArtifactColumns =
    "a.id, t.name, a.uri, a.content_hash, a.state, a.create_time";
}

Artifact MetadataStore::read_artifact_row(Statement& s, int c) {
  Artifact a;
  a.id = s.integer(c);
  a.type = s.text(c + 1);
  a.uri = s.text(c + 2);
  a.content_hash = s.text(c + 3);
  a.state = s.text(c + 4) == "LIVE" ? ArtifactState::kLive : ArtifactState::kDeleted;
  a.create_time_ms = s.integer(c + 5);
  Statement p(*this, "SELECT name, value FROM artifact_properties WHERE artifact_id = ?1");
  p.bind(1, a.id);
  while (p.step()) a.properties[p.text(0)] = p.text(1);
  return a;
}

std::optional<Artifact> MetadataStore::artifact(int64_t id) {
  Statement s(*this, str_cat("SELECT ", kArtifactColumns,
                             " FROM artifacts a JOIN artifact_types t ON t.id = a.type_id WHERE "
                             "a.id = ?1"));
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return read_artifact_row(s, 0);
}

void MetadataStore::set_artifact_state(int64_t id, ArtifactState state) {
  Transaction t(*this);
  Statement s(*this, "UPDATE artifacts SET state = ?1 WHERE id = ?2");
  s.bind(1, artifact_state_name(state)).bind(2, id).run();
  t.commit();
}

std::vector<Artifact> MetadataStore::artifacts_with_property(const std::string& type,
                                                             const std::string& name,
                                                             const std::string& value) {
  Statement s(*this, str_cat("SELECT ", kArtifactColumns,
                             " FROM artifacts a JOIN artifact_types t ON t.id = a.type_id JOIN "
                             "artifact_properties p ON p.artifact_id = a.id WHERE t.name = ?1 AND "
                             "p.name = ?2 AND p.value = ?3 ORDER BY a.id DESC"));
  s.bind(1, type).bind(2, name).bind(3, value);
  std::vector<Artifact> out;
  while (s.step()) out.push_back(read_artifact_row(s, 0));
  return out;
}

std::vector<Artifact> MetadataStore::artifacts_of_type(const std::string& type) {
  Statement s(*this, str_cat("SELECT ", kArtifactColumns,
                             " FROM artifacts a JOIN artifact_types t ON t.id = a.type_id WHERE "
                             "t.name = ?1 ORDER BY a.id DESC"));
  s.bind(1, type);
  std::vector<Artifact> out;
  while (s.step()) out.push_back(read_artifact_row(s, 0));
  return out;
}

std::vector<Artifact> MetadataStore::artifacts_with_uri(const std::string& uri) {
  Statement s(*this, str_cat("SELECT ", kArtifactColumns,
                             " FROM artifacts a JOIN artifact_types t ON t.id = a.type_id WHERE "
                             "a.uri = ?1 ORDER BY a.id DESC"));
  s.bind(1, uri);
  std::vector<Artifact> out;
  while (s.step()) out.push_back(read_artifact_row(s, 0));
  return out;
}

std::vector<std::pair<Event, Artifact>> MetadataStore::events_of_execution(
    int64_t execution_id, std::optional<EventType> type) {
  Statement s(*this,
              str_cat("SELECT e.type, e.role, ", kArtifactColumns,
                      " FROM events e JOIN artifacts a ON a.id = e.artifact_id JOIN artifact_types "
                      "t ON t.id = a.type_id WHERE e.execution_id = ?1 ",
                      type ? "AND e.type = ?2 " : "", "ORDER BY e.type, e.role"));
  s.bind(1, execution_id);
  if (type) s.bind(2, event_type_name(*type));
  std::vector<std::pair<Event, Artifact>> out;
  while (s.step()) {
    Event e;
    e.execution_id = execution_id;
    e.type = s.text(0) == "INPUT" ? EventType::kInput : EventType::kOutput;
    e.role = s.text(1);
    Artifact a = read_artifact_row(s, 2);
    e.artifact_id = a.id;
    out.emplace_back(std::move(e), std::move(a));
  }
  return out;
}

std::vector<Event> MetadataStore::events_of_artifact(int64_t artifact_id) {
  Statement s(*this,
              "SELECT execution_id, type, role FROM events WHERE artifact_id = ?1 ORDER BY "
              "execution_id");
  s.bind(1, artifact_id);
  std::vector<Event> out;
  while (s.step()) {
    out.push_back({s.integer(0), artifact_id,
                   s.text(1) == "INPUT" ? EventType::kInput : EventType::kOutput, s.text(2)});
  }
  return out;
}

std::optional<Execution> MetadataStore::producer(int64_t artifact_id) {
  Statement s(*this,
              "SELECT x.id, x.component, x.state, x.cache_key, x.settings, x.start_time, "
              "x.end_time, x.message FROM executions x JOIN events e ON e.execution_id = x.id "
              "WHERE e.artifact_id = ?1 AND e.type = 'OUTPUT' AND x.state = 'COMPLETE' ORDER BY "
              "x.id LIMIT 1");
  s.bind(1, artifact_id);
  if (!s.step()) return std::nullopt;
  return read_execution_row(s);
}

// --- executions ---

Execution MetadataStore::read_execution_row(Statement& s) {
  Execution x;
  x.id = s.integer(0);
  x.component = s.text(1);
  x.state = parse_execution_state(s.text(2));
  x.cache_key = s.text(3);
  x.settings_json = s.text(4);
  x.start_time_ms = s.integer(5);
  x.end_time_ms = s.integer(6);
  x.message = s.text(7);
  return x;
}

std::vector<Execution> MetadataStore::read_executions(Statement& s) {
  std::vector<Execution> out;
  while (s.step()) out.push_back(read_execution_row(s));
  return out;
}

namespace {
constexpr const char* kExecutionSelect =
    "SELECT id, component, state, cache_key, settings, start_time, end_time, message FROM "
    "executions ";
}

int64_t MetadataStore::begin_execution(const std::string& component, const std::string& cache_key,
                                       const std::string& settings_json,
                                       const std::vector<int64_t>& context_ids,
                                       std::vector<RoleArtifact>& inputs) {
  Transaction t(*this);
  Statement s(*this,
              "INSERT INTO executions (component, state, cache_key, settings, start_time) VALUES "
              "(?1, 'RUNNING', ?2, ?3, ?4)");
  s.bind(1, component).bind(2, cache_key).bind(3, settings_json).bind(4, now_ms()).run();
  const int64_t id = sqlite3_last_insert_rowid(static_cast<sqlite3*>(db_));
  for (int64_t c : context_ids) {
    Statement a(*this, "INSERT INTO associations (context_id, execution_id) VALUES (?1, ?2)");
    a.bind(1, c).bind(2, id).run();
  }
  for (RoleArtifact& in : inputs) {
    if (in.artifact.id == 0) {  // an external file: the same bytes at the same path are reused
      Statement f(*this,
                  "SELECT a.id FROM artifacts a JOIN artifact_types t ON t.id = a.type_id WHERE "
                  "t.name = ?1 AND a.uri = ?2 AND a.content_hash = ?3 ORDER BY a.id LIMIT 1");
      f.bind(1, in.artifact.type).bind(2, in.artifact.uri).bind(3, in.artifact.content_hash);
      if (f.step()) {
        in.artifact.id = f.integer(0);
      } else {
        insert_artifact(in.artifact);
        for (int64_t c : context_ids) {
          Statement at(*this,
                       "INSERT OR IGNORE INTO attributions (context_id, artifact_id) VALUES (?1, "
                       "?2)");
          at.bind(1, c).bind(2, in.artifact.id).run();
        }
      }
    }
    Statement e(*this,
                "INSERT INTO events (execution_id, artifact_id, type, role) VALUES (?1, ?2, "
                "'INPUT', ?3)");
    e.bind(1, id).bind(2, in.artifact.id).bind(3, in.role).run();
  }
  t.commit();
  return id;
}

void MetadataStore::finish_execution(int64_t id, ExecutionState state,
                                     std::vector<RoleArtifact>& outputs,
                                     const std::string& message) {
  TERN_CHECK(state == ExecutionState::kComplete || state == ExecutionState::kCached);
  Transaction t(*this);
  std::vector<int64_t> contexts;
  {
    Statement c(*this, "SELECT context_id FROM associations WHERE execution_id = ?1");
    c.bind(1, id);
    while (c.step()) contexts.push_back(c.integer(0));
  }
  for (RoleArtifact& out : outputs) {
    if (out.artifact.id == 0) insert_artifact(out.artifact);
    Statement e(*this,
                "INSERT INTO events (execution_id, artifact_id, type, role) VALUES (?1, ?2, "
                "'OUTPUT', ?3)");
    e.bind(1, id).bind(2, out.artifact.id).bind(3, out.role).run();
    for (int64_t c : contexts) {
      Statement at(*this,
                   "INSERT OR IGNORE INTO attributions (context_id, artifact_id) VALUES (?1, ?2)");
      at.bind(1, c).bind(2, out.artifact.id).run();
    }
  }
  Statement u(*this,
              "UPDATE executions SET state = ?1, end_time = ?2, message = ?3 WHERE id = ?4 AND "
              "state = 'RUNNING'");
  u.bind(1, execution_state_name(state)).bind(2, now_ms()).bind(3, message).bind(4, id).run();
  TERN_CHECK(sqlite3_changes(static_cast<sqlite3*>(db_)) == 1, "execution ", id, " is not RUNNING");
  t.commit();
}

void MetadataStore::fail_execution(int64_t id, const std::string& message) {
  Transaction t(*this);
  Statement u(*this,
              "UPDATE executions SET state = 'FAILED', end_time = ?1, message = ?2 WHERE id = ?3 "
              "AND state = 'RUNNING'");
  u.bind(1, now_ms()).bind(2, message).bind(3, id).run();
  t.commit();
}

std::vector<Execution> MetadataStore::abandon_running(const std::string& message) {
  Transaction t(*this);
  Statement s(*this, str_cat(kExecutionSelect, "WHERE state = 'RUNNING' ORDER BY id"));
  std::vector<Execution> running = read_executions(s);
  Statement u(*this,
              "UPDATE executions SET state = 'ABANDONED', end_time = ?1, message = ?2 WHERE state "
              "= 'RUNNING'");
  u.bind(1, now_ms()).bind(2, message).run();
  t.commit();
  return running;
}

std::optional<Execution> MetadataStore::execution(int64_t id) {
  Statement s(*this, str_cat(kExecutionSelect, "WHERE id = ?1"));
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return read_execution_row(s);
}

std::vector<Execution> MetadataStore::executions(const std::string& component,
                                                 const std::vector<ExecutionState>& states) {
  std::string where = "WHERE (?1 = '' OR component = ?1)";
  if (!states.empty()) {
    where += " AND state IN (";
    for (size_t i = 0; i < states.size(); ++i)
      where += str_cat(i ? ", " : "", "'", execution_state_name(states[i]), "'");
    where += ")";
  }
  Statement s(*this, str_cat(kExecutionSelect, where, " ORDER BY id DESC"));
  s.bind(1, component);
  return read_executions(s);
}

std::vector<Execution> MetadataStore::complete_with_cache_key(const std::string& cache_key) {
  Statement s(*this, str_cat(kExecutionSelect,
                             "WHERE cache_key = ?1 AND state = 'COMPLETE' ORDER BY id "
                             "DESC"));
  s.bind(1, cache_key);
  return read_executions(s);
}

std::vector<std::vector<std::string>> MetadataStore::query(const std::string& sql) {
  Statement s(*this, sql);
  std::vector<std::vector<std::string>> rows;
  while (s.step()) {
    std::vector<std::string> row;
    for (int c = 0; c < s.columns(); ++c) row.push_back(s.text(c));
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace tern::pipeline
