// The sampler: NVML values through a scripted fake libnvidia-ml.so.1 reach
// the samples, the CSV and the summaries exactly; /proc sees ranks' process
// trees go busy and idle; samples carry the step they were taken in.
#include "test_catch.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <thread>

#include <fmt/format.h>

#include "monitor/sampler.h"
#include "results/utilisation_csv.h"
#include "test_env.h"

using namespace hpcbench;
using namespace std::chrono_literals;

namespace {

// Points the sampler at the fake NVML with `script`.
struct FakeNvml {
  test::TempDir dir;
  explicit FakeNvml(const std::string& script) {
    auto path = dir.path / "script.txt";
    std::ofstream(path) << script;
    ::setenv("FAKE_NVML_SCRIPT", path.c_str(), 1);
    ::setenv("HPCBENCH_NVML_LIBRARY", HPCBENCH_FAKE_NVML, 1);
  }
  ~FakeNvml() {
    ::unsetenv("FAKE_NVML_SCRIPT");
    ::unsetenv("HPCBENCH_NVML_LIBRARY");
  }
};

// A clock that returns the given times, one a call.
std::function<double()> scripted_clock(std::vector<double> times) {
  auto state = std::make_shared<std::pair<std::vector<double>, size_t>>(std::move(times), 0);
  return [state] { return state->first.at(std::min(state->second++, state->first.size() - 1)); };
}

const char* kScript = R"(count 2
0 util 10 20 30 40 50
0 mem 1000 5000 3000 2000 2500
0 power 100000 200000 300000 250000 150000
0 clock 1410 1410 1200 1410 1410
0 temp 40 41 42 43 44
0 throttle 0 4 4 0 0
0 energy 1000000 1100000 1350000 1600000 1800000
1 util 90 E999 70 60 E15
1 mem 7000 7000 8000
1 power 50000 60000 70000 80000
1 clock 1000
1 temp 30
1 throttle E3
1 energy E3
)";

}  // namespace

