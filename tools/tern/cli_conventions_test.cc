// The conventions every `tern` command keeps, checked on the built binary: usage errors exit 2
// (CLI11's parse errors, bad flag values, a bad config key named file:line:key, a bad --set
// naming the flag), --help has one layout for every command and subcommand, the bash completion
// script is generated from the commands' flags and completes them, and the start-up banner
// states the pipeline's effective batch.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/child_process.h"
#include "tests/support/idx_writer.h"
#include "tools/tern/commands.h"

namespace tern::tools {
namespace {

namespace fs = std::filesystem;
using ::tern::testing::read_log;
using ::tern::testing::spawn_logged;
using ::tern::testing::wait_bounded;

class CliConventions : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/tern_cli_conventions_" + std::to_string(::getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    ::tern::testing::write_quadrant_dataset(dir_, "train", 64, 1);
    ::tern::testing::write_quadrant_dataset(dir_, "test", 32, 2);
    config_ = write_config("tiny.toml", kScale, "");
  }
  void TearDown() override {
    if (!HasFailure()) fs::remove_all(dir_);
  }
  static constexpr const char* kScale = "[[data.transforms]]\nop = \"map\"\nfn = \"scale\"\n";
  // Lines 1-17 are fixed; `transforms` and `extra` follow.
  std::string write_config(const std::string& name, const std::string& transforms,
                           const std::string& extra) const {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << "[model]\nname = \"mlp\"\n[model.args]\nunits = [8]\n"
                        << "[data]\nsource = \"idx\"\nnum_classes = 4\n"
                        << "train_images = \"" << dir_ << "/train-images.idx\"\n"
                        << "train_labels = \"" << dir_ << "/train-labels.idx\"\n"
                        << "test_images = \"" << dir_ << "/test-images.idx\"\n"
                        << "test_labels = \"" << dir_ << "/test-labels.idx\"\n"
                        << "[training]\nepochs = 1\nbatch_size = 32\nthreads = 1\n"
                        << "[output]\ndir = \"" << dir_ << "/run\"\n"
                        << transforms << extra;
    return path;
  }
  // Runs the built tern; its exit status, with stdout and stderr in out_.
  int tern(std::vector<std::string> args) {
    args.insert(args.begin(), TERN_TOOL_PATH);
    const std::string log = dir_ + "/log.txt";
    fs::remove(log);
    pid_t pid = spawn_logged(args, {}, log);
    EXPECT_GT(pid, 0);
    const int rc = wait_bounded(pid, std::chrono::seconds(120));
    out_ = read_log(log);
    return rc;
  }
  std::string dir_, config_, out_;
};

