// CPU DeviceBackend and fast-kernel registration.
#include "tern/backends/cpu/cpu_backend.h"

#include <omp.h>

#include <atomic>
#include <cstdlib>
#include <fstream>

#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/base/thread_pool.h"

namespace tern::cpu {
namespace {

class HostAllocator final : public Allocator {
 public:
  void* allocate(size_t bytes, size_t alignment) override {
    size_t rounded = (bytes + alignment - 1) / alignment * alignment;
    void* p = std::aligned_alloc(alignment, rounded == 0 ? alignment : rounded);
    if (!p)
      throw_error(ErrorCode::kResourceExhausted, "out of host memory allocating ", bytes, " bytes");
    size_t now = in_use_.fetch_add(rounded) + rounded;
    size_t peak = peak_.load();
    while (now > peak && !peak_.compare_exchange_weak(peak, now)) {
    }
    return p;
  }
  void deallocate(void* ptr) override { std::free(ptr); }
  size_t bytes_in_use() const override { return in_use_.load(); }
  size_t peak_bytes_in_use() const override { return peak_.load(); }

 private:
  std::atomic<size_t> in_use_{0};
  std::atomic<size_t> peak_{0};
};

class InlineStream final : public Stream {
 public:
  void synchronize() override {}
};

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto p = line.find(':');
      if (p != std::string::npos) return line.substr(p + 2);
    }
  }
  return "unknown CPU";
}

class CpuBackend final : public DeviceBackend {
 public:
  DeviceType type() const override { return DeviceType::kCPU; }
  std::string description() const override {
    return str_cat(cpu_model(), ", ", available_cores(), " cores",
                   __builtin_cpu_supports("avx512bf16") ? ", avx512_bf16" : "");
  }
  Allocator& allocator() override { return allocator_; }
  Stream& default_stream() override { return stream_; }
  bool supports(DeviceCapability c) const override {
    switch (c) {
      case DeviceCapability::kBF16Compute:
        return __builtin_cpu_supports("avx512bf16");
      case DeviceCapability::kF16Compute:
        return false;
      case DeviceCapability::kBlockedLayouts:
        return true;
    }
    return false;
  }
  void set_num_threads(int n) override { omp_set_num_threads(n > 0 ? n : available_cores()); }
  int num_threads() const override { return omp_get_max_threads(); }

 private:
  HostAllocator allocator_;
  InlineStream stream_;
};

}  // namespace

void register_cpu_backend(kernels::KernelRegistry& r) {
  if (!DeviceRegistry::global().find(DeviceType::kCPU)) {
    DeviceRegistry::global().add(std::make_unique<CpuBackend>());
  }
  register_cpu_kernels(r);
}

}  // namespace tern::cpu
