// Training on a device that is not the host: fit() on the emulated device (tests/support) gives
// the CPU's weights bit for bit, and each step copies exactly what it must: the fed batch and
// scalars in, the outputs fit reads (loss, metric statistics) out, nothing device to device.
#include <gtest/gtest.h>

#include "tern/nn/dense.h"
#include "tern/nn/losses.h"
#include "tern/optim/adam.h"
#include "tern/train/callbacks.h"
#include "tern/train/training_state.h"
#include "tests/support/emulated_device.h"
#include "tests/support/random_tensor.h"

namespace tern::train {
namespace {

std::shared_ptr<nn::Model> make_model(DeviceType device) {
  std::shared_ptr<nn::Model> model(new nn::Sequential({nn::Dense(16, "relu"), nn::Dense(4)}));
  model->set_seed(7);
  model->compile(std::make_shared<optim::Adam>(1e-2),
                 std::make_shared<nn::SparseCategoricalCrossentropy>(/*from_logits=*/true),
                 {"accuracy"});
  model->training_state()->compile_options.device = device;
  model->training_state()->compile_options.deterministic = true;
  return model;
}

TEST(DeviceTraining, TheEmulatedDeviceTrainsLikeTheCpuWithCountedCopies) {
  testing::EmulatedDevice& emu = testing::register_emulated_device();
  Tensor x = testing::random_tensor(DType::kF32, Shape({64, 8}), 11);
  Tensor y(DType::kI64, Shape({64}));
  for (int64_t i = 0; i < 64; ++i) y.set(i, static_cast<double>(i % 4));
  nn::FitOptions fit;
  fit.batch_size = 16;
  fit.shuffle = false;
  fit.verbose = 0;

  auto cpu = make_model(DeviceType::kCPU);
  auto dev = make_model(DeviceType::kEmulated);
  cpu->fit(x, y, fit);  // compiles; variables move to the device once
  dev->fit(x, y, fit);
  emu.reset_copies();
  History cpu_history = cpu->fit(x, y, fit);
  History dev_history = dev->fit(x, y, fit);
  EXPECT_EQ(cpu_history.history.at("loss"), dev_history.history.at("loss"));
  // Layer names differ between the two models (auto-numbered); weights are in the same order.
  std::vector<nn::WeightSpec> cpu_weights = cpu->weights(), dev_weights = dev->weights();
  ASSERT_EQ(cpu_weights.size(), dev_weights.size());
  for (size_t i = 0; i < cpu_weights.size(); ++i) {
    const Tensor& on_device = dev->variables().get(dev_weights[i].name);
    EXPECT_FALSE(on_device.is_host_accessible()) << dev_weights[i].name;
    EXPECT_TRUE(bitwise_equal(cpu->variables().get(cpu_weights[i].name), on_device.to_host()))
        << cpu_weights[i].name;
  }
  // 4 train steps, each feeding x, y, rng, lr and step and reading every output once.
  ASSERT_EQ(dev->training_state()->steps.size(), 1u);
  const CompiledStep& step = dev->training_state()->steps.begin()->second;
  EXPECT_EQ(step.exe->copy_steps(), 0);
  testing::CopyCounts c = emu.copies();
  EXPECT_EQ(c.host_to_device, 4 * 5);
  EXPECT_EQ(c.device_to_host, 4 * static_cast<int64_t>(step.exe->num_outputs()));
  EXPECT_EQ(c.device_to_device, 0);
  // The training monitor reports the device's peak memory.
  EXPECT_EQ(dev_history.stats.device, "emu:0");
  EXPECT_GT(dev_history.stats.peak_device_bytes, 0u);
  EXPECT_GT(dev_history.stats.variable_bytes, 0u);
  EXPECT_NE(dev_history.stats.report().find("memory: peak"), std::string::npos);
}

TEST(DeviceTraining, AMemoryLimitBelowThePlannedArenaStopsFitNamingTheTensor) {
  auto model = make_model(DeviceType::kCPU);
  Tensor x = testing::random_tensor(DType::kF32, Shape({256, 64}), 3);
  Tensor y(DType::kI64, Shape({256}));
  nn::FitOptions fit;
  fit.batch_size = 256;
  fit.verbose = 0;
  Allocator& cpu = DeviceRegistry::global().get(DeviceType::kCPU).allocator();
  fit.memory_limit_bytes = static_cast<int64_t>(cpu.stats().bytes_in_use + 4096);
  try {
    model->fit(x, y, fit);
    FAIL() << "fit ran over the memory limit";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kResourceExhausted) << e.what();
    EXPECT_NE(std::string(e.what()).find("its largest tensor is %"), std::string::npos) << e.what();
  }
  EXPECT_EQ(cpu.stats().limit, 0u);  // fit put the previous limit back
  fit.memory_limit_bytes = 0;
  EXPECT_NO_THROW(model->fit(x, y, fit));
}

}  // namespace
}  // namespace tern::train
