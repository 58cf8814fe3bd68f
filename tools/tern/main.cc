// The `tern` command: dispatches to subcommands (tools/tern/commands.h) and turns what they throw
// into exit statuses: 2 for usage errors (a bad flag value, a bad config key), 1 for the rest.
#include <cstring>
#include <exception>
#include <iomanip>
#include <iostream>
#include <string>

#include "tern/base/error.h"
#include "tern/config/config.h"
#include "tern/dist/communicator.h"
#include "tern/runtime/openmp_wait.h"
#include "tools/tern/cli_parse.h"
#include "tools/tern/commands.h"

namespace {

void print_usage(std::ostream& os) {
  os << "usage: tern COMMAND [options]\n\ncommands:\n";
  for (const auto& c : tern::tools::commands())
    os << "  " << std::left << std::setw(12) << c.name << c.summary << "\n";
  os << "\n'tern COMMAND --help' describes a command; 'tern --version' prints the version.\n"
        "exit status: 0 done, 1 error, 2 usage error (a bad flag, argument or config key)\n";
}

// Prints "tern CMD: message" and ends the process (all of a distributed job's workers: the others
// may be waiting for this one in a collective and would never return; MPI has no timeouts).
int fail(const std::string& cmd, const std::string& message, int status) {
  if (tern::dist::launched_by_mpi()) {
    if (auto world = tern::dist::world(); world && world->size() > 1)
      world->abort(status, "tern " + cmd + ": " + message);
  }
  std::cerr << "tern " << cmd << ": " << message << "\n";
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  tern::runtime::use_bounded_openmp_spin(argv);
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    print_usage(argc < 2 ? std::cerr : std::cout);
    return argc < 2 ? tern::tools::kExitUsage : tern::tools::kExitOk;
  }
  std::string cmd = argv[1];
  try {
    if (cmd == "--version") return tern::tools::cmd_version(argc - 1, argv + 1);
    for (const auto& c : tern::tools::commands()) {
      if (cmd == c.name) return c.run(argc - 1, argv + 1);
    }
    std::cerr << "tern: unknown command '" << cmd << "'\n";
    print_usage(std::cerr);
    return tern::tools::kExitUsage;
  } catch (const tern::config::ConfigError& e) {
    return fail(cmd, e.what(), tern::tools::kExitUsage);
  } catch (const tern::tools::UsageError& e) {
    return fail(cmd, e.what(), tern::tools::kExitUsage);
  } catch (const std::exception& e) {
    return fail(cmd, e.what(), tern::tools::kExitError);
  }
}
