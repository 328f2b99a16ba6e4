// What the TensorBoard log costs the training loop per optimizer step: the
// trainer's RunLog::step (building and framing the step's event, and the
// peak-memory read it passes in) against a bert-tiny CPU step, whose median
// step time comes from a run's run.json. The writes to the file happen on the
// writer's thread, flushed every 50 ms here (every 2 s in runs) so that
// their cost is in the measurement too.
// Usage: bench_tensorboard [run.json] [steps]
#include <nlohmann/json.hpp>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/atomic_file.h"
#include "tensorboard/event_writer.h"
#include "tensorboard/run_log.h"

namespace fs = std::filesystem;

int main(int argc, char** argv) {
  double step_ms = 0;
  if (argc > 1) {
    std::ifstream in(argv[1]);
    if (!in) {
      std::fprintf(stderr, "bench_tensorboard: cannot read %s\n", argv[1]);
      return 2;
    }
    step_ms = nlohmann::json::parse(in)["result"]["step_ms_median"].get<double>();
  }
  const int steps = argc > 2 ? std::atoi(argv[2]) : 20000;
  if (!hpcbench::tensorboard::available()) {
    std::fprintf(stderr, "bench_tensorboard: built without the TensorBoard writer\n");
    return 2;
  }
  auto dir = fs::temp_directory_path() / ("bench-tensorboard-" + std::to_string(::getpid()));
  std::vector<double> per_step_us;
  {
    hpcbench::tensorboard::RunLog log({.dir = dir, .global_batch = 32, .settings = {{"train.lr", "5e-05"}}, .sampler = nullptr,
                                       .host = "", .several_nodes = false,
                                       .flush_secs = 0.05});
    const int batch = 1000;
    for (int b = 0; b < steps / batch; ++b) {
      auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < batch; ++i) {
        int64_t s = int64_t(b) * batch + i + 1;
        rusage ru{};
        ::getrusage(RUSAGE_SELF, &ru);
        log.step({s, 5.9 - 1e-5 * double(s), 5e-5, 1.3, 12.5, 0.4, 0.1, int64_t(ru.ru_maxrss) * 1024});
      }
      per_step_us.push_back(
          std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / batch);
    }
  }
  uintmax_t bytes = 0;
  for (auto& e : fs::directory_iterator(dir)) bytes += fs::file_size(e.path());
  hpcbench::remove_tree(dir);
  std::sort(per_step_us.begin(), per_step_us.end());
  double median = per_step_us[per_step_us.size() / 2];
  std::printf("RunLog::step: median %.2f us per step over %d steps (%.0f bytes per step in the file)", median, steps,
              double(bytes) / steps);
  if (step_ms > 0)
    std::printf("; bert-tiny CPU step %.2f ms (run.json): %.4f%% of a step", step_ms, 100 * median / (1000 * step_ms));
  std::printf("\n");
}
