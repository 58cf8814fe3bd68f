// DataParallel and the watchdog.
#include "tern/dist/data_parallel.h"

#include <pthread.h>

#include <algorithm>

namespace tern::dist {
namespace {

double seconds_between(std::chrono::steady_clock::time_point a,
                       std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

Watchdog::Watchdog(std::shared_ptr<Communicator> comm, double timeout_seconds)
    : comm_(std::move(comm)),
      fixed_timeout_(timeout_seconds),
      last_(std::chrono::steady_clock::now()) {
  TERN_CHECK_ARG(timeout_seconds >= 0, "watchdog timeout must be >= 0 seconds, got ",
                 timeout_seconds);
  thread_ = std::thread([this] { loop(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

double Watchdog::timeout_seconds() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (fixed_timeout_ > 0) return fixed_timeout_;
  if (intervals_.empty()) return 30;
  std::vector<double> sorted = intervals_;
  std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(sorted.size() / 2),
                   sorted.end());
  return std::max(30.0, 10 * sorted[sorted.size() / 2]);
}

void Watchdog::progress(const char* where) {
  auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(mu_);
  if (intervals_.size() >= 64) intervals_.erase(intervals_.begin());
  intervals_.push_back(seconds_between(last_, now));
  last_ = now;
  where_ = where;
}

void Watchdog::pause() {
  std::lock_guard<std::mutex> lock(mu_);
  ++paused_;
}

void Watchdog::resume() {
  std::lock_guard<std::mutex> lock(mu_);
  --paused_;
  last_ = std::chrono::steady_clock::now();
}

void Watchdog::loop() {
  pthread_setname_np(pthread_self(), "tern-watchdog");
  for (;;) {
    const double timeout = timeout_seconds();
    std::unique_lock<std::mutex> lock(mu_);
    if (cv_.wait_for(lock, std::chrono::milliseconds(100), [&] { return stop_; })) return;
    const double idle = seconds_between(last_, std::chrono::steady_clock::now());
    if (paused_ == 0 && idle > timeout) {
      const std::string where = where_;
      lock.unlock();
      comm_->abort(124, str_cat("watchdog: no progress for ", static_cast<int64_t>(idle),
                                " s (timeout ", timeout, " s; last progress: ", where,
                                "); another rank is probably stopped or hung. Aborting the job ",
                                "(set distribute.watchdog_timeout to change the timeout)"));
    }
  }
}

DataParallel::DataParallel(std::shared_ptr<Communicator> comm, DataParallelOptions options)
    : comm_(std::move(comm)), options_(options) {
  TERN_CHECK_ARG(comm_ != nullptr, "DataParallel: no communicator");
}

DataParallel::~DataParallel() = default;

GradientReducer& DataParallel::reducer(const std::vector<TensorType>& grads) {
  if (reducer_ && reducer_->grads() != grads) {
    throw_error(ErrorCode::kFailedPrecondition,
                "data-parallel training: the model's gradients changed between compiled steps (",
                reducer_->grads().size(), " before, ", grads.size(), " now)");
  }
  if (!reducer_) reducer_ = std::make_unique<GradientReducer>(comm_, grads, options_.buckets);
  return *reducer_;
}

Watchdog& DataParallel::watchdog() {
  if (!watchdog_) watchdog_ = std::make_unique<Watchdog>(comm_, options_.watchdog_seconds);
  return *watchdog_;
}

namespace {
constexpr std::string_view kRanksMagic = "tern-rank-blobs/1\n";
}

std::string pack_rank_blobs(const std::vector<std::string>& blobs) {
  std::string out(kRanksMagic);
  out += str_cat(blobs.size(), "\n");
  for (const auto& b : blobs) out += str_cat(b.size(), "\n");
  for (const auto& b : blobs) out += b;
  return out;
}

bool is_packed_rank_blobs(const std::string& blob) {
  return blob.compare(0, kRanksMagic.size(), kRanksMagic) == 0;
}

std::vector<std::string> unpack_rank_blobs(const std::string& packed, const std::string& what) {
  if (!is_packed_rank_blobs(packed)) {
    throw_error(ErrorCode::kDataLoss, what, ": not a per-worker state (no '",
                kRanksMagic.substr(0, kRanksMagic.size() - 1), "' header)");
  }
  size_t pos = kRanksMagic.size();
  auto read_number = [&]() -> size_t {
    size_t end = packed.find('\n', pos);
    // Canonical decimal only: "007" read as 7 made two encodings of one blob list (the fuzz
    // target's pack(unpack(x)) == x failed).
    if (end == std::string::npos || end == pos || end - pos > 19 ||
        (packed[pos] == '0' && end - pos > 1)) {
      throw_error(ErrorCode::kDataLoss, what, ": bad per-worker header at byte ", pos);
    }
    size_t v = 0;
    for (size_t i = pos; i < end; ++i) {
      if (packed[i] < '0' || packed[i] > '9')
        throw_error(ErrorCode::kDataLoss, what, ": bad per-worker header at byte ", i);
      v = v * 10 + static_cast<size_t>(packed[i] - '0');
    }
    pos = end + 1;
    return v;
  };
  const size_t n = read_number();
  if (n > 1u << 20) throw_error(ErrorCode::kDataLoss, what, ": ", n, " workers is not plausible");
  std::vector<size_t> sizes;
  for (size_t i = 0; i < n; ++i) sizes.push_back(read_number());
  std::vector<std::string> blobs;
  for (size_t sz : sizes) {
    if (sz > packed.size() - pos) {
      throw_error(ErrorCode::kDataLoss, what, ": per-worker state truncated at byte ",
                  packed.size(), " (needs ", pos + sz, ")");
    }
    blobs.push_back(packed.substr(pos, sz));
    pos += sz;
  }
  if (pos != packed.size())
    throw_error(ErrorCode::kDataLoss, what, ": ", packed.size() - pos, " trailing bytes");
  return blobs;
}

}  // namespace tern::dist
