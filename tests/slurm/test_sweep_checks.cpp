// Issue 22, class 2: `hpcbench sweep` checks every job's run flags with the
// binary the jobs run (`run --dry-run`) and its --time before it writes or
// submits anything: a wrong flag would otherwise fail each job only after it
// waited in the queue.
#include "test_catch.h"

#include <filesystem>

#include <fmt/format.h>

#include "core/atomic_file.h"
#include "test_env.h"

using namespace hpcbench;
namespace fs = std::filesystem;

TEST_CASE("sweep refuses run flags and a --time that would fail in the queue, writing nothing") {
  test::TempDir dir;
  auto out = dir.path / "sweep";
  // An sbatch that records that it was called: nothing may reach it. Where
  // a sweep may submit, it answers a new job id each time, as SLURM does (a
  // repeated id is refused).
  auto sbatch = dir.path / "sbatch";
  const auto count = (dir.path / "count").string();
  write_file_atomic(sbatch, "#!/bin/sh\ntouch '" + (dir.path / "called").string() + "'\nn=$(cat '" + count +
                                "' 2>/dev/null || echo 0); n=$((n + 1)); echo $n > '" + count + "'; echo $n\n");
  fs::permissions(sbatch, fs::perms::owner_all);
  struct Case {
    std::string args, expect;
  } cases[] = {
      {"-- --max-steps abc", "--max-steps abc: expected an integer"},
      {"-- --max-stepz 5", "--max-stepz"},
      {"-- --config " + (dir.path / "missing.toml").string(), "--config " + (dir.path / "missing.toml").string()},
      {"-- --eval-data " + (dir.path / "missing.json").string() + " --vocab " + test::vocab_file(),
       "--eval-data " + (dir.path / "missing.json").string() + ": no such file"},
      {"--time 25:99:99:1 -- --max-steps 5", "--time 25:99:99:1: not a SLURM time"},
  };
  for (auto& c : cases) {
    INFO(c.args);
    auto r = test::run_command(fmt::format("PATH='{}':$PATH '{}' sweep --strategies ddp --nodes 1 --gpus-per-node 2 "
                                           "--cpu --submit --out '{}' {}",
                                           dir.path.string(), test::hpcbench_bin().string(), out.string(), c.args));
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find(c.expect) != std::string::npos);
    if (c.args.starts_with("-- "))
      CHECK(r.output.find("nothing was written or submitted") != std::string::npos);
    CHECK_FALSE(fs::exists(out));
    CHECK_FALSE(fs::exists(dir.path / "called"));
  }
  // Flags that check out are written (and here submitted to the stand-in).
  auto r = test::run_command(fmt::format("PATH='{}':$PATH '{}' sweep --strategies ddp --nodes 1 --gpus-per-node 2 "
                                         "--cpu --submit --out '{}' -- --max-steps 5",
                                         dir.path.string(), test::hpcbench_bin().string(), out.string()));
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(fs::exists(out / "sweep.json"));
  CHECK(fs::exists(dir.path / "called"));
}
