// A ServingBackend over in-memory servables for the REST conformance suite (test-only header).
//
// Model "half_plus_two": version 2 (the latest) = TF Serving's half_plus_two (y = 0.5x + 2),
// version 1 = half_plus_three (y = 0.5x + 3); labels stable -> 1, canary -> 2; version 3 failed to
// load. rest_conformance_models.h writes the same models as real model directories (all but
// `bytes`, whose string outputs a graph cannot compute); tensor names and the failed version's
// status are the ones `tern serve` gives for them. Signatures on both:
//   serving_default  x DT_FLOAT [-1] -> y DT_FLOAT [-1]
//   two_inputs       a DT_FLOAT [-1,2], b DT_INT64 [-1] -> sum DT_FLOAT [-1] (a0 + a1 + b),
//                    echo_b DT_INT64 [-1]
//   bytes            text DT_STRING [-1] -> out_bytes DT_STRING (reversed), length DT_INT64
//   classify         (classify) inputs DT_STRING [-1] -> classes [-1,2] ("pos","neg"),
//                    scores [-1,2] (x, 1-x) from the example's float feature "x"
//   regress          (regress) inputs DT_STRING [-1] -> outputs [-1] (0.5x + 2)
//   scalar           x DT_FLOAT [-1] -> total DT_FLOAT [] (rank 0)
//   half             h DT_HALF [-1] -> y DT_FLOAT [-1] (graph tensor h_y)
// Model "flaky": serving_default as above; predict throws Unavailable.
// Model "slow": serving_default; predict waits until its deadline, then DeadlineExceeded — or,
// when slow_ok_ms > 0, sleeps that long and answers.
#pragma once

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

#include "tern/data/example_proto.h"
#include "tern/serve/backend.h"

namespace tern::serve::testing {

class TestServable : public Servable {
 public:
  explicit TestServable(float offset) : offset_(offset) {
    auto spec = [](WireDType d, std::vector<int64_t> shape, std::string name) {
      return TensorSpec{d, std::move(shape), false, std::move(name)};
    };
    Signature def;
    def.inputs["x"] = spec(WireDType::kFloat, {-1}, "x:0");
    def.outputs["y"] = spec(WireDType::kFloat, {-1}, "y:0");
    sigs_["serving_default"] = def;
    Signature two;
    two.inputs["a"] = spec(WireDType::kFloat, {-1, 2}, "a:0");
    two.inputs["b"] = spec(WireDType::kInt64, {-1}, "b:0");
    two.outputs["sum"] = spec(WireDType::kFloat, {-1}, "sum:0");
    two.outputs["echo_b"] = spec(WireDType::kInt64, {-1}, "echo_b:0");
    sigs_["two_inputs"] = two;
    Signature bytes;
    bytes.inputs["text"] = spec(WireDType::kString, {-1}, "text:0");
    bytes.outputs["out_bytes"] = spec(WireDType::kString, {-1}, "out:0");
    bytes.outputs["length"] = spec(WireDType::kInt64, {-1}, "len:0");
    sigs_["bytes"] = bytes;
    Signature cls;
    cls.method_name = kClassifyMethod;
    cls.inputs["inputs"] = spec(WireDType::kString, {-1}, "tf_example:0");
    cls.outputs["classes"] = spec(WireDType::kString, {-1, 2}, "");  // class names: no tensor
    cls.outputs["scores"] = spec(WireDType::kFloat, {-1, 2}, "scores:0");
    sigs_["classify"] = cls;
    Signature reg;
    reg.method_name = kRegressMethod;
    reg.inputs["inputs"] = spec(WireDType::kString, {-1}, "tf_example:0");
    reg.outputs["outputs"] = spec(WireDType::kFloat, {-1}, "outputs:0");
    sigs_["regress"] = reg;
    Signature scalar;
    scalar.inputs["x"] = spec(WireDType::kFloat, {-1}, "x:0");
    scalar.outputs["total"] = spec(WireDType::kFloat, {}, "total:0");
    sigs_["scalar"] = scalar;
    Signature half;
    half.inputs["h"] = spec(WireDType::kHalf, {-1}, "h:0");
    half.outputs["y"] = spec(WireDType::kFloat, {-1}, "h_y:0");
    sigs_["half"] = half;
  }

