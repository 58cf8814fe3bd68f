// Subcommands of the `tern` tool. Each takes argv starting at the subcommand name.
#pragma once

namespace tern::tools {

int cmd_ops(int argc, char** argv);

}  // namespace tern::tools
