#pragma once
// Where tests find their inputs; set by ctest (tests/CMakeLists.txt).
#include <arpa/inet.h>
#include <ftw.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace hpcbench::test {

inline std::filesystem::path env_path(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) throw std::runtime_error(std::string(name) + " is not set: run the tests through ctest");
  return v;
}
inline std::filesystem::path test_data() { return env_path("HPCBENCH_TEST_DATA"); }  // tests/fixtures
inline std::string vocab_file() { return (test_data() / "bert-base-uncased" / "vocab.txt").string(); }
inline std::string squad_file(const char* name) { return (test_data() / "squad" / name).string(); }
inline std::filesystem::path reference_dir() { return env_path("HPCBENCH_REF_DIR"); }
inline std::filesystem::path hpcbench_bin() { return env_path("HPCBENCH_BIN"); }
inline std::filesystem::path source_dir() { return env_path("HPCBENCH_SOURCE_DIR"); }

struct CommandResult {
  int exit_code = -1;  // 128 + N when killed by signal N, as the shell reports it
  std::string output;  // stdout and stderr together
};

// Runs a shell command, capturing its output.
inline CommandResult run_command(const std::string& cmd) {
  CommandResult r;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) r.output.append(buf, n);
  int status = ::pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  return r;
}

// A loopback port nothing listens on now (bound, then closed): for a server
// the test starts, or as one that refuses connections.
inline int free_loopback_port() {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(s);
  return ntohs(a.sin_port);
}

// A whole file as text ("" when it cannot be read).
inline std::string slurp(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Entries directly inside `dir` (0 when it does not exist), leaving out
// `.running`: a rank killed outright (a signal) cannot remove its live
// TensorBoard log there, and is meant to leave it readable (issue 25); a
// results folder itself never appears for a failed job.
inline size_t entries(const std::filesystem::path& dir) {
  if (!std::filesystem::exists(dir)) return 0;
  size_t n = 0;
  for (auto& e : std::filesystem::directory_iterator(dir)) n += e.path().filename() != ".running";
  return n;
}

// A fresh empty folder for one test, removed when it goes out of scope.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    char tmpl[] = "/tmp/hpcbench-test-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  // nftw, not std::filesystem::remove_all, which crashes in binaries linked
  // with the torch wheel's libtorch.so (see lib/core/atomic_file.h).
  ~TempDir() {
    auto remove_one = [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p); };
    ::nftw(path.c_str(), remove_one, 16, FTW_DEPTH | FTW_PHYS);
  }
};

}  // namespace hpcbench::test
