// Config loading: defaults, overrides, the embedded option structs, and errors that name the file,
// line and key.
#include "tern/config/config.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tern/config/builders.h"
#include "tern/config/training_data.h"
#include "tests/support/random_tensor.h"

namespace tern::config {
namespace {

std::string write_config(const std::string& name, const std::string& text) {
  std::string dir = ::testing::TempDir() + "/tern_config_test";
  std::filesystem::create_directories(dir);
  std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(Config, ReadsKeysIntoTheLibraryOptionStructs) {
  std::string p = write_config("ok.toml", R"(
[model]
name = "mlp"
[model.args]
units = [64]
[training]
epochs = 3
batch_size = 16
steps_per_epoch = 7
gradient_accumulation_steps = 2
seed = 9
[optimizer]
name = "sgd"
learning_rate = 0.1
momentum = 0.9
clipnorm = 1.5
[schedule]
name = "exponential"
decay_steps = 50
decay_rate = 0.5
)");
  TrainConfig c =
      load_config(p, {"training.epochs=5", "optimizer.nesterov=true", "output.dir=runs/x"});
  EXPECT_EQ(c.model.name, "mlp");
  EXPECT_EQ(c.model.args.get_ints("units"), (std::vector<int64_t>{64}));
  EXPECT_EQ(c.training.fit.epochs, 5);
  EXPECT_EQ(c.training.fit.batch_size, 16);
  EXPECT_EQ(c.training.fit.steps_per_epoch, 7);
  EXPECT_EQ(c.training.fit.gradient_accumulation_steps, 2);
  EXPECT_EQ(c.training.fit.seed, 9u);
  EXPECT_EQ(c.training.fit.memory_limit_bytes, 0);
  EXPECT_TRUE(c.optimizer.sgd.nesterov);
  EXPECT_DOUBLE_EQ(c.optimizer.sgd.momentum, 0.9);
  EXPECT_EQ(c.optimizer.clip.clipnorm, 1.5);
  EXPECT_FALSE(c.optimizer.clip.clipvalue.has_value());
  EXPECT_EQ(c.schedule.exponential.decay_steps, 50);
  EXPECT_DOUBLE_EQ(c.schedule.exponential.decay_rate, 0.5);
  EXPECT_EQ(c.output.dir, "runs/x");
  // The builders use them: 0.1 * 0.5^(100 / 50).
  EXPECT_NEAR((*make_schedule(c, 10))(100), 0.025, 1e-12);
  EXPECT_EQ(make_optimizer(c, 10)->name(), "SGD");
}

TEST(Config, KeysOfAnotherOptimizerNameTheKeyAndTheKeysThatApply) {
  std::string p = write_config("opt.toml", "[optimizer]\nname = \"sgd\"\nbeta1 = 0.5\n");
  EXPECT_TERN_ERROR(load_config(p), ErrorCode::kInvalidArgument,
                    "opt.toml:3: optimizer.beta1 does not apply to optimizer 'sgd' (its keys: "
                    "learning_rate, momentum, nesterov, weight_decay, clipnorm, global_clipnorm, "
                    "clipvalue)");
  std::string q = write_config("rho.toml", "[optimizer]\nname = \"adam\"\n\nrho = 0.8\n");
  EXPECT_TERN_ERROR(load_config(q), ErrorCode::kInvalidArgument,
                    "rho.toml:4: optimizer.rho does not apply to optimizer 'adam'");
  // weight_decay is AdamW's (decoupled) or SGD's (L2), not Adam's.
  std::string r = write_config("wd.toml", "[optimizer]\nname = \"adam\"\nweight_decay = 0.1\n");
  EXPECT_TERN_ERROR(load_config(r), ErrorCode::kInvalidArgument,
                    "wd.toml:3: optimizer.weight_decay does not apply to optimizer 'adam'");
  TrainConfig adamw = load_config(r, {"optimizer.name=adamw"});
  EXPECT_DOUBLE_EQ(adamw.optimizer.adam.weight_decay, 0.1);
  EXPECT_EQ(make_optimizer(adamw, 1)->name(), "AdamW");
  // A key no optimizer takes is unknown, with the closest valid key.
  std::string t = write_config("typo.toml", "[optimizer]\nname = \"sgd\"\nmomentun = 0.9\n");
  EXPECT_TERN_ERROR(load_config(t), ErrorCode::kInvalidArgument,
                    "typo.toml:3: unknown key 'optimizer.momentun' (did you mean "
                    "'optimizer.momentum'?)");
  EXPECT_TERN_ERROR(load_config(t, {"optimizer.name=sdg"}), ErrorCode::kInvalidArgument,
                    "'optimizer.name' = 'sdg' is not one of sgd, adam, adamw, rmsprop (did you "
                    "mean 'sgd'?)");
  EXPECT_TERN_ERROR(load_config(r, {"optimizer.name=adamw", "optimizer.learning_rate=0"}),
                    ErrorCode::kInvalidArgument, "'optimizer.learning_rate' must be positive");
}

TEST(Config, KeysOfAnotherScheduleOrLossAreRejected) {
  std::string p = write_config("sched.toml", "[schedule]\nname = \"cosine\"\ndecay_rate = 0.5\n");
  EXPECT_TERN_ERROR(load_config(p), ErrorCode::kInvalidArgument,
                    "sched.toml:3: schedule.decay_rate does not apply to schedule 'cosine' (its "
                    "keys: warmup_steps, alpha)");
  std::string r =
      write_config("restarts.toml", "[schedule]\nname = \"cosine_restarts\"\ndecay_steps = 20\n");
  EXPECT_EQ(load_config(r).schedule.cosine_restarts.first_decay_steps, 20);
  EXPECT_TERN_ERROR(load_config(r, {"schedule.name=exponential", "schedule.t_mul=3"}),
                    ErrorCode::kInvalidArgument,
                    "schedule.t_mul does not apply to schedule 'exponential' (its keys: "
                    "warmup_steps, decay_steps, decay_rate, staircase)");
  std::string q = write_config("pw.toml",
                               "[schedule]\nname = \"piecewise\"\nboundaries = [10]\nvalues = "
                               "[1.0]\n");
  EXPECT_TERN_ERROR(load_config(q), ErrorCode::kInvalidArgument,
                    "pw.toml:4: key 'schedule.values' must hold one more value than boundaries");
  std::string l = write_config("loss.toml", "[loss]\nname = \"mse\"\nfrom_logits = true\n");
  EXPECT_TERN_ERROR(load_config(l), ErrorCode::kInvalidArgument,
                    "loss.toml:3: loss.from_logits does not apply to loss 'mse' (its keys: "
                    "metrics)");
  std::string s = write_config(
      "smooth.toml", "[loss]\nname = \"sparse_categorical_crossentropy\"\nlabel_smoothing = 0.1\n");
  EXPECT_TERN_ERROR(
      load_config(s), ErrorCode::kInvalidArgument,
      "loss.label_smoothing does not apply to loss 'sparse_categorical_crossentropy'");
  EXPECT_DOUBLE_EQ(load_config(s, {"loss.name=categorical_crossentropy"}).loss.label_smoothing,
                   0.1);
}

TEST(Config, CosineDecaysOverEveryTrainingStep) {
  std::string p =
      write_config("cos.toml",
                   "[optimizer]\nlearning_rate = 1.0\n[schedule]\nname = \"cosine\"\nalpha = 0.1\n"
                   "warmup_steps = 10\n[training]\nepochs = 2\n");
  TrainConfig c = load_config(p);
  optim::SchedulePtr s = make_schedule(c, 30);  // 60 steps, 10 of them warmup
  EXPECT_NEAR((*s)(10), 1.0, 1e-12);
  EXPECT_NEAR((*s)(60), 0.1, 1e-12);
  EXPECT_NEAR((*s)(35), 0.1 + 0.9 * 0.5, 1e-12);  // halfway through the 50 decay steps
}

TEST(Config, MemoryLimitTakesBytesOrASizeWithAUnit) {
  std::string p = write_config("mem.toml", "[training]\nmemory_limit = \"512MiB\"\n");
  EXPECT_EQ(load_config(p).training.fit.memory_limit_bytes, int64_t{512} << 20);
  EXPECT_EQ(load_config(p, {"training.memory_limit=2GiB"}).training.fit.memory_limit_bytes,
            int64_t{2} << 30);
  EXPECT_EQ(load_config(p, {"training.memory_limit=\"500MB\""}).training.fit.memory_limit_bytes,
            500000000);
  EXPECT_EQ(load_config(p, {"training.memory_limit=4096"}).training.fit.memory_limit_bytes, 4096);
  EXPECT_EQ(load_config(p, {"training.memory_limit=0"}).training.fit.memory_limit_bytes, 0);
  EXPECT_EQ(parse_memory_size("1.5 KiB"), 1536);
  EXPECT_EQ(parse_memory_size("3b"), 3);
  std::string bad = write_config("badmem.toml", "[training]\n\nmemory_limit = \"12XB\"\n");
  EXPECT_TERN_ERROR(load_config(bad), ErrorCode::kInvalidArgument,
                    "badmem.toml:3: key 'training.memory_limit': '12XB': unknown unit 'XB' (B, "
                    "KB, MB, GB, TB, KiB, MiB, GiB, TiB)");
  EXPECT_TERN_ERROR(load_config(p, {"training.memory_limit=-1"}), ErrorCode::kInvalidArgument,
                    "key 'training.memory_limit' must be >= 0");
  EXPECT_TERN_ERROR(load_config(p, {"training.memory_limit=1.5"}), ErrorCode::kInvalidArgument,
                    "key 'training.memory_limit' must be a byte count or a size such as");
  EXPECT_TERN_ERROR(load_config(p, {"training.memory_limit=\"0.5B\""}), ErrorCode::kInvalidArgument,
                    "not a whole number of bytes");
  EXPECT_TERN_ERROR(load_config(p, {"training.memory_limit=\"MiB\""}), ErrorCode::kInvalidArgument,
                    "'MiB' is not a memory size");
  EXPECT_TERN_ERROR(load_config(p, {"training.memory_limit=\"99999999TiB\""}),
                    ErrorCode::kInvalidArgument, "is too large");
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
  EXPECT_TERN_ERROR(load_config(q), ErrorCode::kInvalidArgument,
                    "range.toml:2: key 'training.epochs' must be >= 1");
  std::string s = write_config("syntax.toml", "[training\nepochs = 1\n");
  EXPECT_TERN_ERROR(load_config(s), ErrorCode::kInvalidArgument, "syntax.toml:1");
  EXPECT_TERN_ERROR(load_config("/nonexistent/x.toml"), ErrorCode::kNotFound,
                    "/nonexistent/x.toml");
  EXPECT_TERN_ERROR(load_config(p, {"noequals"}), ErrorCode::kInvalidArgument,
                    "expected key=value");
  EXPECT_TERN_ERROR(load_config(q, {"training.epochs=1", "data.dataset=cifar"}),
                    ErrorCode::kInvalidArgument,
                    "key 'data.dataset' = 'cifar' is not one of fashion_mnist, mnist, idx");
}

TEST(Config, OverridesAddressTablesOfAnArrayByIndex) {
  std::string p = write_config("indexed.toml", R"(
[data]
source = "idx"
train_images = "a"
train_labels = "b"
test_images = "c"
test_labels = "d"
[[data.transforms]]
op = "map"
fn = "scale"
[[data.transforms]]
op = "map"
fn = "random_brightness"
max_delta = 0.2
)");
  // The pipeline adds batch and prefetch; the brightness function keeps its place.
  auto brightness = [](const TrainConfig& c) {
    for (const auto& t : c.data.pipeline.transforms) {
      for (const auto& f : t.fns) {
        if (f.kind == data::ElementFnKind::kRandomBrightness) return f.max_delta;
      }
    }
    return -1.0f;
  };
  EXPECT_FLOAT_EQ(brightness(load_config(p)), 0.2f);
  TrainConfig c = load_config(p, {"data.transforms[1].max_delta=0.05"});
  EXPECT_FLOAT_EQ(brightness(c), 0.05f);
  EXPECT_TERN_ERROR(load_config(p, {"data.transforms[1].max_delt=0.05"}),
                    ErrorCode::kInvalidArgument, "data.transforms[1].max_delt");
  EXPECT_TERN_ERROR(load_config(p, {"data.transforms[2].max_delta=0.1"}),
                    ErrorCode::kInvalidArgument, "'data.transforms' in ");
  EXPECT_TERN_ERROR(load_config(p, {"data.source[0]=idx"}), ErrorCode::kInvalidArgument,
                    "'data.source' in ");
  EXPECT_TERN_ERROR(load_config(p, {"data.transforms[x].fn=scale"}), ErrorCode::kInvalidArgument,
                    "is not a key or key[index]");

  // The rendered text, written to a file, loads as the same config.
  std::string rendered =
      render_config(p, {"data.transforms[1].max_delta=0.05", "training.epochs=4"});
  std::string q = write_config("rendered.toml", rendered);
  TrainConfig r = load_config(q);
  EXPECT_FLOAT_EQ(brightness(r), 0.05f);
  EXPECT_EQ(r.training.fit.epochs, 4);
  EXPECT_EQ(r.sha256,
            load_config(p, {"data.transforms[1].max_delta=0.05", "training.epochs=4"}).sha256);
}

// render_config writes the TOML itself, values through the config hash's float-safe printer:
// toml++'s formatter takes log10 of each float in an array and casts it to size_t (undefined
// below 1, bad-input F13: schedule.values = [0.1]). This is what the sweep writes as a trial's
// config and best.toml, and the pipeline as its training config.
TEST(Config, RenderedFloatArraysAndQuotedKeysLoadAsTheSameConfig) {
  std::string p = write_config("render_floats.toml", R"(
[model]
name = "mlp"
[schedule]
name = "piecewise"
boundaries = [10, 20]
values = [0.1, 0.01, 0.001]
[data]
source = "tfrecord"
train_files = "train.tfrecord"
test_files = "test.tfrecord"
input = "image/encoded"
label = "image/class/label"
num_classes = 10
[data.features]
"image/encoded" = {type = "bytes", dtype = "u8", shape = [28, 28, 1]}
"image/class/label" = {type = "int64"}
[[data.transforms]]
op = "parse"
[[data.transforms]]
op = "map"
fn = "normalize"
mean = [0.5]
std = [0.25]
)");
  std::string rendered = render_config(p, {"training.epochs=3"});
  EXPECT_NE(rendered.find("\nvalues = [ 0.1"), std::string::npos) << rendered;
  EXPECT_NE(rendered.find("\n'image/encoded' = { "), std::string::npos) << rendered;
  EXPECT_NE(rendered.find("[[data.transforms]]"), std::string::npos) << rendered;
  TrainConfig again = load_config(write_config("render_floats_out.toml", rendered));
  EXPECT_EQ(again.sha256, load_config(p, {"training.epochs=3"}).sha256);
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
  EXPECT_EQ(c.training.precision, "mixed_float16");
  EXPECT_EQ(c.training.loss_scale.initial_scale, 1024);
  EXPECT_EQ(c.training.loss_scale.growth_interval, 100);
  EXPECT_EQ(c.training.loss_scale.factor, 4);
  EXPECT_TRUE(c.training.loss_scale.dynamic);
  EXPECT_EQ(load_config(write_config("f16d.toml", "[training]\nprecision = \"mixed_float16\"\n"))
                .training.loss_scale,
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
  // Names when the config is read, at their lines; kinds when the model is built.
  std::string p =
      write_config("args.toml", "[model]\nname = \"cnn\"\n[model.args]\nfilter = [8]\n");
  EXPECT_TERN_ERROR(load_config(p), ErrorCode::kInvalidArgument,
                    p + ":4: unknown key 'model.args.filter': model 'cnn' has no argument 'filter' "
                        "(did you mean 'model.args.filters'?)");
  std::string q = write_config("zoo.toml", "[model]\nname = \"cnnn\"\n");
  EXPECT_TERN_ERROR(load_config(q), ErrorCode::kInvalidArgument,
                    q + ":2: key 'model.name': unknown model 'cnnn' (did you mean 'cnn'");
  std::string k =
      write_config("kind.toml", "[model]\nname = \"cnn\"\n[model.args]\nfilters = \"8\"\n");
  EXPECT_TERN_ERROR(make_model(load_config(k), Shape{28, 28, 1}), ErrorCode::kInvalidArgument,
                    "model 'cnn' argument 'filters' must be");
  EXPECT_THROW(load_config(q), ConfigError);  // `tern` exits 2 on these
  EXPECT_THROW(load_config(p, {"training.epochs=x"}), ConfigError);
}

TEST(Config, MissingDataNamesThePackage) {
  std::string p = write_config("data.toml", "[data]\ndir = \"/nonexistent/fmnist\"\n");
  EXPECT_TERN_ERROR(load_data(load_config(p)), ErrorCode::kNotFound, "dataset-fashion-mnist");
}

TEST(Config, TheExamplesLoad) {
  TrainConfig c = load_config("examples/fashion_mnist.toml");
  EXPECT_EQ(c.model.name, "cnn");
  EXPECT_GE(c.training.fit.epochs, 1);
  EXPECT_EQ(c.schedule.name, "cosine");
  TrainConfig t = load_config("examples/fashion_mnist_tfrecord.toml");
  EXPECT_TRUE(t.data.uses_pipeline());
  EXPECT_EQ(t.data.pipeline.transforms.size(), 5u);
}

}  // namespace
}  // namespace tern::config