TEST_CASE("NVML's scripted values reach the samples, utilisation.csv and the summaries exactly") {
  FakeNvml fake(kScript);
  monitor::SamplerOptions o;
  o.interval_ms = 0;  // samples taken by hand below
  o.clock = scripted_clock({100, 100, 101, 102.5, 103, 105});
  monitor::Sampler s(o);
  REQUIRE(s.gpu_sampling());
  CHECK(s.gpu_note().empty());
  for (int64_t step : {int64_t(0), int64_t(1), int64_t(2), int64_t(3), monitor::kDone}) {
    s.set_step(step);
    s.sample_now();
  }
  auto samples = s.samples();
  // GPU 1 answers NVML_ERROR_GPU_IS_LOST at its fifth reading: no row, and
  // no reading after.
  CHECK(samples.size() == 9);
  CHECK(results::utilisation_header() ==
        "host,time_s,step,phase,kind,index,util_percent,memory_bytes,power_w,sm_clock_mhz,temperature_c,"
        "throttle_reasons,energy_mj,bus_id\n");
  // No rank's bus id given: every GPU, each row with its (the fake's default) bus id.
  CHECK(s.gpu_selection().all);
  CHECK(s.gpu_bus_ids() == std::map<int, std::string>{{0, "0000:01:00.0"}, {1, "0000:02:00.0"}});
  CHECK(monitor::csv_rows(samples, "n1", 1, s.gpu_bus_ids()) ==
        "n1,0.000,0,setup,gpu,0,10,1000,100,1410,40,0x0,1000000,0000:01:00.0\n"
        "n1,0.000,0,setup,gpu,1,90,7000,50,1000,30,,,0000:02:00.0\n"
        "n1,1.000,1,warmup,gpu,0,20,5000,200,1410,41,0x4,1100000,0000:01:00.0\n"
        "n1,1.000,1,warmup,gpu,1,,7000,60,1000,30,,,0000:02:00.0\n"
        "n1,2.500,2,timed,gpu,0,30,3000,300,1200,42,0x4,1350000,0000:01:00.0\n"
        "n1,2.500,2,timed,gpu,1,70,8000,70,1000,30,,,0000:02:00.0\n"
        "n1,3.000,3,timed,gpu,0,40,2000,250,1410,43,0x0,1600000,0000:01:00.0\n"
        "n1,3.000,3,timed,gpu,1,60,8000,80,1000,30,,,0000:02:00.0\n"
        "n1,5.000,-2,end,gpu,0,50,2500,150,1410,44,0x0,1800000,0000:01:00.0\n");

  // Timed steps 2..3. GPU 0: counter 1600000 - 1350000 mJ = 250 J, mean
  // power (300 + 250) / 2 W. GPU 1 has no counter: its power integral over
  // 2.5 s .. 3 s, (70 + 80) / 2 W * 0.5 s = 37.5 J, mean power 75 W.
  auto sum = monitor::summarize(samples, 2, 3);
  CHECK(sum.util_of == "gpu");
  CHECK(sum.util_mean_percent == Approx((30 + 40 + 70 + 60) / 4.0));
  CHECK(sum.util_samples == 4);
  CHECK(sum.power_mean_w == Approx(275 + 75));
  CHECK(sum.energy_j == Approx(250 + 37.5));
  CHECK(sum.energy_method == "power_integral");
  CHECK(sum.nvml_peak_memory_bytes == 8000);

  // Step 2 alone: GPU 0's counter over one sample is no interval (0 J by
  // the integral of one point), so the window needs two samples a GPU.
  auto one = monitor::summarize(samples, 2, 2);
  CHECK(one.energy_j == Approx(0));
  // Step 1..3 on GPU 0 alone has its counter on every sample.
  std::vector<monitor::Sample> gpu0;
  for (auto& x : samples)
    if (x.index == 0) gpu0.push_back(x);
  auto c = monitor::summarize(gpu0, 1, 3);
  CHECK(c.energy_method == "counter");
  CHECK(c.energy_j == Approx((1600000 - 1100000) / 1000.0));
}

TEST_CASE("PCI bus ids compare equal in CUDA's form and NVML's") {
  CHECK(monitor::normalise_bus_id("00000000:1B:00.0") == "0000:1B:00.0");  // NVML: eight domain digits
  CHECK(monitor::normalise_bus_id("0000:1b:00.0") == "0000:1B:00.0");      // lower case
  CHECK(monitor::normalise_bus_id("0000:1B:00.0") == "0000:1B:00.0");      // CUDA's
  CHECK(monitor::normalise_bus_id("00010000:C1:1F.7") == "10000:C1:1F.7");  // a domain past 16 bits stays whole
  for (auto* bad : {"", "GPU-1234", "0000:1B:00", "0000:1B:00.0 ", "0000:1B:20.0", "0000:100:00.0", "x0000:1B:00.0"}) {
    INFO(bad);
    CHECK(monitor::normalise_bus_id(bad).empty());
  }
}

