// Names of TF Serving's version states.
#include "tern/serve/backend.h"

namespace tern::serve {

std::string_view version_state_name(VersionState s) {
  switch (s) {
    case VersionState::kUnknown:
      return "UNKNOWN";
    case VersionState::kStart:
      return "START";
    case VersionState::kLoading:
      return "LOADING";
    case VersionState::kAvailable:
      return "AVAILABLE";
    case VersionState::kUnloading:
      return "UNLOADING";
    case VersionState::kEnd:
      return "END";
  }
  return "UNKNOWN";
}

}  // namespace tern::serve
