// in_child_with_memory_cap: runs a test body in a forked child whose address space may grow by a
// fixed amount only, so that a reader which allocates what a tiny file claims (1 GiB for a
// 19-byte TFRecord) fails there instead of passing slowly. For the bad-input tests of the
// parsers; not under ASan, which reserves terabytes of shadow memory (callers skip).
#pragma once

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <functional>
#include <new>
#include <string>

namespace tern::testing {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kMemoryCapWorks = false;
#else
constexpr bool kMemoryCapWorks = true;
#endif

// fn's result; "bad_alloc" if an allocation failed; an exception's what(); "signal N" if the child
// died of one.
inline std::string in_child_with_memory_cap(size_t extra_bytes,
                                            const std::function<std::string()>& fn) {
  int fds[2];
  if (::pipe(fds) != 0) return "pipe failed";
  pid_t pid = ::fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    ::close(fds[0]);
    long pages = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
      std::fclose(f);
    }
    std::string result;
    const rlim_t limit = static_cast<rlim_t>(pages) * ::sysconf(_SC_PAGESIZE) + extra_bytes;
    rlimit lim{limit, limit};
    if (pages == 0 || ::setrlimit(RLIMIT_AS, &lim) != 0) {
      result = "cannot limit the address space";
    } else {
      try {
        result = fn();
      } catch (const std::bad_alloc&) {
        result = "bad_alloc";
      } catch (const std::exception& e) {
        result = e.what();
      }
    }
    for (size_t done = 0; done < result.size();) {
      ssize_t w = ::write(fds[1], result.data() + done, result.size() - done);
      if (w <= 0) break;
      done += static_cast<size_t>(w);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t r; (r = ::read(fds[0], buf, sizeof(buf))) > 0;) out.append(buf, r);
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
  return out;
}

}  // namespace tern::testing