TEST_CASE("the node's ranks' GPUs are selected by bus id; unknown ones fall back to every GPU, saying why") {
  std::vector<std::string> nvml;
  for (int i = 0; i < 8; ++i) nvml.push_back(fmt::format("00000000:{:02X}:00.0", 0x18 + 0x10 * i));
  // Two ranks on GPUs 5 and 2 (CUDA's form, rank order not NVML's).
  auto sel = monitor::select_gpus(nvml, {"0000:68:00.0", "0000:38:00.0"});
  CHECK_FALSE(sel.all);
  CHECK(sel.indices == std::vector<unsigned>{2, 5});
  CHECK(sel.note.empty());
  // Two ranks sharing a GPU select it once.
  CHECK(monitor::select_gpus(nvml, {"0000:38:00.0", "0000:38:00.0"}).indices == std::vector<unsigned>{2});
  // NVML cannot say for a GPU no rank uses: no matter.
  auto unknown_other = nvml;
  unknown_other[7] = "";
  CHECK(monitor::select_gpus(unknown_other, {"0000:38:00.0"}).indices == std::vector<unsigned>{2});

  const std::vector<unsigned> every{0, 1, 2, 3, 4, 5, 6, 7};
  // A rank without a bus id (CPU, or the driver could not say).
  sel = monitor::select_gpus(nvml, {"0000:38:00.0", ""});
  CHECK(sel.all);
  CHECK(sel.indices == every);
  CHECK(sel.note.find("not known") != std::string::npos);
  sel = monitor::select_gpus(nvml, {});
  CHECK(sel.all);
  CHECK(sel.indices == every);
  // A rank's GPU NVML does not show (or cannot name).
  sel = monitor::select_gpus(nvml, {"0000:38:00.0", "0000:FF:00.0"});
  CHECK(sel.all);
  CHECK(sel.indices == every);
  CHECK(sel.note.find("0000:FF:00.0") != std::string::npos);
  auto unknown_mine = nvml;
  unknown_mine[2] = "";
  CHECK(monitor::select_gpus(unknown_mine, {"0000:38:00.0"}).all);
}

TEST_CASE("on a shared 8-GPU node only the job's 2 GPUs are sampled and summed") {
  // GPU g: utilisation g^2 %, power 100 (g + 1) W, its energy counter
  // growing by 1000 (g + 1) J a reading.
  std::string script = "count 8\n";
  for (int g = 0; g < 8; ++g) {
    script += fmt::format("pci {} 00000000:{:02X}:00.0\n", g, 0x18 + 0x10 * g);
    script += fmt::format("{} util {}\n{} power {}\n{} mem {}\n", g, g * g, g, 100000 * (g + 1), g, 1000 * (g + 1));
    script += fmt::format("{} energy", g);
    for (int k = 0; k < 4; ++k) script += fmt::format(" {}", 1000000ULL * (g + 1) * (k + 1));
    script += "\n";
  }
  FakeNvml fake(script);
  auto sampled = [](std::vector<std::string> bus_ids) {
    monitor::SamplerOptions o;
    o.interval_ms = 0;
    o.clock = scripted_clock({0, 0, 1, 2, 3});
    o.bus_ids = std::move(bus_ids);
    auto s = std::make_unique<monitor::Sampler>(o);
    for (int64_t step : {1, 2, 3, 4}) {
      s->set_step(step);
      s->sample_now();
    }
    return s;
  };
  // Ranks bound to GPUs 2 and 5, their bus ids as CUDA writes them.
  auto s = sampled({"0000:38:00.0", "0000:68:00.0"});
  REQUIRE(s->gpu_sampling());
  CHECK_FALSE(s->gpu_selection().all);
  CHECK(s->gpu_bus_ids() == std::map<int, std::string>{{2, "0000:38:00.0"}, {5, "0000:68:00.0"}});
  auto samples = s->samples();
  REQUIRE(samples.size() == 8);
  for (auto& x : samples) CHECK((x.index == 2 || x.index == 5));
  auto sum = monitor::summarize(samples, 1, 4);
  CHECK(sum.util_mean_percent == Approx((4 + 25) / 2.0));
  CHECK(sum.power_mean_w == Approx(300 + 600));
  CHECK(sum.energy_method == "counter");
  CHECK(sum.energy_j == Approx(3 * 1000 * (3 + 6)));  // 3 intervals of each GPU's counter
  CHECK(sum.nvml_peak_memory_bytes == 6000);
  auto csv = monitor::csv_rows(samples, "n1", 0, s->gpu_bus_ids());
  CHECK(csv.find(",0000:38:00.0\n") != std::string::npos);
  CHECK(csv.find(",0000:68:00.0\n") != std::string::npos);

  // No bus id known for a rank: every GPU, as before, and said.
  auto all = sampled({"0000:38:00.0", ""});
  CHECK(all->gpu_selection().all);
  CHECK(all->gpu_bus_ids().size() == 8);
  auto every = monitor::summarize(all->samples(), 1, 4);
  CHECK(every.power_mean_w == Approx(100 * (1 + 2 + 3 + 4 + 5 + 6 + 7 + 8)));
  CHECK(every.util_mean_percent == Approx(140 / 8.0));
}

