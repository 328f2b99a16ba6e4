// What sbatch and squeue answer is bytes, not
// trusted text; a sweep.json is not trusted to name files outside its
// folder; a stuck squeue neither hangs nor outlasts a stop signal.
#include "test_catch.h"

#include <stdlib.h>

#include <chrono>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/printable.h"
#include "slurm/slurm_test_util.h"
#include "sweep/manifest.h"
#include "sweep/plan.h"
#include "sweep/status.h"
#include "sweep/submit.h"
#include "test_env.h"

namespace fs = std::filesystem;
using namespace hpcbench;

namespace {

void script(const fs::path& path, const std::string& body) {
  test::sh("cat > " + path.string() + " <<'EOF'\n#!/bin/bash\n" + body + "\nEOF\nchmod +x " + path.string());
}

sweep::Sweep small_sweep(const fs::path& out) {
  sweep::SweepOptions o;
  o.strategies = {"ddp"};
  o.nodes = {1};
  o.gpus_per_node = {1, 2};  // baseline-1x1, ddp-1x1, ddp-1x2
  o.out_dir = out;
  o.hpcbench = "/opt/hpcbench/bin/hpcbench";
  return sweep::write_sweep(o);
}

size_t calls(const fs::path& file) { return test::lines_of(test::slurp(file)).size(); }

// sweep.json with `edit` applied to its JSON.
template <typename F>
void edit_manifest(const fs::path& dir, F edit) {
  auto j = nlohmann::json::parse(test::slurp(dir / "sweep.json"));
  edit(j);
  std::ofstream(dir / "sweep.json") << j.dump(2);
}

}  // namespace

TEST_CASE("printable keeps UTF-8 and writes every other byte as \\xNN", "[sweep]") {
  CHECK(printable("Ung\xc3\xbcltige Partition\n\tx") == "Ung\xc3\xbcltige Partition\n\tx");
  CHECK(printable("Ung\xfcltige") == "Ung\\xfcltige");                 // Latin-1
  CHECK(printable("a\x1b[31mred\x7f") == "a\\x1b[31mred\\x7f");         // terminal escapes
  CHECK(printable("\xed\xa0\x80") == "\\xed\\xa0\\x80");                // a surrogate is not UTF-8
  CHECK(printable("\xc0\xaf") == "\\xc0\\xaf");                         // an overlong '/'
  CHECK(printable(std::string("a\0b", 3)) == "a\\x00b");
  CHECK(printable("abcdef", 3) == "abc ... (3 more bytes)");
  // Whatever the bytes, the result is valid JSON text.
  std::string all;
  for (int i = 0; i < 256; ++i) all += static_cast<char>(i);
  CHECK_NOTHROW(nlohmann::json(printable(all + all)).dump());
}

TEST_CASE("sbatch output that is not UTF-8 is recorded, printable, as the job's failure", "[sweep]") {
  test::TempDir tmp;
  auto fake = tmp.path / "sbatch";
  // A German locale's error in Latin-1, then random bytes from a broken
  // wrapper that still exits 0, then a good answer.
  script(fake, "echo \"$*\" >> " + (tmp.path / "calls").string() +
                   "\ncase $2 in\n *baseline*) printf 'sbatch: Fehler: Ung\\xfcltige Partition angegeben\\n' >&2; "
                   "exit 1;;\n *1x1*) head -c 300 /dev/urandom; printf '\\n\\xff\\xfe\\x00'; exit 0;;\nesac\necho 4711");
  auto s = small_sweep(tmp.path / "s");
  auto summary = sweep::submit_sweep(s, fake.string());
  CHECK(summary.failed == 2);
  CHECK(summary.submitted == 1);
  // sweep.json is written and reads back: the failures are there to see.
  auto text = test::slurp(s.dir / "sweep.json");
  REQUIRE_NOTHROW(nlohmann::json::parse(text));
  auto back = sweep::read_manifest(s.dir);
  REQUIRE(back.jobs.size() == 3);
  CHECK(back.jobs[0].state == "submit_failed");
  CHECK_THAT(back.jobs[0].submit_error, Catch::Contains("exited 1") && Catch::Contains("Ung\\xfcltige Partition"));
  CHECK(back.jobs[1].state == "submit_failed");
  CHECK_THAT(back.jobs[1].submit_error, Catch::Contains("printed no job id") && Catch::Contains("\\xff\\xfe\\x00"));
  CHECK(back.jobs[2].job_id == std::optional<std::string>("4711"));
}

