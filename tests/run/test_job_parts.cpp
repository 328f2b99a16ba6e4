// The job around a run (run/job.h), piece by piece in this process: the
// flags it refuses before anything starts, each named, and this rank's
// context with and without a communicator.
#include "test_catch.h"

#include <string>

#include "core/error.h"
#include "core/hostinfo.h"
#include "distributed/process_group.h"
#include "run/job_checks.h"
#include "specs/label.h"
#include "run/job_results.h"
#include "run/rank_context.h"
#include "specs/spec.h"
#include "test_env.h"

using namespace hpcbench;

namespace {

// The message check_options refuses `o` with ("" when it accepts them).
std::string refusal(const run::JobOptions& o, const std::string& strategy = "baseline") {
  train::TrainConfig cfg;
  cfg.device = "cpu";
  try {
    run::check_options(cfg, strategies::parse_label(strategy, "--strategy"), o);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("the job's flags are refused before anything starts, each named") {
  CHECK(refusal({}) == "");
  run::JobOptions o;
  o.repeats = 0;
  CHECK_THAT(refusal(o), Catch::Contains("--repeats 0"));
  o = {};
  o.nproc_per_node = -1;
  CHECK_THAT(refusal(o), Catch::Contains("--nproc-per-node -1"));
  o = {};
  o.backend = "mpi";
  CHECK_THAT(refusal(o), Catch::Contains("--backend mpi"));
  o = {};
  o.collective_timeout_s = 0;
  CHECK_THAT(refusal(o), Catch::Contains("--collective-timeout"));
  o = {};
  o.keep_collectives = true;
  CHECK_THAT(refusal(o), Catch::Contains("--keep-collectives"));
  CHECK(refusal(o, "ddp") == "");
  o = {};
  o.allow_shared_gpu = true;
  CHECK_THAT(refusal(o), Catch::Contains("--backend gloo"));
}

TEST_CASE("a stopped run exits as a shell reports the signal") {
  CHECK(run::interrupted_exit(SIGINT) == 130);
  CHECK(run::interrupted_exit(SIGUSR1) == 128 + SIGUSR1);
  CHECK(run::interrupted_exit(0) == 128 + SIGTERM);  // stopped, signal unknown: as SIGTERM
}

TEST_CASE("one process that needs no communicator: its context, the repeat it is") {
  train::TrainConfig cfg;
  cfg.device = "cpu";
  run::JobOptions o;
  o.repeat_group = "grp";
  o.repeat_index = 2;
  auto ctx = run::rank_context(dist::RankLayout{}, cfg, strategies::parse_label("baseline", "--strategy"), o);
  CHECK(!ctx.comm);
  CHECK(ctx.rank == 0);
  CHECK(ctx.world_size == 1);
  CHECK(ctx.repeat_group == "grp");
  CHECK(ctx.repeat_index == 2);
  CHECK(ctx.host_list().empty());
}

TEST_CASE("a strategy that communicates gets a communicator at one rank, and the hosts") {
  train::TrainConfig cfg;
  cfg.device = "cpu";
  run::JobOptions o;
  o.repeat_index = 1;
  dist::RankLayout layout;
  layout.master_port = test::free_loopback_port();
  auto ctx = run::rank_context(layout, cfg, strategies::parse_label("ddp", "--strategy"), o);
  REQUIRE(ctx.comm);
  CHECK(ctx.comm->device().is_cpu());
  CHECK(ctx.world_size == 1);
  CHECK(ctx.repeat_index == 1);
  const char* node = std::getenv("SLURMD_NODENAME");
  CHECK(ctx.host_list() == std::vector<std::string>{node && *node ? node : hostname()});
  CHECK(ctx.exchange("test/key", "mine") == std::vector<std::string>{"mine"});
}
