#include "test_catch.h"

#include <filesystem>

#include "core/atomic_file.h"
#include "read_whole_file.h"
#include "core/error.h"
#include "test_env.h"

using namespace hpcbench;

TEST_CASE("write_file_atomic replaces the whole file and leaves no temporary") {
  test::TempDir dir;
  auto p = dir.path / "sub" / "out.csv";
  write_file_atomic(p, "a,b\n1,2\n");
  write_file_atomic(p, "x\n");
  CHECK(read_file(p) == "x\n");
  int n = 0;
  for (auto& e : std::filesystem::directory_iterator(p.parent_path())) (void)e, ++n;
  CHECK(n == 1);
}

TEST_CASE("write_file_atomic names the path when it cannot write") {
  test::TempDir dir;
  auto blocker = dir.path / "file";
  write_file_atomic(blocker, "x");
  // A directory cannot be created below a regular file.
  REQUIRE_THROWS_WITH(write_file_atomic(blocker / "child.csv", "y"),
                      Catch::Contains((blocker).string()));
}

TEST_CASE("read_file names a missing file") {
  REQUIRE_THROWS_AS(read_file("/nonexistent/hpcbench.json"), UserError);
  REQUIRE_THROWS_WITH(read_file("/nonexistent/hpcbench.json"), Catch::Contains("/nonexistent/hpcbench.json"));
}