TEST_CASE("job ids SLURM never gives are refused with the reason", "[sweep]") {
  CHECK(sweep::job_id_problem("1234") == "");
  CHECK(sweep::job_id_problem("4294967295") == "");
  CHECK_THAT(sweep::job_id_problem("0"), Catch::Contains("never gives job id 0"));
  CHECK_THAT(sweep::job_id_problem("4294967296"), Catch::Contains("32 bits"));
  CHECK_THAT(sweep::job_id_problem("12345678901234567890123456"), Catch::Contains("32 bits"));
  CHECK_THAT(sweep::job_id_problem("0012"), Catch::Contains("leading zero"));
  CHECK_THAT(sweep::job_id_problem("12 3"), Catch::Contains("not a number"));

  test::TempDir tmp;
  int n = 0;
  for (std::string answer : {"0", "12345678901234567890123456"}) {
    INFO(answer);
    const auto tag = std::to_string(++n);
    auto fake = tmp.path / "sbatch";
    fake += tag;
    script(fake, "echo " + answer);
    auto s = small_sweep(tmp.path / tag);
    auto summary = sweep::submit_sweep(s, fake.string());
    CHECK(summary.submitted == 0);
    CHECK(summary.failed == 3);
    auto back = sweep::read_manifest(s.dir);
    for (const auto& j : back.jobs) {
      CHECK(!j.job_id);
      CHECK_THAT(j.submit_error, Catch::Contains("answered job id '" + answer + "', which is not a SLURM job id") &&
                                     Catch::Contains("squeue --me -n hpcbench-" + j.name));
    }
  }
  // The same id for every job: the first keeps it, the others are refused.
  auto fake = tmp.path / "sbatch_same";
  script(fake, "echo 'Submitted batch job 77'");
  auto s = small_sweep(tmp.path / "same");
  auto summary = sweep::submit_sweep(s, fake.string());
  CHECK(summary.submitted == 1);
  CHECK(summary.failed == 2);
  auto back = sweep::read_manifest(s.dir);
  CHECK(back.jobs[0].job_id == std::optional<std::string>("77"));
  CHECK_THAT(back.jobs[1].submit_error, Catch::Contains("it is the id of job baseline-1x1 already"));

  // A manifest edited by hand is refused on reading, naming the job.
  edit_manifest(s.dir, [](auto& j) { j["jobs"][1]["job_id"] = "77"; });
  CHECK_THROWS_WITH(sweep::read_manifest(s.dir), Catch::Contains("job id 77 is given to two jobs, baseline-1x1 and "
                                                                 "ddp-1x1"));
  edit_manifest(s.dir, [](auto& j) { j["jobs"][1]["job_id"] = "0; rm -rf ~"; });
  CHECK_THROWS_WITH(sweep::read_manifest(s.dir), Catch::Contains("job 'ddp-1x1': job id '0; rm -rf ~' is not a SLURM "
                                                                 "job id"));
}

TEST_CASE("sweep --resume submits only scripts inside the sweep's own jobs/ folder", "[sweep]") {
  test::TempDir tmp;
  auto log = tmp.path / "calls";
  auto fake = tmp.path / "sbatch";
  script(fake, "echo \"$*\" >> " + log.string() + "\nexit 1");
  auto s = small_sweep(tmp.path / "s");
  sweep::submit_sweep(s, fake.string());  // every job submit_failed: resume would send them all again
  REQUIRE(calls(log) == 3);
  for (std::string path : {"../../../../etc/passwd", "/etc/passwd", "jobs/../../x.sbatch", "runs/ddp-1x1/x.sbatch"}) {
    INFO(path);
    edit_manifest(s.dir, [&](auto& j) { j["jobs"][2]["script"] = path; });
    CHECK_THROWS_WITH(sweep::read_manifest(s.dir),
                      Catch::Contains("job 'ddp-1x2': script '" + path + "' is outside the sweep's jobs/ folder"));
  }
  edit_manifest(s.dir, [&](auto& j) { j["jobs"][2]["script"] = "jobs/ddp-1x2.sbatch"; });
  for (auto field_path : {std::pair{"run_dir", "/home"}, std::pair{"log", "../logs/x-%j.out"}}) {
    // Named members, not a structured binding: Clang before 16 cannot capture one (P1091).
    const char* field = field_path.first;
    const char* path = field_path.second;
    INFO(field);
    edit_manifest(s.dir, [&](auto& j) { j["jobs"][0][field] = path; });
    CHECK_THROWS_WITH(sweep::read_manifest(s.dir), Catch::Contains(std::string(field) + " '" + path + "' is outside"));
    edit_manifest(s.dir, [&](auto& j) {
      j["jobs"][0][field] = std::string(field) == "log" ? "logs/baseline-1x1-%j.out" : "runs/baseline-1x1";
    });
  }
  // A link in jobs/ to a file elsewhere: followed, and refused.
  fs::remove(s.dir / "jobs/ddp-1x2.sbatch");
  fs::create_symlink("/etc/passwd", s.dir / "jobs/ddp-1x2.sbatch");
  auto back = sweep::read_manifest(s.dir);
  sweep::prepare_resume(back, s.dir);
  CHECK_THROWS_WITH(sweep::submit_sweep(back, fake.string()),
                    Catch::Contains("script jobs/ddp-1x2.sbatch resolves to /etc/passwd, outside the sweep's jobs/"));
  CHECK(calls(log) == 5);  // the two jobs before it; never /etc/passwd
  for (const auto& line : test::lines_of(test::slurp(log))) CHECK_THAT(line, !Catch::Contains("passwd"));
}