  const SignatureMap& signatures() const override { return sigs_; }

  TensorMap run(const std::string& signature, const TensorMap& inputs) const override {
    const Signature& sig = sigs_.at(signature);
    for (const auto& [alias, spec] : sig.inputs) {
      auto it = inputs.find(alias);
      TERN_CHECK_ARG(it != inputs.end(), "missing input ", alias);
      const TensorValue& v = it->second;
      bool ok = v.dtype == spec.dtype && v.shape.size() == spec.shape.size();
      for (size_t d = 0; ok && d < spec.shape.size(); ++d) {
        ok = spec.shape[d] < 0 || spec.shape[d] == v.shape[d];
      }
      TensorValue want;  // the loader's wording (loaded_model.cc)
      want.dtype = spec.dtype;
      want.shape = spec.shape;
      TERN_CHECK_ARG(ok, "input '", alias, "': expected ", want.type_string(), ", got ",
                     v.type_string());
    }
    TensorMap out;
    if (signature == "serving_default" || signature == "scalar") {
      const Tensor& x = inputs.at("x").numbers;
      const int64_t n = x.num_elements();
      std::vector<float> y(static_cast<size_t>(n));
      float total = 0;
      for (int64_t i = 0; i < n; ++i) {
        y[static_cast<size_t>(i)] = 0.5f * x.data<float>()[i] + offset_;
        total += x.data<float>()[i];
      }
      if (signature == "scalar") {
        out["total"] = TensorValue::from_tensor(Tensor::from_vector<float>(Shape{}, {total}));
      } else {
        out["y"] = TensorValue::from_tensor(Tensor::from_vector(Shape{n}, y));
      }
    } else if (signature == "two_inputs") {
      const Tensor& a = inputs.at("a").numbers;
      const Tensor& b = inputs.at("b").numbers;
      const int64_t n = b.num_elements();
      TERN_CHECK_ARG(a.shape().dim(0) == n, "a and b differ in batch size");
      std::vector<float> sum(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        sum[static_cast<size_t>(i)] = a.data<float>()[2 * i] + a.data<float>()[2 * i + 1] +
                                      static_cast<float>(b.data<int64_t>()[i]);
      }
      out["sum"] = TensorValue::from_tensor(Tensor::from_vector(Shape{n}, sum));
      out["echo_b"] = TensorValue::from_tensor(b.clone());
    } else if (signature == "bytes") {
      const TensorValue& text = inputs.at("text");
      std::vector<std::string> rev;
      std::vector<int64_t> len;
      for (const std::string& s : text.strings) {
        rev.emplace_back(s.rbegin(), s.rend());
        len.push_back(static_cast<int64_t>(s.size()));
      }
      const int64_t n = static_cast<int64_t>(rev.size());
      out["out_bytes"] = TensorValue::from_strings({n}, rev);
      out["length"] = TensorValue::from_tensor(Tensor::from_vector(Shape{n}, len));
    } else if (signature == "classify" || signature == "regress") {
      const TensorValue& ex = inputs.at("inputs");
      const int64_t n = static_cast<int64_t>(ex.strings.size());
      std::vector<float> xs;
      for (const std::string& s : ex.strings) {
        data::Example e = data::parse_example_proto(s);
        const data::Feature& f = e.features.at("x");
        xs.push_back(f.kind == data::FeatureKind::kFloat ? f.float_list.at(0)
                                                         : static_cast<float>(f.int64_list.at(0)));
      }
      if (signature == "classify") {
        std::vector<std::string> classes;
        std::vector<float> scores;
        for (float x : xs) {
          classes.insert(classes.end(), {"pos", "neg"});
          scores.insert(scores.end(), {x, 1 - x});
        }
        out["classes"] = TensorValue::from_strings({n, 2}, classes);
        out["scores"] = TensorValue::from_tensor(Tensor::from_vector(Shape{n, 2}, scores));
      } else {
        for (float& x : xs) x = 0.5f * x + 2;
        out["outputs"] = TensorValue::from_tensor(Tensor::from_vector(Shape{n}, xs));
      }
    } else {
      throw_error(ErrorCode::kInvalidArgument, "signature ", signature, " cannot run");
    }
    return out;
  }

