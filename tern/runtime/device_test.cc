// The device layer as the runtime uses it, proven on the emulated device (tests/support): graphs
// compiled for it match the CPU bit for bit with exactly the copies they need, ref kernels are
// not offered to it, an op without a kernel there is placed on the host with copies around it,
// kernels receive the device's stream, allocators account honestly, and the memory limit stops
// a compile whose arena does not fit, naming the tensor.
#include <gtest/gtest.h>

#include <thread>

#include "tern/ir/parser.h"
#include "tern/ops/registry.h"
#include "tern/runtime/executable.h"
#include "tern/runtime/runtime.h"
#include "tests/support/emulated_device.h"
#include "tests/support/random_tensor.h"

namespace tern::runtime {
namespace {

using testing::EmulatedDevice;

// This binary's emulated device has no tanh and no assign kernels, to test placement.
EmulatedDevice& emu() {
  static EmulatedDevice& device = testing::register_emulated_device({"tanh", "assign"});
  return device;
}

constexpr const char* kMlp = R"(graph @mlp {
    %x = input() {dtype=f32, name="x", shape=[8, 16]}
    %w = variable() {dtype=f32, name="w", shape=[16, 4]}
    %b = constant() {value=tensor<f32[4]>[0.25, -0.5, 1, 2]}
    %h = matmul(%x, %w)
    %a = add(%h, %b)
    %r = relu(%a)
    %s = sum(%r) {axes=[1], keepdims=false}
    return {"y": %r, "s": %s}
  })";

std::vector<Tensor> run_on(DeviceType device, const char* text, VariableStore& vars,
                           const Tensor& x, std::unique_ptr<Executable>* keep = nullptr,
                           bool optimize = true) {
  auto g = ir::parse_graph(text);
  CompileOptions opts;
  opts.device = device;
  opts.optimize = optimize;
  auto exe = Executable::compile(*g, vars, opts);
  exe->feed("x", x);
  exe->run();
  std::vector<Tensor> out;
  for (size_t i = 0; i < exe->num_outputs(); ++i) out.push_back(exe->output_host(i).clone());
  if (keep) *keep = std::move(exe);
  return out;
}

// The same variable in a host store and in a store placed on the emulated device.
void create_on_both(const char* name, const Tensor& value, VariableStore& cpu,
                    VariableStore& on_emu) {
  cpu.create(name, value);
  on_emu.place_on(emu());
  on_emu.create(name, value);
}

TEST(Device, RefKernelsAreNotOfferedToADeviceTheHostCannotRead) {
  emu();
  auto& registry = kernels::KernelRegistry::global();
  for (const auto* c : registry.candidates("relu", DeviceType::kEmulated)) {
    EXPECT_EQ(c->device, DeviceType::kEmulated) << c->name << " is the CPU's";
  }
  // tanh has no emulated kernel: selection there fails and says why ref is not offered.
  ops::Attrs attrs;
  kernels::KernelSignature sig{&ops::OpRegistry::global().get("tanh"),
                               &attrs,
                               {TensorType{DType::kF32, Shape({4})}},
                               {TensorType{DType::kF32, Shape({4})}},
                               DeviceType::kEmulated,
                               false};
  try {
    registry.select(sig);
    FAIL() << "tanh selected a kernel on emu";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("ref: not offered (emu memory is not host-accessible)"),
              std::string::npos)
        << e.what();
  }
}

// fold_frozen_variables evaluates on the host: weights in memory the host cannot read stay
// variables (on the CPU the same graph's weight becomes a constant).
TEST(Device, FrozenWeightsTheHostCannotReadStayVariables) {
  emu();
  Tensor w = testing::random_tensor(DType::kF32, Shape({16, 4}), 1);
  VariableStore cpu_vars, emu_vars;
  create_on_both("w", w, cpu_vars, emu_vars);
  auto on_emu = ir::parse_graph(kMlp);
  auto on_cpu = ir::parse_graph(kMlp);
  const size_t before = on_emu->nodes_of("variable").size();
  ASSERT_GT(before, 0u);
  fold_frozen_variables(*on_emu, emu_vars);
  EXPECT_EQ(on_emu->nodes_of("variable").size(), before);
  fold_frozen_variables(*on_cpu, cpu_vars);
  EXPECT_TRUE(on_cpu->nodes_of("variable").empty());
}

