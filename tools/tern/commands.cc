// The table of `tern` subcommands.
#include "tools/tern/commands.h"

namespace tern::tools {

const std::vector<Command>& commands() {
  static const std::vector<Command> kCommands = {
      {"train", "train the model a config describes (tern train examples/fashion_mnist.toml)",
       cmd_train},
      {"eval", "evaluate trained weights on the config's test split", cmd_eval},
      {"predict", "predict classes for test images, as CSV (--model DIR: an exported model)",
       cmd_predict},
      {"export", "export a trained model as a served model directory (BASE/VERSION)", cmd_export},
      {"serve", "serve exported models over TF Serving's REST and gRPC APIs", cmd_serve},
      {"summary", "print the model a config describes", cmd_summary},
      {"ops", "list every registered op: dtypes, fast kernel or ref only, gradient", cmd_ops},
      {"data", "inspect, convert and benchmark input data (TFRecord, IDX, CSV, images)", cmd_data},
      {"profile", "trace training steps of a config (Chrome trace) and rank ops by time",
       cmd_profile},
      {"logs", "print what TensorBoard event files hold", cmd_logs},
      {"ckpt", "inspect (validate and describe) a training checkpoint", cmd_ckpt},
      {"sweep", "run a hyperparameter sweep (trials in parallel, early stopping); report",
       cmd_sweep},
      {"pipeline", "run an ML pipeline (ingest ... train, evaluate, push); lineage of artifacts",
       cmd_pipeline},
      {"transform", "analyze a [transform] spec over TFRecords and apply it (TF Transform)",
       cmd_transform},
      {"completion", "print a bash completion script (source it, or install it: see README)",
       cmd_completion},
  };
  return kCommands;
}

}  // namespace tern::tools
