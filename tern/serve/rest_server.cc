// TF Serving's REST API on cpp-httplib: routing, body limits, handlers, the bounded worker pool.
#include "tern/serve/rest_server.h"

#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <condition_variable>
#include <deque>
#include <mutex>

#include "tern/serve/json_example.h"
#include "tern/serve/json_model_info.h"
#include "tern/serve/json_tensor.h"
#include "tern/serve/tf_status.h"

namespace tern::serve {
namespace {

constexpr const char* kJson = "application/json";

// --- routing (http_rest_api_util.cc's three regexes) ---

enum class Api { kStatus, kMetadata, kPredict, kClassify, kRegress };

struct Route {
  Api api = Api::kStatus;
  ModelSpec spec;
};

std::string_view api_label(Api api) {
  switch (api) {
    case Api::kPredict:
      return "predict";
    case Api::kClassify:
      return "classify";
    case Api::kRegress:
      return "regress";
    default:
      return "";
  }
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// %XX decoding as curl_easy_unescape: '+' stays, a bad escape is kept as written.
std::string url_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      int hi = hex_digit(s[i + 1]), lo = hex_digit(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

// TF Serving's routing regexes (SERVING.md 1.1), matched by hand: the literal parts ignore case,
// names and labels are [^/:]+, versions \d+.
//   POST (?i)/v1/models/NAME(/versions/N|/labels/L)?:(classify|regress|predict)
//   GET  (?i)/v1/models(/NAME)?(/versions/N|/labels/L)?(/metadata)?
// (std::regex, besides being slow, trips GCC 12's -Wmaybe-uninitialized under ASan.)
class PathCursor {
 public:
  explicit PathCursor(std::string_view s) : s_(s) {}
  bool done() const { return s_.empty(); }
  std::string_view rest() const { return s_; }
  // Consumes `lit` (ASCII, compared ignoring case) if the path continues with it.
  bool eat(std::string_view lit) {
    if (s_.size() < lit.size()) return false;
    for (size_t i = 0; i < lit.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(s_[i])) != lit[i]) return false;
    }
    s_.remove_prefix(lit.size());
    return true;
  }
  // The longest non-empty run of characters outside `stop` (empty if none).
  std::string_view take_until(std::string_view stop) {
    size_t n = s_.find_first_of(stop);
    if (n == std::string_view::npos) n = s_.size();
    std::string_view out = s_.substr(0, n);
    s_.remove_prefix(n);
    return out;
  }
  std::string_view take_digits() {
    size_t n = 0;
    while (n < s_.size() && s_[n] >= '0' && s_[n] <= '9') ++n;
    std::string_view out = s_.substr(0, n);
    s_.remove_prefix(n);
    return out;
  }

 private:
  std::string_view s_;
};

struct PathParts {
  std::optional<std::string_view> name, version, label;
};

// The optional (/versions/N | /labels/L) group; on a partial match the cursor is left unchanged.
void take_version_or_label(PathCursor& c, PathParts& p) {
  PathCursor save = c;
  if (c.eat("/versions/")) {
    std::string_view v = c.take_digits();
    if (!v.empty()) {
      p.version = v;
      return;
    }
  } else if (c.eat("/labels/")) {
    std::string_view l = c.take_until("/:");
    if (!l.empty()) {
      p.label = l;
      return;
    }
  }
  c = save;
}

void fill_spec(const PathParts& p, ModelSpec& spec) {
  spec.name = url_decode(std::string(*p.name));
  if (p.version) {
    int64_t n = 0;
    auto r = std::from_chars(p.version->data(), p.version->data() + p.version->size(), n);
    if (r.ec != std::errc() || r.ptr != p.version->data() + p.version->size()) {
      throw_error(ErrorCode::kInvalidArgument, "Failed to convert version: ", *p.version);
    }
    spec.version = n;
  }
  if (p.label) spec.label = url_decode(std::string(*p.label));
}

// POST: the method after ':' as written (case kept), or nullopt when the path does not match.
std::optional<std::string_view> match_post(std::string_view path, PathParts& p) {
  PathCursor c(path);
  if (!c.eat("/v1/models/")) return std::nullopt;
  std::string_view name = c.take_until("/:");
  if (name.empty()) return std::nullopt;
  p.name = name;
  take_version_or_label(c, p);
  if (!c.eat(":")) return std::nullopt;
  std::string_view method = c.rest();
  for (std::string_view m : {"classify", "regress", "predict"}) {
    PathCursor mc(method);
    if (mc.eat(m) && mc.done()) return method;
  }
  return std::nullopt;
}

// GET: whether the path matches; `metadata` receives the "/metadata" suffix as written.
bool match_get(std::string_view path, bool with_name, PathParts& p,
               std::optional<std::string_view>& metadata) {
  PathCursor c(path);
  if (!c.eat("/v1/models")) return false;
  p = PathParts{};
  metadata.reset();
  if (with_name) {
    if (!c.eat("/")) return false;
    std::string_view name = c.take_until("/:");
    if (name.empty()) return false;
    p.name = name;
  }
  take_version_or_label(c, p);
  if (!c.done()) {
    std::string_view tail = c.rest();
    if (!c.eat("/metadata") || !c.done()) return false;
    metadata = tail.substr(1);
  }
  return true;
}

// nullopt: not under /v1/ (404). Throws InvalidArgument for a malformed /v1 request.
std::optional<Route> parse_route(const std::string& method, const std::string& path) {
  if (!PathCursor(path).eat("/v1/")) return std::nullopt;
  Route route;
  PathParts parts;
  if (method == "POST") {
    std::optional<std::string_view> api = match_post(path, parts);
    if (api && (*api == "predict" || *api == "classify" || *api == "regress")) {
      route.api = *api == "predict"    ? Api::kPredict
                  : *api == "classify" ? Api::kClassify
                                       : Api::kRegress;
      fill_spec(parts, route.spec);
      return route;
    }
  } else if (method == "GET") {
    std::optional<std::string_view> metadata;
    // As the regex's optional name group backtracks: with a name first, then without one.
    if (match_get(path, true, parts, metadata) || match_get(path, false, parts, metadata)) {
      if (!parts.name) throw_error(ErrorCode::kInvalidArgument, "Missing model name in request.");
      if (!metadata || *metadata == "metadata") {
        route.api = metadata ? Api::kMetadata : Api::kStatus;
        fill_spec(parts, route.spec);
        return route;
      }
    }
  }
  throw_error(ErrorCode::kInvalidArgument, "Malformed request: ", method, " ", path);
}

// --- handlers ---

struct Reply {
  int status = 200;
  std::string body;
  std::string content_type = kJson;
};

const Signature& find_signature(const ServableHandle& handle, const std::string& name) {
  const SignatureMap& sigs = handle.servable->signatures();
  auto it = sigs.find(name);
  if (it == sigs.end()) {
    throw_error(ErrorCode::kInvalidArgument, "Serving signature name: \"", name,
                "\" not found in signature def");
  }
  return it->second;
}

std::string run_api(ServingBackend& backend, const Route& route, const ServableHandle& handle,
                    std::string_view body, Clock::time_point deadline) {
  JsonDocument doc = parse_json_body(body);
  std::string sig_name = json_signature_name(doc);
  const Signature& sig = find_signature(handle, sig_name);
  if (route.api == Api::kPredict) {
    JsonPredictRequest req = json_predict_inputs(doc, sig);
    TensorMap outputs = backend.predict(handle, sig_name, req.inputs, deadline);
    return predict_response_json(outputs, req.format);
  }
  if (route.api == Api::kClassify) {
    check_classify_signature(sig_name, sig);
  } else {
    check_regress_signature(sig_name, sig);
  }
  std::vector<std::string> examples = json_examples(doc);
  const int64_t batch = static_cast<int64_t>(examples.size());
  TensorMap outputs =
      backend.predict(handle, sig_name, examples_tensor_map(std::move(examples)), deadline);
  return route.api == Api::kClassify ? classify_response_json(outputs, batch)
                                     : regress_response_json(outputs, batch);
}

Reply error_reply(int status, std::string_view message) {
  return {status, error_json(message)};
}

bool starts_with_v1(const std::string& path) {
  return path.size() >= 4 && (path[0] == '/') && (path[1] == 'v' || path[1] == 'V') &&
         path[2] == '1' && path[3] == '/';
}

std::string path_of(const httplib::Request& req) {
  std::string target = req.target.empty() ? req.path : req.target;
  return target.substr(0, target.find('?'));
}

// --- a bounded worker pool for httplib's connections ---

// num_threads workers; at most `max_pending` connections queued or running. enqueue() blocks the
// accept loop while full, so neither threads nor queued sockets grow without bound.
class BoundedPool : public httplib::TaskQueue {
 public:
  BoundedPool(size_t num_threads, size_t max_pending) : max_pending_(max_pending) {
    for (size_t i = 0; i < num_threads; ++i) workers_.emplace_back([this] { work(); });
  }