TEST_CASE("injected bus_ids give each local rank a bus id in place of the device's") {
  ::unsetenv("HPCBENCH_INJECT");
  CHECK(monitor::rank_bus_id("0000:1B:00.0", 1) == "0000:1B:00.0");
  CHECK(monitor::rank_bus_id("", 0).empty());
  ::setenv("HPCBENCH_INJECT", "bus_ids=0000:38:00.0,0000:68:00.0", 1);
  CHECK(monitor::rank_bus_id("", 0) == "0000:38:00.0");
  CHECK(monitor::rank_bus_id("0000:1B:00.0", 1) == "0000:68:00.0");
  CHECK(monitor::rank_bus_id("", 2).empty());
  ::unsetenv("HPCBENCH_INJECT");
}

TEST_CASE("nodes' summaries combine: utilisation weighted by samples, power and energy added, memory the largest") {
  monitor::Summary a{"gpu", 50, 10, 300, 1000, "counter", 5000};
  monitor::Summary b{"gpu", 80, 30, 200, 500, "counter", 9000};
  auto j = monitor::combine({a, b});
  CHECK(j.util_of == "gpu");
  CHECK(j.util_mean_percent == Approx((50 * 10 + 80 * 30) / 40.0));
  CHECK(j.power_mean_w == Approx(500));
  CHECK(j.energy_j == Approx(1500));
  CHECK(j.energy_method == "counter");
  CHECK(j.nvml_peak_memory_bytes == 9000);
  b.energy_method = "power_integral";
  CHECK(monitor::combine({a, b}).energy_method == "power_integral");
  auto none = monitor::combine({monitor::Summary{}});
  CHECK(none.util_mean_percent == -1);
  CHECK(none.energy_j == -1);
}

TEST_CASE("without NVML, or with NVML failing to start, GPU sampling is off and says why") {
  ::setenv("HPCBENCH_NVML_LIBRARY", "/nonexistent/libnvidia-ml.so.1", 1);
  monitor::SamplerOptions manual;
  manual.interval_ms = 0;
  {
    monitor::Sampler s(manual);
    CHECK_FALSE(s.gpu_sampling());
    CHECK(s.gpu_note().find("/nonexistent/libnvidia-ml.so.1 not loadable") != std::string::npos);
    s.sample_now();
    CHECK(s.samples().empty());
  }
  ::unsetenv("HPCBENCH_NVML_LIBRARY");
  FakeNvml fake("init 9\ncount 1\n0 util 5\n");
  monitor::Sampler s(manual);
  CHECK_FALSE(s.gpu_sampling());
  CHECK(s.gpu_note() == "nvmlInit failed: fake NVML error 9");
}

namespace {

// A process that computes for `busy` then sleeps for `idle`, or the other way
// round; with `via_child` the computing is done by a child of it, so that
// only the process tree shows it.
pid_t fake_rank(bool busy_first, std::chrono::milliseconds phase, bool via_child) {
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  auto spin = [](std::chrono::milliseconds d) {
    auto end = std::chrono::steady_clock::now() + d;
    volatile uint64_t x = 0;
    while (std::chrono::steady_clock::now() < end) x = x + 1;
  };
  auto work = [&] {
    if (busy_first) {
      spin(phase);
      std::this_thread::sleep_for(phase);
    } else {
      std::this_thread::sleep_for(phase);
      spin(phase);
    }
  };
  if (via_child) {
    if (pid_t c = ::fork(); c == 0) {
      work();
      ::_exit(0);
    } else {
      ::waitpid(c, nullptr, 0);
    }
  } else {
    work();
  }
  ::_exit(0);
}

}  // namespace

