// CPU DeviceBackend and fast-kernel registration.
#include "tern/backends/cpu/cpu_backend.h"

#include <omp.h>

#include <atomic>

#include <cstring>
#include <fstream>

#include "tern/backends/cpu/cpu_isa.h"
#include "tern/backends/cpu/cpu_kernels.h"
#include "tern/backends/cpu/onednn_common.h"
#include "tern/base/float_env.h"
#include "tern/base/thread_pool.h"

namespace tern::cpu {
namespace {

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
  Device device() const override { return {DeviceType::kCPU, 0}; }
  std::string description() const override {
    return str_cat(cpu_model(), ", ", available_cores(), " cores",
                   __builtin_cpu_supports("avx512bf16") ? ", avx512_bf16" : "");
  }
  Allocator& allocator() override { return allocator_; }
  Stream& default_stream() override { return stream_; }
  bool memory_is_host_accessible() const override { return true; }
  void copy_host_to_device(void* dst, const void* src, size_t bytes, Stream&) override {
    std::memcpy(dst, src, bytes);
  }
  void copy_device_to_host(void* dst, const void* src, size_t bytes, Stream&) override {
    std::memcpy(dst, src, bytes);
  }
  void copy_device_to_device(void* dst, const void* src, size_t bytes, Stream&) override {
    std::memcpy(dst, src, bytes);
  }
  void fill_zero(void* dst, size_t bytes, Stream&) override { std::memset(dst, 0, bytes); }
  std::unique_ptr<Event> create_event() override { return std::make_unique<HostEvent>(); }
  bool supports(DeviceCapability c) const override {
    switch (c) {
      case DeviceCapability::kBF16Compute:  // what the oneDNN bf16 kernels need
        return onednn::dtype_support(DType::kBF16).empty();
      case DeviceCapability::kF16Compute:
        return false;
      case DeviceCapability::kBlockedLayouts:
        return true;
      case DeviceCapability::kBF16WidenedContractions:
        return bf16_contractions_widened();
    }
    return false;
  }
  // OpenMP's thread count is a per-thread setting: new threads start from the process default.
  // The count is kept here and applied to each thread that runs kernels (prepare_calling_thread),
  // once per change.
  void set_num_threads(int n) override {
    const int threads = n > 0 ? n : available_cores();
    threads_.store(threads);
    generation_.fetch_add(1);
    omp_set_num_threads(threads);
  }
  int num_threads() const override { return omp_get_max_threads(); }
  void prepare_calling_thread() override {
    thread_local int applied = 0;
    const int generation = generation_.load(std::memory_order_relaxed);
    if (applied != generation) {
      omp_set_num_threads(threads_.load());
      applied = generation;
    }
    apply_denormal_mode_to_workers();
  }

 private:
  // The calling thread's OpenMP workers (each thread that starts parallel regions has its own
  // team in libgomp) keep the denormal mode of tern/base/float_env.h: set once per team size and
  // mode change, by one parallel region. The calling thread itself gets it per run, scoped.
  void apply_denormal_mode_to_workers() {
    thread_local int applied_generation = -1;
    thread_local int applied_team = 0;
    const int generation = flush_denormals_generation();
    const int team = omp_get_max_threads();
    if (applied_generation == generation && team <= applied_team) return;
    const bool on = flush_denormals();
#pragma omp parallel num_threads(team)
    {
      if (omp_get_thread_num() != 0) set_thread_flush_denormals(on);
    }
    applied_generation = generation;
    applied_team = team;
  }

 public:
 private:
  HostAllocator allocator_{"cpu:0"};
  InlineStream stream_;
  std::atomic<int> threads_{0};
  std::atomic<int> generation_{0};  // 0: never set (threads keep OpenMP's default)
};

}  // namespace

void register_cpu_backend(kernels::KernelRegistry& kernels, DeviceRegistry& devices) {
  if (!devices.find(DeviceType::kCPU)) devices.add(std::make_unique<CpuBackend>());
  register_cpu_kernels(kernels);
}

std::string onednn_version_built() {
  return str_cat(DNNL_VERSION_MAJOR, ".", DNNL_VERSION_MINOR, ".", DNNL_VERSION_PATCH);
}

std::string onednn_version_loaded() {
  const dnnl_version_t* v = dnnl_version();
  return str_cat(v->major, ".", v->minor, ".", v->patch);
}

std::string vector_kernels_isa() {
  return cpu_isa_name(cpu_isa());
}

}  // namespace tern::cpu