TEST_F(CliConventions, UsageErrorsExitTwo) {
  struct Case {
    std::vector<std::string> args;
    std::string says;
  };
  const std::vector<Case> cases = {
      {{}, "usage: tern COMMAND"},
      {{"nope"}, "unknown command 'nope'"},
      {{"train"}, "config is required"},                            // CLI11 106
      {{"train", config_, "--bogus"}, "not expected: --bogus"},     // CLI11 109
      {{"train", config_, "extra", "args"}, "not expected"},        // CLI11 109
      {{"train", config_, "--workers", "many"}, "--workers"},       // CLI11 104 (conversion)
      {{"train", config_, "--workers", "0"}, "not in range"},       // CLI11 105 (validation)
      {{"profile", config_, "--steps", "0"}, "not in range 1 to"},  // CLI11 105
      {{"data"}, "A subcommand is required"},
      {{"data", "convert", "a"}, "output is required"},
      {{"ckpt"}, "A subcommand is required"},
      {{"ops", "--x"}, "not expected: --x"},
      {{"completion", "zsh"}, "zsh"},
      {{"predict", config_, "--limit", "0"}, "--limit 0"},
      {{"export", config_, "--out", dir_ + "/models/latest"}, "numeric version directory"},
      {{"serve", "--port", "0", "--rest_api_port", "0"}, "nothing to serve on"},
      {{"data", "convert", "a", "b", "--size", "7y"}, "--size must be N or HxW"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(tern(c.args), 2) << ::testing::PrintToString(c.args) << "\n" << out_;
    EXPECT_NE(out_.find(c.says), std::string::npos) << ::testing::PrintToString(c.args) << "\n"
                                                    << out_;
  }
  // A parse error repeats the usage line and says where help is.
  tern({"train", config_, "--bogus"});
  EXPECT_NE(out_.find("usage: tern train [options] CONFIG"), std::string::npos) << out_;
  EXPECT_NE(out_.find("'tern train --help' describes every option."), std::string::npos) << out_;
}

TEST_F(CliConventions, ConfigErrorsExitTwoNamingTheFileLineOrTheFlag) {
  const std::string bad = write_config("bad.toml", "", "[callbacks.checkpoint]\nsave_frequ = 2\n");
  EXPECT_EQ(tern({"train", bad}), 2) << out_;
  EXPECT_NE(out_.find(bad + ":19: unknown key 'callbacks.checkpoint.save_frequ' (did you mean "
                            "'callbacks.checkpoint.save_freq'?)"),
            std::string::npos)
      << out_;
  const std::string arg = write_config("arg.toml", kScale, "");
  {
    std::ofstream(arg, std::ios::app) << "[model.args]\n";  // a duplicate table: TOML syntax
  }
  EXPECT_EQ(tern({"summary", arg}), 2) << out_;
  EXPECT_NE(out_.find("TOML syntax error"), std::string::npos) << out_;

  EXPECT_EQ(tern({"train", config_, "--set", "optimizer.learing_rate=0.1"}), 2) << out_;
  EXPECT_NE(out_.find("--set optimizer.learing_rate=0.1: unknown key 'optimizer.learing_rate' "
                      "(did you mean 'optimizer.learning_rate'?)"),
            std::string::npos)
      << out_;
  EXPECT_EQ(out_.find(config_), std::string::npos) << "names the file, not the flag: " << out_;
  EXPECT_EQ(tern({"summary", config_, "--set", "training.epochs=many"}), 2) << out_;
  EXPECT_NE(out_.find("--set training.epochs=many: key 'training.epochs' must be an integer"),
            std::string::npos)
      << out_;
  EXPECT_EQ(tern({"summary", config_, "--set", "model.args.unitz=[3]"}), 2) << out_;
  EXPECT_NE(out_.find("--set model.args.unitz=[3]: unknown key 'model.args.unitz': model 'mlp' "
                      "has no argument 'unitz' (did you mean 'model.args.units'?)"),
            std::string::npos)
      << out_;
  EXPECT_EQ(tern({"eval", config_, "--set", "model.name=mlpp"}), 2) << out_;
  EXPECT_NE(out_.find("--set model.name=mlpp: key 'model.name': unknown model 'mlpp'"),
            std::string::npos)
      << out_;
  EXPECT_EQ(tern({"train", dir_ + "/missing.toml"}), 2) << out_;
  // Errors while running are 1.
  EXPECT_EQ(tern({"eval", config_, "--weights", dir_ + "/none.safetensors"}), 1) << out_;
}

TEST_F(CliConventions, EveryCommandsHelpHasOneLayout) {
  std::vector<std::vector<std::string>> helps = {{"data", "inspect"},
                                                 {"data", "convert"},
                                                 {"data", "bench"},
                                                 {"ckpt", "inspect"},
                                                 {"predict", "--model", "x"}};
  for (const Command& c : commands()) helps.push_back({c.name});
  for (auto args : helps) {
    args.push_back("--help");
    ASSERT_EQ(tern(args), 0) << ::testing::PrintToString(args) << "\n" << out_;
    std::string name =
        "tern " + args[0] + (args[1] != "--help" && args[1][0] != '-' ? " " + args[1] : "");
    EXPECT_EQ(out_.rfind("usage: " + name + " ", 0), 0u) << out_;
    for (const char* section :
         {"\noptions:\n", "  -h, --help                show this help and exit\n",
          "\nexit status: 0 done, 1 error, 2 usage error"}) {
      EXPECT_NE(out_.find(section), std::string::npos) << section << " in\n" << out_;
    }
    std::istringstream lines(out_);
    for (std::string line; std::getline(lines, line);)
      EXPECT_LE(line.size(), 80u) << "help of " << name << " wider than 80 columns: " << line;
  }
  EXPECT_EQ(tern({"--help"}), 0);
  for (const Command& c : commands())
    EXPECT_NE(out_.find("\n  " + std::string(c.name) + " "), std::string::npos) << out_;
}

// Runs completion for the words typed so far (the last one being completed) in bash with the
// generated script loaded; the candidates, one per line.
std::string complete(const std::string& script, const std::string& words) {
  const std::string cmd = "bash -c 'source " + script + " && COMP_WORDS=(" + words +
                          ") && COMP_CWORD=$((${#COMP_WORDS[@]} - 1)) && _tern && printf "
                          "\"%s\\n\" \"${COMPREPLY[@]}\"'";
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return "(popen failed)";
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof(buf), p)) out.append(buf, n);
  ::pclose(p);
  return out;
}