TEST_CASE("/proc: a rank's process tree reads busy where it computes and idle where it sleeps") {
  const auto phase = 1000ms;
  monitor::SamplerOptions o;
  o.interval_ms = 50;
  o.gpus = false;
  // Rank 0 computes (in a child) then sleeps; rank 1 sleeps then computes.
  pid_t r0 = fake_rank(true, phase, true);
  pid_t r1 = fake_rank(false, phase, false);
  o.ranks = {{0, r0}, {1, r1}};
  monitor::Sampler s(o);
  s.set_step(1);
  s.start();
  std::this_thread::sleep_for(phase);
  s.set_step(2);
  ::waitpid(r0, nullptr, 0);
  ::waitpid(r1, nullptr, 0);
  s.stop();
  // Each half's mean, leaving out each half's first reading (it spans the
  // switch) and readings after a rank ended.
  double sum[2][3] = {}, n[2][3] = {};
  int64_t prev_step[2] = {0, 0};
  int64_t max_rss[2] = {0, 0};
  for (auto& x : s.samples()) {
    REQUIRE(!x.gpu);
    bool first = x.step != prev_step[x.index];
    prev_step[x.index] = x.step;
    if (first || !x.util_percent) continue;
    sum[x.index][x.step] += *x.util_percent;
    n[x.index][x.step] += 1;
    max_rss[x.index] = std::max(max_rss[x.index], *x.memory_bytes);
  }
  CHECK(max_rss[0] > 0);  // an ended rank, not yet reaped, reads 0
  CHECK(max_rss[1] > 0);
  for (int r : {0, 1})
    for (int st : {1, 2}) REQUIRE(n[r][st] >= 5);
  double busy0 = sum[0][1] / n[0][1], idle0 = sum[0][2] / n[0][2];
  double idle1 = sum[1][1] / n[1][1], busy1 = sum[1][2] / n[1][2];
  INFO("rank 0 busy " << busy0 << "% idle " << idle0 << "%; rank 1 idle " << idle1 << "% busy " << busy1 << "%");
  // One core computing is 100%; a shared, loaded machine gives it less (35%
  // seen with four builds beside it), so the bound is loose, while sleeping
  // reads close to 0 whatever the load.
  CHECK(busy0 > 10);
  CHECK(busy1 > 10);
  CHECK(idle0 < busy0 / 4);
  CHECK(idle1 < busy1 / 4);
}

TEST_CASE("each sample carries the step that was running when it was taken") {
  monitor::SamplerOptions o;
  o.interval_ms = 5;
  o.gpus = false;
  o.ranks = {{0, ::getpid()}};
  auto clock = [] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  };
  o.clock = clock;
  double t0 = clock();
  monitor::Sampler s(o);
  std::vector<double> switched{0};  // switched[k]: when step k began, seconds after t0
  s.start();
  for (int64_t step = 1; step <= 6; ++step) {
    switched.push_back(clock() - t0);
    s.set_step(step);
    std::this_thread::sleep_for(40ms);
  }
  switched.push_back(clock() - t0);
  s.set_step(monitor::kDone);
  s.stop();
  auto samples = s.samples();
  REQUIRE(samples.size() > 20);
  int64_t last = 0;
  const double slack = 0.002;  // the sampler reads the clock, then the step
  for (auto& x : samples) {
    if (x.step < 1) continue;
    CHECK(x.step >= last);  // never back in time
    last = x.step;
    // The sample's time lies inside its step (its clock started at most a
    // moment after t0).
    CHECK(x.time_s >= switched[size_t(x.step)] - slack - 0.001);
    CHECK(x.time_s <= switched[size_t(x.step) + 1] + slack);
  }
  CHECK(last == 6);
}
