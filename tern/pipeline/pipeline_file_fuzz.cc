// Fuzz target: pipeline files (pipeline_file.h) as bytes: every input either parses into a spec
// whose sections are consistent, or fails with a tern::Error (a ConfigError naming file:line and
// the key); never a crash, a hang or another exception. Paths are not checked for existence.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "tern/base/error.h"
#include "tern/pipeline/pipeline_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tern;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    pipeline::PipelineSpec s =
        pipeline::parse_pipeline(text, "fuzz.toml", "", /*check_files=*/false);
    if (s.name.empty() || s.components().empty() || s.root.empty()) std::abort();
    for (const std::string& c : s.components()) {
      if (s.settings_json(c).empty()) std::abort();
    }
  } catch (const Error&) {
  }
  return 0;
}
