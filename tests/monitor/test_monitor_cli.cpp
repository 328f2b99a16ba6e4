// The sampler in real runs of the binary: utilisation.csv's rows carry their
// step, the summaries in run.json are the means and differences of those
// rows, the fake NVML's scripted values come through unchanged, a missing
// NVML is said once, and a failing rank ends the job without the sampler
// thread getting in the way.
#include "test_catch.h"
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <sstream>

#include "core/atomic_file.h"
#include "read_whole_file.h"
#include "results/csv.h"
#include "test_env.h"

using namespace hpcbench;
namespace fs = std::filesystem;

namespace {

std::string bin() { return test::hpcbench_bin().string(); }

// A short CPU training: 6 steps, the first 2 timing warm-up.
std::string run_args(const fs::path& results, const std::string& name) {
  return " run --device cpu --threads 1 --max-steps 6 --timing-warmup-steps 2 --synthetic-samples 64 "
         "--batch-size 4 --max-seq-length 64 --log-every 100 --run-name " + name + " --results-dir " +
         results.string();
}

using Row = std::map<std::string, std::string>;
// RFC 4180 through the results library's own reader: summary.csv's
// engine_reason holds commas, quoted.
std::vector<Row> read_csv(const fs::path& path) {
  auto records = results::parse_csv(read_file(path));
  std::vector<Row> rows;
  if (records.empty()) return rows;
  const auto& header = records.front();
  for (size_t k = 1; k < records.size(); ++k) {
    REQUIRE(records[k].size() == header.size());
    Row r;
    for (size_t i = 0; i < header.size(); ++i) r[header[i]] = records[k][i];
    rows.push_back(r);
  }
  return rows;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("a CPU run samples its process tree: rows by step, the summary their timed mean") {
  test::TempDir dir;
  auto results = dir.path / "results";
  auto r = test::run_command(bin() + run_args(results, "cpu") + " --sample-ms 10 --doc-stride 16 --max-query-length 24 --eval-data " +
                             test::squad_file("dev-v1.1-sample.json") + " --vocab " + test::vocab_file() +
                             " --cache-dir none");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("GPU sampling off") == std::string::npos);  // not asked for on CPU
  auto rows = read_csv(results / "cpu" / "utilisation.csv");
  REQUIRE(rows.size() > 5);
  double sum = 0;
  int n = 0;
  int64_t last_step = 0;
  std::map<std::string, int> phases;
  for (auto& row : rows) {
    CHECK(row["kind"] == "cpu");
    CHECK(row["index"] == "0");
    CHECK(std::stoll(row["memory_bytes"]) > 0);
    int64_t step = std::stoll(row["step"]);
    ++phases[row["phase"]];
    // Training steps only go forward; evaluation (-1) and the end (-2) follow.
    if (step > 0) {
      CHECK(step >= last_step);
      CHECK(last_step >= 0);
      last_step = step;
      CHECK(row["phase"] == (step <= 2 ? "warmup" : "timed"));
    } else if (step < 0) {
      last_step = -1;
    }
    if (row["phase"] == "timed" && !row["util_percent"].empty()) sum += std::stod(row["util_percent"]), ++n;
  }
  CHECK(phases["timed"] >= 2);  // the timed window's two boundary samples at least
  CHECK(phases["evaluation"] >= 1);
  auto j = nlohmann::json::parse(read_file(results / "cpu" / "run.json"));
  auto& res = j["result"];
  REQUIRE(n > 0);
  CHECK(res["utilisation_of"] == "cpu");
  CHECK(res["utilisation_mean_percent"].get<double>() == Approx(sum / n).epsilon(1e-4));
  CHECK(res["energy_j"].get<double>() == -1);
  CHECK(res["samples_per_kj"].get<double>() == -1);
  CHECK(j["monitor"]["sample_ms"] == 10);
  // summary.csv carries the same columns.
  auto summary = read_csv(results / "cpu" / "summary.csv");
  REQUIRE(summary.size() == 1);
  CHECK(std::stod(summary[0]["utilisation_mean_percent"]) == Approx(sum / n).epsilon(1e-4));

  // The report: the utilisation columns, and the run's plot over time.
  auto out = dir.path / "report";
  r = test::run_command(bin() + " report " + results.string() + " --out " + out.string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  auto report_rows = read_csv(out / "report.csv");
  REQUIRE(report_rows.size() == 1);
  CHECK(report_rows[0]["utilisation_of"] == "cpu");
  CHECK(std::stod(report_rows[0]["utilisation_mean_percent"]) == Approx(sum / n).epsilon(1e-4));
  CHECK(fs::exists(out / "utilisation-cpu.gp"));
  if (r.output.find("gnuplot is not installed") == std::string::npos) {
    CHECK(fs::exists(out / "utilisation-cpu.svg"));
    CHECK(read_file(out / "report.md").find("utilisation-cpu.svg") != std::string::npos);
  }
}

TEST_CASE("with the fake NVML the run's GPU rows and summaries are exactly the scripted values") {
  test::TempDir dir;
  auto results = dir.path / "results";
  // GPU 0 answers every call with the next value of long scripts; GPU 1 is
  // lost at its 4th reading.
  std::string util = "0 util", power = "0 power", energy = "0 energy", mem = "0 mem";
  const int kCalls = 3000;
  auto util_of = [](int k) { return (k * 7) % 101; };
  auto mw_of = [](int k) { return 100000 + (k % 13) * 1000; };
  auto mj_of = [](int k) { return 1000000LL + 50000LL * k + (k % 3) * 7; };
  for (int k = 0; k < kCalls; ++k) {
    util.append(" ").append(std::to_string(util_of(k)));
    power.append(" ").append(std::to_string(mw_of(k)));
    energy.append(" ").append(std::to_string(mj_of(k)));
    mem.append(" ").append(std::to_string(1000 + k % 17));
  }
  auto script = dir.path / "nvml.txt";
  write_file_atomic(script, "count 2\n" + util + "\n" + power + "\n" + energy + "\n" + mem +
                                "\n0 clock 1410\n0 temp 50\n0 throttle 4\n1 util 11 22 33 E15\n1 power 70000\n");
  auto r = test::run_command("FAKE_NVML_SCRIPT=" + script.string() + " HPCBENCH_NVML_LIBRARY=" + HPCBENCH_FAKE_NVML +
                             " " + bin() + run_args(results, "gpu") + " --sample-ms 10");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(count(r.output, "GPU 1 no longer answers NVML") == 1);
  auto rows = read_csv(results / "gpu" / "utilisation.csv");
  int k0 = 0, k1 = 0;
  double util_sum = 0, power_sum = 0;
  int util_n = 0;
  int64_t first_mj = -1, last_mj = -1;
  // The scripted memory cycles through 1000..1016 B; how far it got depends on how many
  // readings the run lasted (fewer than 17 when the machine is idle and the run short).
  int64_t peak_memory = 0;
  for (auto& row : rows) {
    if (row["kind"] != "gpu") continue;
    if (row["index"] == "0") {
      REQUIRE(k0 < kCalls);
      CHECK(std::stoi(row["util_percent"]) == util_of(k0));
      CHECK(std::stod(row["power_w"]) == Approx(mw_of(k0) / 1000.0));
      CHECK(std::stoll(row["energy_mj"]) == mj_of(k0));
      CHECK(std::stoll(row["memory_bytes"]) == 1000 + k0 % 17);
      peak_memory = std::max<int64_t>(peak_memory, 1000 + k0 % 17);
      CHECK(row["sm_clock_mhz"] == "1410");
      CHECK(row["temperature_c"] == "50");
      CHECK(row["throttle_reasons"] == "0x4");
      if (row["phase"] == "timed") {
        util_sum += util_of(k0), ++util_n, power_sum += mw_of(k0) / 1000.0;
        if (first_mj < 0) first_mj = mj_of(k0);
        last_mj = mj_of(k0);
      }
      ++k0;
    } else {
      CHECK(row["util_percent"] == std::to_string(11 * (k1 + 1)));
      CHECK(row["energy_mj"].empty());  // not scripted: NVML_ERROR_NOT_SUPPORTED
      if (row["phase"] == "timed") util_sum += 11 * (k1 + 1), ++util_n;
      ++k1;
    }
  }
  CHECK(k1 == 3);
  REQUIRE(util_n >= 2);
  auto j = nlohmann::json::parse(read_file(results / "gpu" / "run.json"));
  auto& res = j["result"];
  CHECK(res["utilisation_of"] == "gpu");
  CHECK(res["utilisation_mean_percent"].get<double>() == Approx(util_sum / util_n));
  // GPU 1 is gone before the timed steps (3 readings at 10 ms), so the
  // energy is GPU 0's counter alone.
  CHECK(res["energy_method"] == "counter");
  double energy_j = (last_mj - first_mj) / 1000.0;
  CHECK(res["energy_j"].get<double>() == Approx(energy_j));
  CHECK(res["samples_per_kj"].get<double>() == Approx(res["samples_timed"].get<double>() / (energy_j / 1000)));
  CHECK(res["nvml_peak_memory_bytes"].get<int64_t>() == peak_memory);
}

TEST_CASE("two ranks on a shared 8-GPU node: only their GPUs are sampled, summed and named") {
  test::TempDir dir;
  auto results = dir.path / "results";
  // GPU g: utilisation g^2 %, power 100 (g + 1) W, constant; its energy
  // counter growing by (g + 1) J a reading.
  std::string script = "count 8\n";
  for (int g = 0; g < 8; ++g) {
    script += "pci " + std::to_string(g) + " 00000000:" + "0123456789ABCDEF"[g + 1] + "8:00.0\n";
    script += std::to_string(g) + " util " + std::to_string(g * g) + "\n" + std::to_string(g) + " power " +
              std::to_string(100000 * (g + 1)) + "\n" + std::to_string(g) + " energy";
    for (int k = 0; k < 3000; ++k) (script += ' ') += std::to_string(1000LL * (g + 1) * (k + 1));
    script += "\n";
  }
  write_file_atomic(dir.path / "nvml.txt", script);
  // The ranks' GPUs 2 and 5, by local rank, in CUDA's form of the bus id.
  auto r = test::run_command("FAKE_NVML_SCRIPT=" + (dir.path / "nvml.txt").string() + " HPCBENCH_NVML_LIBRARY=" +
                             HPCBENCH_FAKE_NVML + " HPCBENCH_INJECT=bus_ids=0000:38:00.0,0000:68:00.0 " + bin() +
                             run_args(results, "shared") + " --strategy ddp --nproc-per-node 2 --sample-ms 10");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  std::map<std::string, std::pair<int64_t, int64_t>> timed_mj;  // bus id -> first, last counter
  for (auto& row : read_csv(results / "shared" / "utilisation.csv")) {
    if (row["kind"] != "gpu") continue;
    CHECK((row["index"] == "2" || row["index"] == "5"));
    CHECK(row["bus_id"] == (row["index"] == "2" ? "0000:38:00.0" : "0000:68:00.0"));
    if (row["phase"] != "timed") continue;
    auto& fl = timed_mj.try_emplace(row["bus_id"], std::stoll(row["energy_mj"]), 0).first->second;
    fl.second = std::stoll(row["energy_mj"]);
  }
  REQUIRE(timed_mj.size() == 2);
  auto j = nlohmann::json::parse(read_file(results / "shared" / "run.json"));
  auto& node = j["monitor"]["nodes"][0];
  CHECK(node["gpus_of"] == "job");
  CHECK(node["gpus"] == nlohmann::json::parse(R"([{"index":2,"bus_id":"0000:38:00.0"},{"index":5,"bus_id":"0000:68:00.0"}])"));
  auto& res = j["result"];
  CHECK(res["utilisation_of"] == "gpu");
  CHECK(res["utilisation_mean_percent"].get<double>() == Approx((4 + 25) / 2.0));
  CHECK(res["power_mean_w"].get<double>() == Approx(300 + 600));
  double energy_j = 0;
  for (auto& [bus, fl] : timed_mj) energy_j += (fl.second - fl.first) / 1000.0;
  CHECK(res["energy_j"].get<double>() == Approx(energy_j));

  // Without bus ids (a CPU run's ranks have none): every GPU, and said so.
  r = test::run_command("FAKE_NVML_SCRIPT=" + (dir.path / "nvml.txt").string() + " HPCBENCH_NVML_LIBRARY=" +
                        HPCBENCH_FAKE_NVML + " " + bin() + run_args(results, "node") + " --sample-ms 10");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  j = nlohmann::json::parse(read_file(results / "node" / "run.json"));
  CHECK(j["monitor"]["nodes"][0]["gpus_of"] == "node");
  CHECK(j["monitor"]["nodes"][0]["gpus"].size() == 8);
  CHECK(j["monitor"]["nodes"][0]["gpus_note"].get<std::string>().find("not known") != std::string::npos);
  CHECK(j["result"]["power_mean_w"].get<double>() == Approx(3600));
}

TEST_CASE("without libnvidia-ml the run goes on and says once that GPU sampling is off") {
  test::TempDir dir;
  auto results = dir.path / "results";
  auto r = test::run_command("HPCBENCH_NVML_LIBRARY=/nonexistent/libnvidia-ml.so.1 " + bin() +
                             run_args(results, "none") + " --sample-ms 10");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(count(r.output, "GPU sampling off") == 1);
  auto j = nlohmann::json::parse(read_file(results / "none" / "run.json"));
  CHECK(j["result"]["utilisation_of"] == "cpu");  // /proc still sampled
  CHECK(j["result"]["energy_j"].get<double>() == -1);

  // --sample-ms 0: no sampling, no file, the columns say "not sampled".
  r = test::run_command(bin() + run_args(results, "off") + " --sample-ms 0");
  REQUIRE(r.exit_code == 0);
  CHECK_FALSE(fs::exists(results / "off" / "utilisation.csv"));
  j = nlohmann::json::parse(read_file(results / "off" / "run.json"));
  CHECK(j["result"]["utilisation_mean_percent"].get<double>() == -1);
  CHECK(r.exit_code == 0);
  r = test::run_command(bin() + run_args(results, "neg") + " --sample-ms -5");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("--sample-ms -5") != std::string::npos);
}

TEST_CASE("a rank that hangs fails the job promptly; the sampling rank unwinds cleanly") {
  test::TempDir dir;
  auto results = dir.path / "results";
  auto t0 = std::chrono::steady_clock::now();
  auto r = test::run_command("HPCBENCH_INJECT=fault=1:2:hang " + bin() + run_args(results, "fault") +
                             " --strategy ddp --nproc-per-node 2 --sample-ms 5 --collective-timeout 3");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  INFO(r.output);
  CHECK(r.exit_code != 0);
  CHECK(seconds < 40);
  // Rank 0 (which samples) ends through its error, with its exit status,
  // not through std::terminate on a joinable sampler thread.
  CHECK(r.output.find("failed on rank 0 of 2") != std::string::npos);
  CHECK(r.output.find("rank 0 of 2") != std::string::npos);
  CHECK(r.output.find("exited with status 2") != std::string::npos);
  CHECK(r.output.find("terminate called") == std::string::npos);
  CHECK(r.output.find("killed by signal 6") == std::string::npos);
  CHECK(test::entries(results) == 0);
}
