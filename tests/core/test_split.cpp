#include "test_catch.h"

#include "core/atomic_file.h"
#include "core/split.h"
#include "core/write_probe.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

using namespace hpcbench;
using V = std::vector<std::string>;

TEST_CASE("split keeps every piece, empty ones too") {
  CHECK(split("a,b,c") == V{"a", "b", "c"});
  CHECK(split("a,,b") == V{"a", "", "b"});
  CHECK(split("") == V{""});
  CHECK(split(",") == V{"", ""});
  CHECK(split("a,") == V{"a", ""});
  CHECK(split("one") == V{"one"});
  CHECK(split("x\ny\n", '\n') == V{"x", "y", ""});
}

TEST_CASE("write_probe proves a folder takes a folder and a file with data, and leaves nothing") {
  char tmpl[] = "/tmp/hpcbench-test-probe-XXXXXX";
  REQUIRE(::mkdtemp(tmpl));
  std::filesystem::path dir = tmpl;
  CHECK(write_probe(dir) == 0);
  CHECK(std::filesystem::is_empty(dir));
  CHECK(write_probe(dir / "missing") == ENOENT);
  if (::geteuid() != 0) {  // root writes into a read-only folder all the same
    ::chmod(dir.c_str(), 0555);
    CHECK(write_probe(dir) == EACCES);
    ::chmod(dir.c_str(), 0755);
  }
  int fd = allocated_file(dir, 8192);
  REQUIRE(fd >= 0);
  struct stat st {};
  REQUIRE(::fstat(fd, &st) == 0);
  CHECK(st.st_size == 8192);
  CHECK(st.st_blocks * 512 >= 8192);
  ::close(fd);
  CHECK(std::filesystem::is_empty(dir));  // unlinked from the start
  hpcbench::remove_tree(dir);
}