TEST_F(CliConventions, BashCompletionIsGeneratedFromTheFlags) {
  ASSERT_EQ(tern({"completion", "bash"}), 0) << out_;
  const std::string script = dir_ + "/tern.bash";
  std::ofstream(script) << out_;
  ASSERT_EQ(std::system(("bash -n " + script).c_str()), 0);
  EXPECT_EQ(complete(script, "tern tr"), "train\ntransform\n");
  EXPECT_EQ(complete(script, "tern transform spec.toml --ap"), "--apply\n");
  EXPECT_EQ(complete(script, "tern train x.toml --met"), "--metrics-json\n");
  EXPECT_EQ(complete(script, "tern train x.toml --re"), "--resume\n");
  EXPECT_EQ(complete(script, "tern data con"), "convert\n");
  EXPECT_EQ(complete(script, "tern data convert in out --ima"), "--image-format\n");
  EXPECT_EQ(complete(script, "tern ckpt i"), "inspect\n");
  EXPECT_EQ(complete(script, "tern predict --mod"), "--model\n");
  EXPECT_NE(complete(script, "tern serve --rest_api_p").find("--rest_api_port"), std::string::npos);
  // After an option that takes a value, and for positionals: file names.
  std::ofstream(dir_ + "/zz_config.toml") << "";
  EXPECT_EQ(complete(script, "tern train " + dir_ + "/zz_"), dir_ + "/zz_config.toml\n");
  EXPECT_EQ(complete(script, "tern train x --metrics-json " + dir_ + "/zz_"),
            dir_ + "/zz_config.toml\n");
  // Every command's every long option is in the script.
  for (const char* flag : {"--ignore-config-change", "--warmup-epochs", "--class-names",
                           "--rest_api_num_threads", "--trace", "--tag"}) {
    EXPECT_NE(out_.find(flag), std::string::npos) << flag;
  }
}

TEST_F(CliConventions, BannerStatesTheEffectiveBatch) {
  ASSERT_EQ(tern({"train", config_, "--set", "training.steps_per_epoch=1"}), 0) << out_;
  EXPECT_NE(out_.find(", batch 32, 1 epochs"), std::string::npos) << out_;
  const std::string own =
      write_config("own_batch.toml",
                   std::string("[[data.transforms]]\nop = \"batch\"\nsize = 16\n") + kScale, "");
  ASSERT_EQ(tern({"train", own, "--set", "training.steps_per_epoch=2", "--set",
                  "training.gradient_accumulation_steps=2"}),
            0)
      << out_;
  EXPECT_NE(out_.find(", batch 16 (data.transforms[0]; training.batch_size = 32 does not apply) x "
                      "2 accumulated = 32 per update, 1 epochs"),
            std::string::npos)
      << out_;
}

// docs/formats.md's recipe for weights_sha256, run on a weights file tern wrote, gives the hash
// tern printed.
TEST_F(CliConventions, TheFormatsDocRecomputesWeightsSha256) {
  ASSERT_EQ(tern({"train", config_, "--quiet", "--metrics-json", dir_ + "/m.json"}), 0) << out_;
  std::ifstream doc("docs/formats.md");
  std::stringstream text;
  text << doc.rdbuf();
  const std::string md = text.str();
  const size_t at = md.find("```python\n", md.find("To recompute it from a weights file"));
  ASSERT_NE(at, std::string::npos);
  std::string code = md.substr(at + 10, md.find("```", at + 10) - at - 10);
  const std::string path = "runs/fashion_mnist/weights.safetensors";
  ASSERT_NE(code.find(path), std::string::npos) << code;
  code.replace(code.find(path), path.size(), dir_ + "/run/weights.safetensors");
  std::ofstream(dir_ + "/recipe.py") << code;
  const std::string cmd = "python3 " + dir_ + "/recipe.py > " + dir_ + "/recipe.txt";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << code;
  std::ifstream m(dir_ + "/m.json"), r(dir_ + "/recipe.txt");
  std::stringstream ms, rs;
  ms << m.rdbuf();
  rs << r.rdbuf();
  const std::string want = ms.str().substr(ms.str().find("\"weights_sha256\": \"") + 19, 64);
  EXPECT_EQ(rs.str(), want + "\n");
}

}  // namespace
}  // namespace tern::tools
