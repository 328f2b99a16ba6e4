#include "test_catch.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "core/atomic_file.h"
#include "core/error.h"
#include "distributed/hostlist.h"

using hpcbench::UserError;
using hpcbench::dist::expand_hostlist;
using V = std::vector<std::string>;

TEST_CASE("host lists expand like scontrol show hostnames") {
  CHECK(expand_hostlist("node1") == V{"node1"});
  CHECK(expand_hostlist("a,b.example.org,c-1") == V{"a", "b.example.org", "c-1"});
  CHECK(expand_hostlist("n[1-2]") == V{"n1", "n2"});
  CHECK(expand_hostlist("gpu-[001-003,007],cpu[1,4]") ==
        V{"gpu-001", "gpu-002", "gpu-003", "gpu-007", "cpu1", "cpu4"});
  CHECK(expand_hostlist("n[08-11]") == V{"n08", "n09", "n10", "n11"});
  CHECK(expand_hostlist("n[8-10]") == V{"n8", "n9", "n10"});
  CHECK(expand_hostlist("n[098-101]") == V{"n098", "n099", "n100", "n101"});
  CHECK(expand_hostlist("n[5]") == V{"n5"});
  CHECK(expand_hostlist("r[1-2]n[1-2]") == V{"r1n1", "r1n2", "r2n1", "r2n2"});
  CHECK(expand_hostlist("n[1-2]-ib") == V{"n1-ib", "n2-ib"});
  CHECK(expand_hostlist("login,n[1-3]") == V{"login", "n1", "n2", "n3"});
  CHECK(expand_hostlist("n[0-999]").size() == 1000);
}

TEST_CASE("malformed host lists are errors that quote the list") {
  for (const char* bad : {"", "n[1-2", "n1-2]", "n[]", "n[a-b]", "n[3-1]", "n[1-2],,m", ",n1", "n[1-[2]]",
                          "n[1-]", "n[-1]", "n 1", "n[1,,2]"}) {
    INFO(bad);
    CHECK_THROWS_AS(expand_hostlist(bad), UserError);
  }
  CHECK_THROWS_WITH(expand_hostlist("n[3-1]"), Catch::Contains("n[3-1]") && Catch::Contains("backwards"));
  CHECK_THROWS_WITH(expand_hostlist("n[1-99999999]"), Catch::Contains("too large"));
}

TEST_CASE("resolve_hostlist falls back to the built-in expander without scontrol") {
  // No scontrol on PATH here; with one, scontrol's answer is the same.
  CHECK(hpcbench::dist::resolve_hostlist("gpu-[001-002]") == V{"gpu-001", "gpu-002"});
}

namespace {

// A folder with an executable `scontrol` that runs `script`, first on PATH
// while it lives.
struct FakeScontrol {
  std::filesystem::path dir;
  std::string old_path;
  explicit FakeScontrol(const std::string& script) {
    char tmpl[] = "/tmp/hpcbench-test-scontrol-XXXXXX";
    REQUIRE(::mkdtemp(tmpl));
    dir = tmpl;
    std::ofstream(dir / "scontrol") << "#!/bin/sh\n" << script << "\n";
    std::filesystem::permissions(dir / "scontrol", std::filesystem::perms::owner_all);
    const char* p = std::getenv("PATH");
    old_path = p ? p : "";
    ::setenv("PATH", (dir.string() + ":" + old_path).c_str(), 1);
  }
  ~FakeScontrol() {
    ::setenv("PATH", old_path.c_str(), 1);
    hpcbench::remove_tree(dir);
  }
};

}  // namespace

TEST_CASE("resolve_hostlist takes scontrol's answer, given the list as one argument, and falls back when it fails") {
  {
    // Echoes its arguments back: the list reaches it whole, without a shell.
    FakeScontrol fake("[ \"$1 $2\" = 'show hostnames' ] || exit 1; echo \"from-$3\"; echo; echo second >&2; echo b");
    CHECK(hpcbench::dist::resolve_hostlist("gpu-[001-002]") == V{"from-gpu-[001-002]", "b"});
  }
  {
    FakeScontrol broken("echo partial; exit 1");
    CHECK(hpcbench::dist::resolve_hostlist("gpu-[001-002]") == V{"gpu-001", "gpu-002"});
  }
}
