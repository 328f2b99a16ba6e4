// HPCBENCH_INJECT (core/injection.h): the one variable that puts faults and
// stand-in facts into a run.
#include "test_catch.h"

#include <stdlib.h>

#include "core/error.h"
#include "core/injection.h"

using namespace hpcbench;

namespace {

struct Inject {
  explicit Inject(const char* value) { ::setenv(kInjectVariable, value, 1); }
  ~Inject() { ::unsetenv(kInjectVariable); }
};

}  // namespace

TEST_CASE("injected reads each key of HPCBENCH_INJECT, and nothing when it is unset") {
  ::unsetenv(kInjectVariable);
  CHECK_FALSE(injected("fault"));
  CHECK_FALSE(injected_fault({"kill"}));
  Inject given("slow_rank=1:20;bus_ids=0000:38:00.0,0000:68:00.0;;abort_throws=1");
  CHECK(injected("slow_rank") == "1:20");
  CHECK(injected("bus_ids") == "0000:38:00.0,0000:68:00.0");
  CHECK(injected("abort_throws") == "1");
  CHECK_FALSE(injected("memory_bytes"));
}

TEST_CASE("a misspelt or malformed injection is an error naming the variable") {
  {
    Inject typo("slow-rank=1:20");
    CHECK_THROWS_WITH(injected("slow_rank"), Catch::Contains("HPCBENCH_INJECT") && Catch::Contains("slow-rank=1:20"));
  }
  {
    Inject bare("abort_throws");
    CHECK_THROWS_AS(injected("abort_throws"), UserError);
  }
}

TEST_CASE("injected_fault reads rank, count and a mode the caller knows") {
  {
    Inject f("fault=1:3:kill");
    auto fault = injected_fault({"kill", "hang"});
    REQUIRE(fault);
    CHECK(fault->rank == 1);
    CHECK(fault->after == 3);
    CHECK(fault->mode == "kill");
    CHECK_THROWS_WITH(injected_fault({"hang"}), Catch::Contains("fault=1:3:kill") && Catch::Contains("<hang>"));
  }
  {
    Inject f("fault=1:kill");
    CHECK_THROWS_AS(injected_fault({"kill"}), UserError);
  }
}
