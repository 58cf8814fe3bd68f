// Test helpers for ServerCore and the batcher: AddServable (y = x + k over serving_default,
// recording every batch size it ran), a fake Loader reading k from <version dir>/model.txt (a
// file named `broken` makes it throw DataLoss), and temp model folders.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tern/serve/server_core.h"

namespace tern::serve::testing {

// What the servables of one test saw.
struct Probe {
  std::mutex mu;
  std::vector<int64_t> batch_sizes;  // dim 0 of every run (warmup included)
  std::atomic<int> loads{0};
  // Called at the start of every run(); may block (a gate).
  std::function<void()> on_run;

  int64_t max_batch() {
    std::lock_guard<std::mutex> lock(mu);
    int64_t m = 0;
    for (int64_t b : batch_sizes) m = std::max(m, b);
    return m;
  }
};

// serving_default: x DT_FLOAT [-1, 1] -> y = x + k; also DT_STRING "s" [-1] -> "t" = s + suffix
// on signature "strings".
class AddServable : public Servable {
 public:
  AddServable(float k, std::shared_ptr<Probe> probe) : k_(k), probe_(std::move(probe)) {
    Signature sig;
    sig.inputs["x"] = TensorSpec{WireDType::kFloat, {-1, 1}, false, "x:0"};
    sig.outputs["y"] = TensorSpec{WireDType::kFloat, {-1, 1}, false, "y:0"};
    signatures_[kDefaultSignature] = sig;
    Signature strings;
    strings.inputs["s"] = TensorSpec{WireDType::kString, {-1}, false, "s:0"};
    strings.outputs["t"] = TensorSpec{WireDType::kString, {-1}, false, "t:0"};
    signatures_["strings"] = strings;
  }
  const SignatureMap& signatures() const override { return signatures_; }
  TensorMap run(const std::string& signature, const TensorMap& inputs) const override {
    if (probe_->on_run) probe_->on_run();
    TERN_CHECK_ARG(signatures_.count(signature), "no signature ", signature);
    const TensorValue& in = inputs.begin()->second;
    {
      std::lock_guard<std::mutex> lock(probe_->mu);
      probe_->batch_sizes.push_back(in.shape.at(0));
    }
    TensorMap out;
    if (signature == "strings") {
      std::vector<std::string> t;
      for (const std::string& s : inputs.at("s").strings)
        t.push_back(s + "!" + std::to_string(int(k_)));
      out["t"] = TensorValue::from_strings(in.shape, std::move(t));
      return out;
    }
    const TensorValue& x = inputs.at("x");
    TERN_CHECK_ARG(x.dtype == WireDType::kFloat && x.shape.size() == 2 && x.shape[1] == 1,
                   "x must be DT_FLOAT[n,1], got ", x.type_string());
    Tensor y(DType::kF32, Shape(x.shape));
    for (int64_t i = 0; i < y.num_elements(); ++i) y.set(i, x.numbers.get(i) + k_);
    out["y"] = TensorValue::from_tensor(std::move(y));
    return out;
  }
  float k() const { return k_; }

 private:
  float k_;
  std::shared_ptr<Probe> probe_;
  SignatureMap signatures_;
};

inline TensorMap x_rows(const std::vector<float>& values) {
  TensorMap m;
  m["x"] = TensorValue::from_tensor(
      Tensor::from_vector<float>(Shape{static_cast<int64_t>(values.size()), 1}, values));
  return m;
}

inline std::vector<float> y_rows(const TensorMap& out) {
  std::vector<float> v;
  const Tensor& y = out.at("y").numbers;
  for (int64_t i = 0; i < y.num_elements(); ++i) v.push_back(static_cast<float>(y.get(i)));
  return v;
}

// Reads k from model.txt; `broken` in the folder makes it throw DataLoss.
inline Loader fake_loader(std::shared_ptr<Probe> probe) {
  return [probe](const std::string& dir) -> ServablePtr {
    ++probe->loads;
    if (std::filesystem::exists(dir + "/broken")) {
      throw_error(ErrorCode::kDataLoss, dir, "/broken: this version is broken");
    }
    std::ifstream in(dir + "/model.txt");
    float k = 0;
    if (!(in >> k)) throw_error(ErrorCode::kDataLoss, dir, "/model.txt: no number");
    return std::make_shared<AddServable>(k, probe);
  };
}

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "tern_serve_XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The code of the tern::Error that `f` throws (its message into `message`); a test failure if none.
template <typename F>
ErrorCode error_of(F&& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (message) *message = e.message();
    return e.code();
  }
  ADD_FAILURE() << "no error thrown";
  return ErrorCode::kInternal;
}

inline void write_file(const std::string& path, const std::string& text) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << text;
}

// <base>/<name>/model.txt holding k.
inline void write_version(const std::string& base, const std::string& name, float k) {
  write_file(base + "/" + name + "/model.txt", std::to_string(k));
}

// EXPECT_TRUE(contains(log, "...")) prints both on failure.
inline ::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << part << "\" not found in:\n" << text;
}

// Waits (bounded) until pred() holds; false on timeout.
inline bool wait_for(const std::function<bool()>& pred,
                     std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// A gate: run() calls block in wait() until open() (bounded: 10 s, then they fail the test).
class Gate {
 public:
  void wait() {
    std::unique_lock<std::mutex> lock(mu_);
    ++waiting_;
    cv_.notify_all();
    if (!cv_.wait_for(lock, std::chrono::seconds(10), [this] { return open_; })) {
      ADD_FAILURE() << "gate never opened";
    }
  }
  void open() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  // EXPECT_TRUE(contains(log, "...")) prints both on failure.
  inline ::testing::AssertionResult contains(const std::string& text, const std::string& part) {
    if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "\"" << part << "\" not found in:\n" << text;
  }

  // Waits (bounded) until n callers are blocked in wait().
  bool wait_for_waiters(int n) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return waiting_ >= n; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  int waiting_ = 0;
};

}  // namespace tern::serve::testing