  void enqueue(std::function<void()> fn) override {
    std::unique_lock lock(mu_);
    space_.wait(lock, [&] { return pending_ < max_pending_; });
    ++pending_;
    jobs_.push_back(std::move(fn));
    ready_.notify_one();
  }

  void shutdown() override {
    {
      std::lock_guard lock(mu_);
      shutdown_ = true;
    }
    ready_.notify_all();
    for (auto& t : workers_) t.join();
  }

 private:
  void work() {
    while (true) {
      std::function<void()> fn;
      {
        std::unique_lock lock(mu_);
        ready_.wait(lock, [&] { return shutdown_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        fn = std::move(jobs_.front());
        jobs_.pop_front();
      }
      fn();
      {
        std::lock_guard lock(mu_);
        --pending_;
      }
      space_.notify_one();
    }
  }

  const size_t max_pending_;
  std::mutex mu_;
  std::condition_variable ready_, space_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> workers_;
  size_t pending_ = 0;
  bool shutdown_ = false;
};

// httplib's listen backlog is 5 (compiled into Debian's library); connections beyond it see
// dropped SYNs and read errors while the accept loop waits for a worker slot. Linux lets listen()
// be called again on a listening socket to raise it.
class HttpServer : public httplib::Server {
 public:
  bool raise_backlog(int backlog) { return ::listen(svr_sock_, backlog) == 0; }
};

}  // namespace

RestServer::RestServer(ServingBackend& backend, RestOptions options)
    : backend_(backend), options_(std::move(options)) {
  TERN_CHECK_ARG(options_.max_body_bytes > 0, "RestOptions.max_body_bytes must be > 0, got ",
                 options_.max_body_bytes);
  TERN_CHECK_ARG(options_.max_connections > 0, "RestOptions.max_connections must be > 0, got ",
                 options_.max_connections);
  TERN_CHECK_ARG(options_.timeout_ms > 0, "RestOptions.timeout_ms must be > 0, got ",
                 options_.timeout_ms);
  TERN_CHECK_ARG(options_.num_threads >= 0, "RestOptions.num_threads must be >= 0, got ",
                 options_.num_threads);
}

RestServer::~RestServer() {
  stop();
}

constexpr size_t kKeepAliveMaxRequests = 100000;

void RestServer::start() {
  TERN_CHECK(!server_, "RestServer::start called twice");
  auto server = std::make_unique<HttpServer>();
  const size_t max_pending = static_cast<size_t>(options_.max_connections);
  const size_t threads =
      options_.num_threads > 0 ? static_cast<size_t>(options_.num_threads) : max_pending;
  server->new_task_queue = [threads, max_pending] {
    return new BoundedPool(std::min(threads, max_pending), max_pending);
  };
  // httplib closes a kept-alive connection after 5 requests by default: the client reconnects
  // (handshake, accept, another worker) every fifth request. An idle connection still gives its
  // worker back after the keep-alive timeout (5 s).
  server->set_keep_alive_max_count(kKeepAliveMaxRequests);
  // SO_REUSEADDR only: httplib's default adds SO_REUSEPORT, which lets a second server share the
  // port silently instead of failing to bind. TCP_NODELAY (inherited by accepted sockets): the
  // response goes out as headers then body, and with Nagle's algorithm the body waits for the
  // client's delayed ACK, 40 ms per request on a kept-alive connection.
  server->set_socket_options([](socket_t sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    setsockopt(sock, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
  });
  server->set_tcp_nodelay(true);
  server->set_payload_max_length(static_cast<size_t>(options_.max_body_bytes));
  const RestOptions& opt = options_;
  ServingBackend& backend = backend_;

  auto add_common_headers = [&opt](httplib::Response& res) {
    if (opt.enable_cors) {
      res.set_header("Access-Control-Allow-Origin", "*");
      res.set_header("Access-Control-Allow-Methods", "POST, GET");
      res.set_header("Access-Control-Allow-Headers", "Content-Type");
    }
  };
  auto send = [add_common_headers](httplib::Response& res, const Reply& reply) {
    res.status = reply.status;
    res.set_content(reply.body, reply.content_type.c_str());
    add_common_headers(res);
  };

  // Everything except POST bodies: GET, OPTIONS, metrics, wrong verbs, 404s.
  server->set_pre_routing_handler([&opt, &backend, send](const httplib::Request& req,
                                                         httplib::Response& res) {
    const std::string path = path_of(req);
    if (req.method == "POST") return httplib::Server::HandlerResponse::Unhandled;
    if (!opt.metrics_path.empty() && req.method == "GET" && path == opt.metrics_path) {
      send(res, {200, backend.prometheus_metrics(), "text/plain; version=0.0.4"});
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!starts_with_v1(path)) {
      res.status = 404;
      return httplib::Server::HandlerResponse::Handled;
    }
    if (req.method == "OPTIONS" && opt.enable_cors) {
      const std::string origin = req.get_header_value("Origin");
      send(res, origin.starts_with("http://") || origin.starts_with("https://")
                    ? Reply{200, ""}
                    : error_reply(400, "CORS preflight request without a valid Origin header"));
      return httplib::Server::HandlerResponse::Handled;
    }
    const auto start = Clock::now();
    RequestInfo info;
    info.entrypoint = "REST";
    std::optional<ErrorCode> code;
    Reply reply;
    try {
      std::optional<Route> route = parse_route(req.method, path);
      if (!route) {
        res.status = 404;
        return httplib::Server::HandlerResponse::Handled;
      }
      info.model_name = route->spec.name;
      if (route->api == Api::kStatus) {
        reply.body = model_status_json(backend.status(route->spec));
      } else {
        ServableHandle handle = backend.resolve(route->spec);
        info.version = handle.version;
        reply.body =
            model_metadata_json(handle.model_name, handle.version, handle.servable->signatures());
      }
    } catch (const Error& e) {
      code = e.code();
      reply = error_reply(http_status_of(code), e.message());
    } catch (const std::exception& e) {
      code = ErrorCode::kInternal;
      reply = error_reply(500, e.what());
    }
    backend.record_request(
        info, code, std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start));
    send(res, reply);
    return httplib::Server::HandlerResponse::Handled;
  });

  server->Post(".*", [&opt, &backend, send](const httplib::Request& req, httplib::Response& res,
                                            const httplib::ContentReader& reader) {
    const auto start = Clock::now();
    const Clock::time_point deadline = start + std::chrono::milliseconds(opt.timeout_ms);
    const std::string path = path_of(req);
    RequestInfo info;
    info.entrypoint = "REST";
    std::optional<ErrorCode> code;
    Reply reply;
    bool too_large = false;
    try {
      std::optional<Route> route = parse_route("POST", path);
      if (!route) {
        res.status = 404;
        res.set_header("Connection", "close");
        return;
      }
      info.model_name = route->spec.name;
      info.api = api_label(route->api);
      ServableHandle handle = backend.resolve(route->spec);
      info.version = handle.version;
      // The body, decompressed by httplib when Content-Encoding is gzip / deflate, is cut off at
      // the cap: a gzip bomb stops after max_body_bytes of output.
      std::string body;
      const size_t cap = static_cast<size_t>(opt.max_body_bytes);
      bool ok = reader([&](const char* data, size_t n) {
        if (body.size() + n > cap) {
          too_large = true;
          return false;
        }
        body.append(data, n);
        return true;
      });
      too_large = too_large || res.status == 413;
      if (too_large) {
        res.set_header("Connection", "close");
        throw_error(ErrorCode::kResourceExhausted, "Request body is larger than the limit of ",
                    opt.max_body_bytes, " bytes");
      }
      if (!ok) {
        res.set_header("Connection", "close");
        throw_error(ErrorCode::kInvalidArgument,
                    "Failed to read the request body (truncated, or a bad Content-Encoding)");
      }
      reply.body = run_api(backend, *route, handle, body, deadline);
    } catch (const Error& e) {
      code = e.code();
      // The body cap is 413, not the 429 of other ResourceExhausted errors.
      reply = error_reply(too_large ? 413 : http_status_of(code), e.message());
    } catch (const std::exception& e) {
      code = ErrorCode::kInternal;
      reply = error_reply(500, e.what());
    }
    backend.record_request(
        info, code, std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start));
    send(res, reply);
  });