TEST(Device, AGraphOnTheEmulatedDeviceMatchesTheCpuWithOnlyTheCopiesItNeeds) {
  EmulatedDevice& device = emu();
  Tensor w = testing::random_tensor(DType::kF32, Shape({16, 4}), 1);
  Tensor x = testing::random_tensor(DType::kF32, Shape({8, 16}), 2);
  VariableStore cpu_vars, emu_vars;
  create_on_both("w", w, cpu_vars, emu_vars);
  EXPECT_FALSE(emu_vars.get("w").is_host_accessible());
  std::vector<Tensor> want = run_on(DeviceType::kCPU, kMlp, cpu_vars, x);
  std::unique_ptr<Executable> exe;
  std::vector<Tensor> got = run_on(DeviceType::kEmulated, kMlp, emu_vars, x, &exe);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_TRUE(bitwise_equal(got[i], want[i])) << i;
  EXPECT_EQ(exe->copy_steps(), 0);
  for (const StepInfo& s : exe->steps()) EXPECT_EQ(s.device, "emu:0") << s.node;
  // A step: one copy in per fed input, one copy out per output read; nothing else.
  device.reset_copies();
  for (int run = 0; run < 3; ++run) {
    exe->feed("x", x);
    exe->run();
    exe->output_host(1);
  }
  testing::CopyCounts c = device.copies();
  EXPECT_EQ(c.host_to_device, 3);
  EXPECT_EQ(c.device_to_host, 3);
  EXPECT_EQ(c.device_to_device, 0);
  EXPECT_EQ(c.bytes, 3 * (8 * 16 * 4 + 8 * 4));  // x in, s out
  // Device tensors are not host memory: element access says so instead of reading garbage.
  EXPECT_THROW(exe->output(0).get(0), Error);
}

TEST(Device, AnOpWithoutAKernelOnTheDeviceRunsOnTheHostBetweenCopies) {
  EmulatedDevice& device = emu();
  const char* text = R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[4, 8]}
    %w = variable() {dtype=f32, name="w", shape=[8, 8]}
    %h = matmul(%x, %w)
    %t = tanh(%h)
    %y = add(%t, %h)
    return {"y": %y}
  })";
  Tensor w = testing::random_tensor(DType::kF32, Shape({8, 8}), 3);
  Tensor x = testing::random_tensor(DType::kF32, Shape({4, 8}), 4);
  VariableStore cpu_vars, emu_vars;
  create_on_both("w", w, cpu_vars, emu_vars);
  // Unoptimized, so tanh stays a node of its own (fusion would absorb it).
  std::vector<Tensor> want = run_on(DeviceType::kCPU, text, cpu_vars, x, nullptr, false);
  std::unique_ptr<Executable> exe;
  std::vector<Tensor> got = run_on(DeviceType::kEmulated, text, emu_vars, x, &exe, false);
  EXPECT_TRUE(bitwise_equal(got[0], want[0]));
  // %h goes to the host for tanh, and %t comes back for add: two copy steps.
  EXPECT_EQ(exe->copy_steps(), 2);
  std::vector<std::string> trace;
  for (const StepInfo& s : exe->steps()) trace.push_back(s.op + "@" + s.device + ":" + s.kernel);
  ASSERT_EQ(trace.size(), 5u);
  EXPECT_EQ(trace[0].substr(0, 11), "matmul@emu:");
  EXPECT_EQ(trace[1], "copy@cpu:0:d2h");
  EXPECT_EQ(trace[2].substr(0, 11), "tanh@cpu:0:");
  EXPECT_EQ(trace[3], "copy@emu:0:h2d");
  EXPECT_EQ(trace[4].substr(0, 8), "add@emu:");
  device.reset_copies();
  exe->feed("x", x);
  exe->run();
  testing::CopyCounts c = device.copies();
  EXPECT_EQ(c.host_to_device, 2);  // the feed and %t
  EXPECT_EQ(c.device_to_host, 1);  // %h
}

TEST(Device, AMutatingOpIsNeverPlacedOnACopy) {
  EmulatedDevice& device = emu();
  auto g = ir::parse_graph(R"(graph @g {
    %x = input() {dtype=f32, name="x", shape=[4]}
    %v = variable() {dtype=f32, name="v", shape=[4]}
    %a = assign(%v, %x)
    return {}
  })");
  VariableStore vars;
  vars.place_on(device);
  vars.create("v", Tensor::zeros(DType::kF32, Shape({4})));
  CompileOptions opts;
  opts.device = DeviceType::kEmulated;
  EXPECT_THROW(Executable::compile(*g, vars, opts), Error);
}

