// tern's version and build description; tern/CMakeLists.txt passes the TERN_* definitions to this
// file only, so a new version or build type recompiles one file.
#include "tern/base/version.h"

#ifndef TERN_VERSION
#error "TERN_VERSION is defined by tern/CMakeLists.txt"
#endif

namespace tern {

const char* version() {
  return TERN_VERSION;
}

BuildInfo build_info() {
  BuildInfo b;
  b.compiler = TERN_COMPILER;
  b.build_type = TERN_BUILD_TYPE[0] ? TERN_BUILD_TYPE : "(no CMAKE_BUILD_TYPE)";
  b.libraries = TERN_BUILD_SHARED ? "shared" : "static";
  b.cpu_flags =
      TERN_BUILD_NATIVE ? "-march=native" : "x86-64 (portable; kernels dispatch at run time)";
  return b;
}

}  // namespace tern
