// Subcommands of the `tern` tool. Each takes argv starting at the subcommand name and returns the
// process exit code (0 ok, 1 error, 2 usage: tools/tern/cli_parse.h). commands() is the table
// main dispatches through, `tern --help` lists and `tern completion bash` reads the flags of.
#pragma once

#include <vector>

namespace tern::tools {

int cmd_ops(int argc, char** argv);
int cmd_train(int argc, char** argv);
int cmd_eval(int argc, char** argv);
int cmd_predict(int argc, char** argv);
int cmd_summary(int argc, char** argv);
int cmd_data(int argc, char** argv);
int cmd_logs(int argc, char** argv);
int cmd_ckpt(int argc, char** argv);
int cmd_profile(int argc, char** argv);
int cmd_export(int argc, char** argv);
// `tern serve`: TF Serving's REST and gRPC APIs over exported model directories.
int cmd_serve(int argc, char** argv);
// `tern predict --model DIR`: an exported model, no config (cmd_predict dispatches here).
int cmd_predict_model(int argc, char** argv);
// `tern --version`: versions of tern and oneDNN, compiler, build type, kernel instruction set.
int cmd_version(int argc, char** argv);

// `tern sweep`: hyperparameter sweeps (trials as `tern train` processes); `tern sweep report`.
int cmd_sweep(int argc, char** argv);

// `tern pipeline run` / `tern pipeline lineage`: ML pipelines from raw data to a pushed model.
int cmd_pipeline(int argc, char** argv);
// `tern transform`: analyze a [transform] spec over TFRecords, write the artifact, apply it.
int cmd_transform(int argc, char** argv);

// `tern completion bash`: a bash completion script generated from the commands' flags.
int cmd_completion(int argc, char** argv);

struct Command {
  const char* name;
  const char* summary;  // one line, for `tern --help`
  int (*run)(int argc, char** argv);
};

// Every subcommand, in the order `tern --help` lists them.
const std::vector<Command>& commands();

}  // namespace tern::tools
