// HPCBENCH_INJECT (core/injection.h): the one variable that puts faults and
// stand-in facts into a run.
#include "test_catch.h"

#include <stdlib.h>

#include <optional>
#include <vector>

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

// Issue 44's fault probe: a fault whose rank or count overflowed scanf's
// int (99999999999) or was negative ran as no drill at all, or fired at
// once; a slow_rank of 99999999999 ms hung the run; rename_delay_ms=-1 was
// read only after training, losing the results; a key given twice took the
// last one. Each is refused, before a run's first step, naming the value.
TEST_CASE("check_injection refuses every malformed item, and notes a drill for a rank the job does not have") {
  struct Case {
    const char* value;
    const char* says;
  };
  for (const Case& c : std::vector<Case>{
           {"fault=99999999999:1:kill", "fault=99999999999:1:kill: expected <rank>:<after>:<kill|"},
           {"fault=0:-1:kill", "fault=0:-1:kill: expected"},
           {"fault=-1:1:kill", "fault=-1:1:kill: expected"},
           {"fault=0:99999999999999999999:kill", "fault=0:99999999999999999999:kill: expected"},
           {"fault=0:1:kill:extra", "expected <rank>:<after>"},
           {"fault=0x1:1:kill", "fault=0x1:1:kill: expected"},
           {"slow_rank=0:99999999999", "slow_rank=0:99999999999: expected <rank>:<ms>, whole numbers, ms at most 600000"},
           {"slow_rank=0:nan", "slow_rank=0:nan: expected"},
           {"slow_rank=0:1e3", "slow_rank=0:1e3: expected"},
           {"rename_delay_ms=-1", "rename_delay_ms=-1: expected a whole number from 0 to 600000"},
           {"abort_throws=yes", "abort_throws=yes: expected 1"},
           {"bus_ids=", "bus_ids=: expected"},
           {"bus_ids=a,,b", "bus_ids=a,,b: expected <id>,<id>,... with no empty id"},
           {"fault=0:1:exit;fault=0:1:kill", "fault is given twice"},
           {"fault=0:1:\xff\x1b[2J", "fault=0:1:\\xff\\x1b[2J: expected"},
       }) {
    Inject given(c.value);
    INFO(c.value);
    CHECK_THROWS_WITH((void)check_injection(0), Catch::Contains("HPCBENCH_INJECT") && Catch::Contains(c.says));
  }
  {
    Inject given("fault=5:1:kill");
    CHECK(check_injection(8).empty());
    CHECK_THAT(check_injection(1), Catch::Contains("fault=5:1:kill: rank 5 is not a rank of this job of 1"));
  }
  {
    Inject given("slow_rank=1:20;fault=1:3:term;abort_throws=1;memory_bytes=4294967296;rename_delay_ms=5;"
                 "bus_ids=0000:38:00.0;slow_read=model.safetensors:10");
    CHECK(check_injection(2).empty());
    auto slow = injected_slow_rank();
    REQUIRE(slow);
    CHECK(slow->rank == 1);
    CHECK(slow->ms == 20);
    CHECK(injected_read_delay_ms("model.safetensors") == std::optional<uint64_t>(10));
    CHECK_FALSE(injected_read_delay_ms("config.json"));
  }
}
