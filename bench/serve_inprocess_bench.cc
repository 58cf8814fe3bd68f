// In-process prediction through an exported model, the baseline `make bench-serve` puts next to
// the served figures: serve::load_servable(DIR), then run(serving_default) on `--rows` copies of
// the first Fashion-MNIST test image (raw uint8, as a REST client sends it) for `--seconds`.
// Prints one JSON line: rows, calls, rows_per_s, p50_us, p99_us.
//
// Usage: serve_inprocess_bench MODEL_DIR [--rows 1] [--seconds 5] [--threads 1]
// (--threads: intra-op threads, as `tern serve --tensorflow_intra_op_parallelism`; 0 = all cores)
#include <algorithm>
#include <chrono>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "tern/data/idx_dataset.h"
#include "tern/runtime/runtime.h"
#include "tern/serve/model_dir.h"

int main(int argc, char** argv) {
  using namespace tern;
  if (argc < 2) {
    std::cerr << "usage: serve_inprocess_bench MODEL_DIR [--rows N] [--seconds S]\n";
    return 2;
  }
  std::string dir = argv[1];
  int64_t rows = 1;
  double seconds = 5;
  int threads = 1;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--rows")) rows = std::stoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--seconds")) seconds = std::stod(argv[i + 1]);
    if (!std::strcmp(argv[i], "--threads")) threads = std::stoi(argv[i + 1]);
  }
  try {
    runtime::set_intra_op_threads(threads);
    serve::ServablePtr servable = serve::load_servable(dir);
    const serve::Signature& sig = servable->signatures().at(serve::kDefaultSignature);
    TERN_CHECK_ARG(sig.inputs.size() == 1, dir, ": the bench feeds single-input signatures");
    const auto& [alias, spec] = *sig.inputs.begin();
    std::vector<int64_t> dims = spec.shape;
    dims[0] = rows;
    DType dtype = *serve::tern_dtype_of(spec.dtype);
    Tensor x = Tensor::zeros(dtype, Shape(dims));
    Tensor images = data::read_idx("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz");
    const int64_t per_row = x.num_elements() / rows;
    if (dtype == DType::kU8 && images.num_elements() >= per_row) {
      for (int64_t r = 0; r < rows; ++r)
        std::memcpy(static_cast<uint8_t*>(x.raw_data()) + r * per_row, images.raw_data(), per_row);
    }
    serve::TensorMap in{{alias, serve::TensorValue::from_tensor(x)}};
    for (int i = 0; i < 5; ++i) servable->run(serve::kDefaultSignature, in);  // compile, warm up
    std::vector<double> us;
    auto start = std::chrono::steady_clock::now();
    double elapsed = 0;
    while (elapsed < seconds) {
      auto t0 = std::chrono::steady_clock::now();
      servable->run(serve::kDefaultSignature, in);
      auto t1 = std::chrono::steady_clock::now();
      us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
      elapsed = std::chrono::duration<double>(t1 - start).count();
    }
    std::sort(us.begin(), us.end());
    auto pct = [&](double p) { return us[std::min(us.size() - 1, size_t(p * us.size()))]; };
    std::cout << "{\"rows\": " << rows << ", \"threads\": " << threads
              << ", \"calls\": " << us.size() << ", \"rows_per_s\": " << rows * us.size() / elapsed
              << ", \"p50_us\": " << pct(0.5) << ", \"p99_us\": " << pct(0.99) << "}\n";
  } catch (const Error& e) {
    std::cerr << "serve_inprocess_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
