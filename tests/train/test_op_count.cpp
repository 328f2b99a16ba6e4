// Host work per step as a regression guard: the ATen operations one bert-tiny
// training step dispatches (HPCBENCH_COUNT_OPS=1, lib/train/op_count.h) stay
// under bounds set just above what the step costs now. Counting is
// deterministic, so the bounds are exact figures, not timings; a change that
// adds a per-parameter operation to the step (bert-tiny has 39 parameters,
// 18 flat parameters under zero / fsdp) crosses them. bench/bench_op_count.py
// prints the same counts for bert-base beside Hugging Face's.
#include "test_catch.h"

#include <map>
#include <regex>
#include <string>

#include "test_env.h"

using namespace hpcbench;

namespace {

struct Counts {
  long long top = -1, all = -1;
};

// Rank 0's count of the last step after the warm-up.
Counts count_step(const std::string& strategy_flags, const test::TempDir& dir, const std::string& name) {
  auto cmd = "HPCBENCH_COUNT_OPS=1 OMP_NUM_THREADS=1 " + test::hpcbench_bin().string() + " run " + strategy_flags +
             " --model bert-tiny --train-data synthetic --synthetic-samples 64 --max-seq-length 32 --doc-stride 16 --batch-size 2"
             " --max-steps 3 --timing-warmup-steps 2 --precision fp32 --device cpu --threads 1 --cache-dir none"
             " --log-every 1000 --results-dir " + (dir.path / "results").string() + " --run-name " + name;
  auto r = test::run_command(cmd);
  INFO(cmd << "\n" << r.output);
  REQUIRE(r.exit_code == 0);
  std::regex line(R"(ops rank 0 step (\d+): (\d+) top-level, (\d+) in all)");
  Counts c;
  int lines = 0;
  for (std::sregex_iterator it(r.output.begin(), r.output.end(), line), end; it != end; ++it, ++lines) {
    CHECK(std::stoi((*it)[1]) == 3);  // only steps after the warm-up are printed
    c = {std::stoll((*it)[2]), std::stoll((*it)[3])};
  }
  REQUIRE(lines == 1);
  return c;
}

}  // namespace

TEST_CASE("ATen operations per bert-tiny step stay under their bounds") {
  test::TempDir dir;
  // {flags, top-level bound}: 392, 431 and 612 when written, 429, 507 and 730
  // before the per-parameter operations were folded (bench/README.md).
  const std::map<std::string, std::pair<std::string, long long>> cases = {
      {"baseline", {"", 400}},
      {"ddp-2", {"--strategy ddp --nproc-per-node 2", 440}},
      {"fsdp-2", {"--strategy fsdp --nproc-per-node 2", 620}},
  };
  for (const auto& [name, c] : cases) {
    INFO(name);
    auto counts = count_step(c.first, dir, name);
    CHECK(counts.top > 0);
    CHECK(counts.all >= counts.top);
    CHECK(counts.top <= c.second);
  }
}
