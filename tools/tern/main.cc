// The `tern` command: dispatches to subcommands.
#include <cstring>
#include <exception>
#include <iostream>
#include <string>

#include "tern/base/error.h"
#include "tern/dist/communicator.h"
#include "tern/runtime/openmp_wait.h"
#include "tools/tern/commands.h"

namespace {

void print_usage(std::ostream& os) {
  os << "usage: tern <command> [args]\n\n"
        "commands:\n"
        "  train      train the model a config describes (tern train examples/fashion_mnist.toml)\n"
        "  eval       evaluate trained weights on the config's test split\n"
        "  predict    predict classes for test images, as CSV (--model DIR: an exported model)\n"
        "  export     export a trained model as a served model directory (BASE/VERSION)\n"
        "  serve      serve exported models over TF Serving's REST and gRPC APIs\n"
        "  summary    print the model a config describes\n"
        "  ops        list every registered op: dtypes, fast kernel or ref only, gradient\n"
        "  data       inspect, convert and benchmark input data (TFRecord, IDX, CSV, images)\n"
        "  profile    trace training steps of a config (Chrome trace) and rank ops by time\n"
        "  logs       print what TensorBoard event files hold\n"
        "  ckpt       inspect (validate and describe) a training checkpoint\n"
        "\n'tern <command> --help' describes a command; 'tern --version' prints the version.\n";
}

}  // namespace

int main(int argc, char** argv) {
  tern::runtime::use_bounded_openmp_spin(argv);
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    print_usage(argc < 2 ? std::cerr : std::cout);
    return argc < 2 ? 2 : 0;
  }
  std::string cmd = argv[1];
  try {
    if (cmd == "--version") return tern::tools::cmd_version(argc - 1, argv + 1);
    if (cmd == "ops") return tern::tools::cmd_ops(argc - 1, argv + 1);
    if (cmd == "train") return tern::tools::cmd_train(argc - 1, argv + 1);
    if (cmd == "eval") return tern::tools::cmd_eval(argc - 1, argv + 1);
    if (cmd == "predict") return tern::tools::cmd_predict(argc - 1, argv + 1);
    if (cmd == "export") return tern::tools::cmd_export(argc - 1, argv + 1);
    if (cmd == "serve") return tern::tools::cmd_serve(argc - 1, argv + 1);
    if (cmd == "summary") return tern::tools::cmd_summary(argc - 1, argv + 1);
    if (cmd == "data") return tern::tools::cmd_data(argc - 1, argv + 1);
    if (cmd == "profile") return tern::tools::cmd_profile(argc - 1, argv + 1);
    if (cmd == "logs") return tern::tools::cmd_logs(argc - 1, argv + 1);
    if (cmd == "ckpt") return tern::tools::cmd_ckpt(argc - 1, argv + 1);
    std::cerr << "tern: unknown command '" << cmd << "'\n";
    print_usage(std::cerr);
    return 2;
  } catch (const std::exception& e) {
    // A worker of a distributed job ends the whole job: the others may be waiting for it in a
    // collective and would never return (MPI has no timeouts).
    if (tern::dist::launched_by_mpi()) {
      if (auto world = tern::dist::world(); world && world->size() > 1)
        world->abort(1, "tern " + cmd + ": " + e.what());
    }
    std::cerr << "tern " << cmd << ": " << e.what() << "\n";
    return 1;
  }
}