TEST(Device, KernelsRunOnTheirDevicesStream) {
  emu();
  Stream* seen = nullptr;
  kernels::KernelCandidate probe;
  probe.name = "stream_probe";
  probe.device = DeviceType::kEmulated;
  probe.dtypes = {DType::kI32};
  probe.priority = 1000;
  probe.create = [&seen](const kernels::KernelSignature&) {
    return std::make_unique<kernels::FnKernel>(
        [&seen](kernels::KernelContext& ctx) { seen = &ctx.stream; });
  };
  kernels::KernelRegistry::global().add("neg", probe);
  EagerOptions o;
  o.device = DeviceType::kEmulated;
  o.kernel = "stream_probe";
  Tensor x = Tensor::zeros(DType::kI32, Shape({2})).to_device(emu());
  eager_call("neg", {x}, {}, o);
  EXPECT_EQ(seen, &emu().default_stream());
}

TEST(Device, EagerCallsRefuseInputsTheDeviceCannotRead) {
  emu();
  EagerOptions o;
  o.device = DeviceType::kEmulated;
  Tensor host = Tensor::full(DType::kF32, Shape({3}), 2.0);
  try {
    eager_call("relu", {host}, {}, o);
    FAIL() << "a host input ran on emu";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("lives on cpu:0 but the op runs on emu:0"),
              std::string::npos)
        << e.what();
  }
  Tensor y = eager_call1("relu", {host.to_device(emu())}, {}, o);
  EXPECT_EQ(y.device().to_string(), "emu:0");
  EXPECT_EQ(y.to_host().get(2), 2.0);
}

TEST(Device, AllocatorsAccountHonestly) {
  Allocator& a = emu().allocator();
  size_t before = a.stats().bytes_in_use;
  {
    Tensor t(DType::kF32, Shape({1000}), emu());
    EXPECT_EQ(a.stats().bytes_in_use, before + 4032);  // 4000 rounded up to 64 bytes
    EXPECT_GE(a.stats().peak_bytes_in_use, before + 4032);
  }
  EXPECT_EQ(a.stats().bytes_in_use, before);
  a.set_limit(before + 1024);
  EXPECT_THROW(Tensor(DType::kF32, Shape({1000}), emu()), Error);
  EXPECT_EQ(a.stats().bytes_in_use, before);
  a.set_limit(0);
}

TEST(Device, APlannedArenaOverTheMemoryLimitNamesTheTensorAndSizes) {
  auto g = ir::parse_graph(R"(graph @big {
    %x = input() {dtype=f32, name="x", shape=[256, 256]}
    %y = matmul(%x, %x)
    %z = relu(%y)
    return {"z": %z}
  })");
  VariableStore vars;
  Allocator& cpu = DeviceRegistry::global().get(DeviceType::kCPU).allocator();
  cpu.set_limit(cpu.stats().bytes_in_use + 100 * 1024);  // less than one 256 KiB tensor
  try {
    Executable::compile(*g, vars);
    cpu.set_limit(0);
    FAIL() << "compiled over the limit";
  } catch (const Error& e) {
    cpu.set_limit(0);
    std::string msg = e.what();
    EXPECT_EQ(e.code(), ErrorCode::kResourceExhausted);
    EXPECT_NE(msg.find("graph 'big': the planned arena of "), std::string::npos) << msg;
    EXPECT_NE(msg.find("memory limit of cpu:0"), std::string::npos) << msg;
    EXPECT_NE(msg.find("f32[256, 256] (256.0 KiB)"), std::string::npos) << msg;
  }
  auto exe = Executable::compile(*g, vars);  // fits without the limit
  EXPECT_GT(exe->arena_bytes(), 0u);
}

}  // namespace
}  // namespace tern::runtime

namespace tern::runtime {
namespace {

// The intra-op thread count is a process setting, not one of the setting thread's: a graph run on
// a thread that never set it (a server's request thread) uses it too.
TEST(DeviceThreads, ThreadCountHoldsOnThreadsThatDidNotSetIt) {
  initialize();
  DeviceBackend& cpu = DeviceRegistry::global().get(DeviceType::kCPU);
  const int before = intra_op_threads();
  // Differs from a new thread's default (the core count) and from this thread's setting.
  const int wanted =
      std::max(cpu.num_threads(), static_cast<int>(std::thread::hardware_concurrency())) + 1;
  set_intra_op_threads(wanted);
  VariableStore vars;
  vars.create("w", testing::random_tensor(DType::kF32, Shape{16, 4}, 1));
  auto g = ir::parse_graph(kMlp);
  auto exe = Executable::compile(*g, vars);
  int seen = 0;
  std::thread request_thread([&] {
    exe->feed("x", testing::random_tensor(DType::kF32, Shape{8, 16}, 2));
    exe->run();
    seen = cpu.num_threads();
  });
  request_thread.join();
  set_intra_op_threads(before);
  EXPECT_EQ(seen, wanted);
}

}  // namespace
}  // namespace tern::runtime
