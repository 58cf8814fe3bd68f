// Config loading: defaults, overrides, and errors that name the file, line and key.
#include "tools/tern/config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/support/random_tensor.h"
#include "tools/tern/training_setup.h"

namespace tern::tools {
namespace {

std::string write_config(const std::string& name, const std::string& text) {
  std::string dir = ::testing::TempDir() + "/tern_config_test";
  std::filesystem::create_directories(dir);
  std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(Config, ReadsKeysAndOverrides) {
  std::string p = write_config("ok.toml", R"(
[model]
name = "mlp"
[model.args]
units = [64]
[training]
epochs = 3
batch_size = 16
[optimizer]
name = "sgd"
learning_rate = 0.1
momentum = 0.9
)");
  TrainConfig c =
      load_config(p, {"training.epochs=5", "optimizer.nesterov=true", "output.dir=runs/x"});
  EXPECT_EQ(c.model, "mlp");
  EXPECT_EQ(c.model_args.get_ints("units"), (std::vector<int64_t>{64}));
  EXPECT_EQ(c.epochs, 5);
  EXPECT_EQ(c.batch_size, 16);
  EXPECT_TRUE(c.nesterov);
  EXPECT_EQ(c.output_dir, "runs/x");
  EXPECT_DOUBLE_EQ(c.momentum, 0.9);
}

TEST(Config, UnknownKeyNamesFileLineAndSuggestion) {
  std::string p = write_config("typo.toml", "[training]\nepochs = 2\nbatch_sise = 8\n");
  EXPECT_TERN_ERROR(
      load_config(p), ErrorCode::kInvalidArgument,
      "typo.toml:3: unknown key 'training.batch_sise' (did you mean 'training.batch_size'?)");
}

TEST(Config, WrongTypeAndBadValues) {
  std::string p = write_config("type.toml", "[training]\n\nepochs = \"three\"\n");
  EXPECT_TERN_ERROR(load_config(p), ErrorCode::kInvalidArgument,
                    "type.toml:3: key 'training.epochs' must be an integer");
  std::string q = write_config("range.toml", "[training]\nepochs = 0\n");
  EXPECT_TERN_ERROR(load_config(q), ErrorCode::kInvalidArgument, "'training.epochs' must be >= 1");
  std::string s = write_config("syntax.toml", "[training\nepochs = 1\n");
  EXPECT_TERN_ERROR(load_config(s), ErrorCode::kInvalidArgument, "syntax.toml:1");
  EXPECT_TERN_ERROR(load_config("/nonexistent/x.toml"), ErrorCode::kNotFound,
                    "/nonexistent/x.toml");
  EXPECT_TERN_ERROR(load_config(p, {"noequals"}), ErrorCode::kInvalidArgument,
                    "expected key=value");
}

TEST(Config, MixedFloat16AndItsLossScale) {
  std::string p = write_config("f16.toml", R"(
[training]
precision = "mixed_float16"
[training.loss_scale]
initial_scale = 1024
growth_interval = 100
factor = 4
dynamic = true
)");
  TrainConfig c = load_config(p);
  EXPECT_EQ(c.precision, "mixed_float16");
  EXPECT_EQ(c.loss_scale.initial_scale, 1024);
  EXPECT_EQ(c.loss_scale.growth_interval, 100);
  EXPECT_EQ(c.loss_scale.factor, 4);
  EXPECT_TRUE(c.loss_scale.dynamic);
  EXPECT_EQ(load_config(write_config("f16d.toml", "[training]\nprecision = \"mixed_float16\"\n"))
                .loss_scale,
            optim::LossScaleOptions{});
  EXPECT_TERN_ERROR(load_config(p, {"training.loss_scale.factor=1"}), ErrorCode::kInvalidArgument,
                    "key 'training.loss_scale.factor' must be finite and > 1");
  EXPECT_TERN_ERROR(load_config(p, {"training.loss_scale.initial_scale=0.5"}),
                    ErrorCode::kInvalidArgument,
                    "key 'training.loss_scale.initial_scale' must be finite and >= 1");
  EXPECT_TERN_ERROR(load_config(p, {"training.loss_scale.growth_interval=0"}),
                    ErrorCode::kInvalidArgument,
                    "key 'training.loss_scale.growth_interval' must be >= 1");
  EXPECT_TERN_ERROR(
      load_config(p, {"training.precision=mixed_bfloat16"}), ErrorCode::kInvalidArgument,
      "key 'training.loss_scale' applies only to training.precision = \"mixed_float16\"");
  EXPECT_TERN_ERROR(load_config(p, {"training.loss_scale.intial_scale=8"}),
                    ErrorCode::kInvalidArgument,
                    "did you mean 'training.loss_scale.initial_scale'?");
  EXPECT_TERN_ERROR(load_config(p, {"training.precision=float16"}), ErrorCode::kInvalidArgument,
                    "\"mixed_float16\"");
}

TEST(Config, ModelArgsAreCheckedAgainstTheZoo) {
  std::string p =
      write_config("args.toml", "[model]\nname = \"cnn\"\n[model.args]\nfilter = [8]\n");
  TrainConfig c = load_config(p);
  EXPECT_TERN_ERROR(make_model(c, Shape{28, 28, 1}), ErrorCode::kInvalidArgument,
                    "model 'cnn' has no argument 'filter' (did you mean 'filters'?)");
  std::string q = write_config("zoo.toml", "[model]\nname = \"cnnn\"\n");
  EXPECT_TERN_ERROR(make_model(load_config(q), Shape{28, 28, 1}), ErrorCode::kNotFound,
                    "did you mean 'cnn'");
}

TEST(Config, MissingDataNamesThePackage) {
  std::string p = write_config("data.toml", "[data]\ndir = \"/nonexistent/fmnist\"\n");
  EXPECT_TERN_ERROR(load_data(load_config(p)), ErrorCode::kNotFound, "dataset-fashion-mnist");
}

TEST(Config, TheDefaultExampleLoads) {
  TrainConfig c = load_config("examples/fashion_mnist.toml");
  EXPECT_EQ(c.model, "cnn");
  EXPECT_GE(c.epochs, 1);
}

}  // namespace
}  // namespace tern::tools
