// tern's version (CMake's project(tern VERSION ...)) and how this copy was built, for
// `tern --version` and for the files tern writes (checkpoint manifests, model directories,
// metrics.json record which tern wrote them).
#pragma once

#include <string>

namespace tern {

// "0.5.0".
const char* version();

// What the build used: compiler ("GNU 12.2.0"), CMAKE_BUILD_TYPE ("Release"), library kind
// ("static" / "shared") and CPU flags ("x86-64 (portable)" / "native").
struct BuildInfo {
  std::string compiler;
  std::string build_type;
  std::string libraries;
  std::string cpu_flags;
};
BuildInfo build_info();

}  // namespace tern