TEST_CASE("a stuck squeue is stopped after its limit, once per look at the sweep", "[sweep]") {
  test::TempDir tmp;
  auto log = tmp.path / "squeue_calls";
  auto squeue = tmp.path / "squeue";
  script(squeue, "echo \"$*\" >> " + log.string() + "\nsleep 60 &\nsleep 60");
  auto s = small_sweep(tmp.path / "s");
  for (size_t i = 0; i < s.jobs.size(); ++i) s.jobs[i].job_id = std::to_string(100 + i);
  sweep::write_manifest(s);
  ::setenv("HPCBENCH_SQUEUE", squeue.c_str(), 1);
  ::setenv("HPCBENCH_SQUEUE_TIMEOUT", "0.5", 1);
  auto t0 = std::chrono::steady_clock::now();
  auto rows = sweep::unfinished_jobs(sweep::read_manifest(s.dir));
  auto took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  CHECK(took < 10);  // one 0.5 s limit, not three squeues of 60 s
  CHECK(calls(log) == 1);
  REQUIRE(rows.size() == 3);
  for (auto& r : rows) CHECK(r.status == "pending");  // unknown: no log yet, so maybe still waiting
  // squeue answering garbage is no answer either.
  script(squeue, "head -c 100 /dev/urandom");
  auto back = sweep::read_manifest(s.dir);
  CHECK(sweep::job_progress(back, back.jobs[0]) == "unknown");
  ::setenv("HPCBENCH_SQUEUE_TIMEOUT", "soon", 1);
  CHECK_THROWS_WITH(sweep::job_progress(back, back.jobs[0]), Catch::Contains("HPCBENCH_SQUEUE_TIMEOUT='soon'"));
  ::unsetenv("HPCBENCH_SQUEUE");
  ::unsetenv("HPCBENCH_SQUEUE_TIMEOUT");
}

TEST_CASE("SIGTERM ends `report` and `sweep --resume` waiting on a stuck squeue, said as such", "[sweep]") {
  test::TempDir tmp;
  auto squeue = tmp.path / "squeue";
  auto pids_file = (tmp.path / "pids").string();
  script(squeue, "echo $$ >> " + pids_file + "\nsleep 300");
  auto s = small_sweep(tmp.path / "s");
  for (size_t i = 0; i < s.jobs.size(); ++i) s.jobs[i].job_id = std::to_string(100 + i);
  sweep::write_manifest(s);
  int started = 0;
  for (std::string args : {"report " + s.dir.string(), "sweep --resume --out " + s.dir.string()}) {
    INFO(args);
    ++started;
    // The signal is sent once the stuck squeue has written its pid, not after
    // a fixed sleep: on a loaded machine 1.5 s did not cover the binary's
    // start, and SIGTERM then killed it before its handler was installed.
    auto wait_for_squeue = fmt::format(
        "for i in $(seq 600); do [ \"$(wc -l < {} 2>/dev/null || echo 0)\" -ge {} ] && break; sleep 0.1; done",
        pids_file, started);
    auto t0 = std::chrono::steady_clock::now();
    auto r = test::run_command("HPCBENCH_SQUEUE=" + squeue.string() + " " + test::hpcbench_bin().string() + " " +
                               args + " 2>&1 & pid=$!; " + wait_for_squeue + "; kill -TERM $pid; wait $pid; echo rc=$?");
    auto took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    INFO(r.output);
    CHECK(took < 120);  // the squeue sleeps 300 s: only the signal ends it sooner
    CHECK_THAT(r.output, Catch::Contains("interrupted by SIGTERM while waiting for '" + squeue.string() + "'") &&
                             Catch::Contains("rc=143"));
  }
  // The squeue each left behind is gone with its process group (dead, or a
  // zombie its new parent has yet to reap).
  auto pids = test::lines_of(test::slurp(tmp.path / "pids"));
  CHECK(pids.size() == 2);
  for (auto& pid : pids) {
    auto state = test::run_command("ps -o stat= -p " + pid).output;
    CHECK((state.empty() || state[0] == 'Z'));
  }
}
