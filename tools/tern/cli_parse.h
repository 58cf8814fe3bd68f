// Flag parsing shared by the subcommands: CLI11 parses argv; --help and usage errors print and give
// the exit code to return (0 for --help, 2 for a usage error), -1 means "go on".
#pragma once

#include <CLI/CLI.hpp>

namespace tern::tools {

inline int parse(CLI::App& app, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  return -1;
}

}  // namespace tern::tools
