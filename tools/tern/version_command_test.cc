// `tern --version`: what it prints, and that it takes no arguments.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tern/base/version.h"
#include "tools/tern/commands.h"

namespace tern::tools {
namespace {

TEST(VersionCommand, NamesTernOneDnnCompilerBuildAndKernels) {
  std::vector<std::string> args = {"--version"};
  std::vector<char*> argv = {args[0].data()};
  ::testing::internal::CaptureStdout();
  int rc = cmd_version(1, argv.data());
  std::string out = ::testing::internal::GetCapturedStdout();
  EXPECT_EQ(rc, 0);
  EXPECT_EQ(out.rfind(std::string("tern ") + tern::version() + "\n", 0), 0u) << out;
  for (const char* want :
       {"\noneDNN ", " (built with ", "\ncompiler: ", "\nbuild: ", " libraries, ",
        "\nvectorized kernels: x86-64", "\nbf16 matmuls and convolutions: "}) {
    EXPECT_NE(out.find(want), std::string::npos) << want << " in:\n" << out;
  }
}

TEST(VersionCommand, ExtraArgumentIsAUsageError) {
  std::vector<std::string> args = {"--version", "extra"};
  std::vector<char*> argv = {args[0].data(), args[1].data()};
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(cmd_version(2, argv.data()), 2);
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("extra"), std::string::npos);
}

}  // namespace
}  // namespace tern::tools