  // Statuses httplib sets itself (413 on Content-Length over the cap, 400 on a bad request line)
  // get a JSON body under /v1/.
  server->set_error_handler([&opt, add_common_headers](const httplib::Request& req,
                                                       httplib::Response& res) {
    if (!res.body.empty() || !starts_with_v1(path_of(req))) return;
    std::string message = res.status == 413 ? str_cat("Request body is larger than the limit of ",
                                                      opt.max_body_bytes, " bytes")
                                            : str_cat("HTTP status ", res.status);
    res.set_content(error_json(message), kJson);
    add_common_headers(res);
  });

  int port = options_.port;
  if (port == 0) {
    port = server->bind_to_any_port(options_.host);
  } else if (!server->bind_to_port(options_.host, port)) {
    port = -1;
  }
  if (port <= 0) {
    throw_error(ErrorCode::kUnavailable, "REST server cannot bind ", options_.host, ":",
                options_.port);
  }
  TERN_CHECK(server->raise_backlog(std::max(options_.max_connections, 128)),
             "listen() on the bound REST socket failed");
  port_ = port;
  server_ = std::move(server);
  listener_ = std::thread([s = server_.get()] { s->listen_after_bind(); });
  // httplib's stop() is a no-op until the accept loop runs; wait for it so stop() cannot hang.
  while (!server_->is_running()) std::this_thread::sleep_for(std::chrono::microseconds(100));
}

void RestServer::stop() {
  if (!server_) return;
  server_->stop();
  if (listener_.joinable()) listener_.join();
  server_.reset();
}

}  // namespace tern::serve
