// Flag parsing shared by the subcommands, so that every `tern COMMAND` behaves the same:
//   - init_app(): an App (named "tern COMMAND") given tern's help layout (usage line, description,
//   arguments,
//     options, commands, exit status; wrapped to 80 columns) and error message;
//   - parse(): --help prints and gives 0, a usage error prints and gives 2, -1 means "go on";
//   - UsageError: a flag value found wrong after parsing (main prints it and exits 2, as it does
//     for a config::ConfigError);
//   - describe mode, for `tern completion`: while a describer is set, parse() hands it the App and
//     returns 0, so a command's flag definitions can be read without running it.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <stdexcept>
#include <string>

#include "tern/base/error.h"

namespace tern::tools {

// Exit statuses of every command (docs: README "The tern command").
constexpr int kExitOk = 0;
constexpr int kExitError = 1;
constexpr int kExitUsage = 2;

// A usage error found after flag parsing: main prints "tern CMD: message" and exits 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

template <typename... Args>
[[noreturn]] void usage_error(const Args&... args) {
  throw UsageError(str_cat(args...));
}

// Gives `app` (constructed as CLI::App{description, "tern NAME"}) tern's help formatter and failure
// message; subcommands added afterwards inherit them. `description` may hold
// several lines; lines starting with spaces are kept as written (examples), others are wrapped.
void init_app(CLI::App& app);

// --help: prints the help, 0. A usage error: prints it with the usage line, 2. Otherwise -1.
int parse(CLI::App& app, int argc, char** argv);

// Describe mode (tern completion): the describer sees the App of every parse() call instead.
using Describer = std::function<void(const CLI::App&)>;
void set_describer(const Describer* describer);

// The help text of `app` (what --help prints), e.g. for tests.
std::string help_text(const CLI::App& app);

}  // namespace tern::tools