 private:
  float offset_;
  SignatureMap sigs_;
};

class TestBackend : public ServingBackend {
 public:
  // What the model directory loader says about rest_conformance_models.h's truncated version 3.
  static constexpr const char* kVersion3Error =
      "/models/half_plus_two/3/fingerprint.json: fingerprint mismatch: the files hash to "
      "4c3f0e1b but the fingerprint says 9a7d2c05 (a file was changed or is incomplete)";

  struct Record {
    RequestInfo info;
    std::optional<ErrorCode> code;
  };

  TestBackend() {
    v1_ = std::make_shared<TestServable>(3.0f);
    v2_ = std::make_shared<TestServable>(2.0f);
  }

  ServableHandle resolve(const ModelSpec& spec) const override {
    ++resolves;
    if (spec.name != "half_plus_two" && spec.name != "flaky" && spec.name != "slow") {
      throw_error(ErrorCode::kNotFound, "Servable not found for request: Latest(", spec.name, ")");
    }
    TERN_CHECK_ARG(!(spec.version && spec.label),
                   "Both model version and model version label cannot be supplied.");
    int64_t version = 2;
    if (spec.label) {
      if (*spec.label == "stable") {
        version = 1;
      } else if (*spec.label != "canary") {
        throw_error(ErrorCode::kInvalidArgument,
                    "Unrecognized servable version label: ", *spec.label);
      }
    }
    if (spec.version) {
      if (*spec.version != 1 && *spec.version != 2) {
        throw_error(ErrorCode::kNotFound, "Servable not found for request: Specific(", spec.name,
                    ", ", *spec.version, ")");
      }
      version = *spec.version;
    }
    return {spec.name, version, version == 1 ? v1_ : v2_};
  }

  std::vector<VersionStatus> status(const ModelSpec& spec) const override {
    if (spec.name != "half_plus_two") {
      throw_error(ErrorCode::kNotFound, "Could not find any versions of model ", spec.name);
    }
    if (spec.version || spec.label) {
      ServableHandle h;
      try {
        h = resolve(spec);
      } catch (const Error& e) {
        if (e.code() != ErrorCode::kNotFound) throw;
        throw_error(ErrorCode::kNotFound, "Could not find version ", *spec.version, " of model ",
                    spec.name);
      }
      return {{h.version, VersionState::kAvailable, std::nullopt, ""}};
    }
    // Newest first, as ServerCore (and TF Serving's ServableStateMonitor) list them.
    return {{3, VersionState::kEnd, ErrorCode::kDataLoss, kVersion3Error},
            {2, VersionState::kAvailable, std::nullopt, ""},
            {1, VersionState::kAvailable, std::nullopt, ""}};
  }

  TensorMap predict(const ServableHandle& handle, const std::string& signature,
                    const TensorMap& inputs, Clock::time_point deadline) override {
    last_deadline_ticks = deadline.time_since_epoch().count();
    if (handle.model_name == "flaky") {
      throw_error(ErrorCode::kUnavailable,
                  "The batch scheduling queue to which this task was submitted is full");
    }
    if (handle.model_name == "slow") {
      if (slow_ok_ms > 0) {
        std::this_thread::sleep_for(std::chrono::milliseconds(slow_ok_ms.load()));
      } else {
        std::this_thread::sleep_until(deadline);
        throw_error(ErrorCode::kDeadlineExceeded, "Deadline exceeded");
      }
    }
    const SignatureMap& sigs = handle.servable->signatures();
    TERN_CHECK_ARG(sigs.count(signature), "unknown signature ", signature);
    return handle.servable->run(signature, inputs);
  }

  void record_request(const RequestInfo& info, std::optional<ErrorCode> code,
                      std::chrono::microseconds) override {
    std::lock_guard lock(mu_);
    records_.push_back({info, code});
  }

  std::string prometheus_metrics() const override {
    return ":tensorflow:serving:request_count{model_name=\"half_plus_two\",status=\"OK\"} 1\n";
  }

  std::vector<Record> records() const {
    std::lock_guard lock(mu_);
    return records_;
  }

  mutable std::atomic<int> resolves{0};
  std::atomic<int> slow_ok_ms{0};
  std::atomic<Clock::rep> last_deadline_ticks{0};

 private:
  ServablePtr v1_, v2_;
  mutable std::mutex mu_;
  std::vector<Record> records_;
};

}  // namespace tern::serve::testing
