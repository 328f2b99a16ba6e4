#pragma once
// What a change of engine (--cuda-graph, --fused) does to a step, priced by
// recorded runs rather than modelled: the step-time ratio of one engine
// setting to another, measured on the same job (device, strategy, precision,
// micro-batch) and read from a file of recorded steps
// (results/reference/gpu/engine-ratios.csv). The graph's gain is host time it
// removes and fusion's is kernels it cuts; both depend on the batch and the
// strategy's own host work, so a ratio is used only where it was recorded
// (or between two recorded batches), never carried over to another
// strategy, precision or device.
#include <cstdint>
#include <string>
#include <vector>

#include "core/engine_policy.h"

namespace hpcbench::plan {

// One recorded step: the run's median and its steps' standard deviation.
struct EngineStep {
  std::string device_name, strategy, precision, engine;  // engine: EnginePolicy::name()
  int64_t batch = 0;
  double step_ms = 0, step_ms_stddev = 0;
  std::string run;  // the recorded run it came from
};

struct EngineSteps {
  std::string file;
  std::vector<EngineStep> rows;
};

// Throws UserError naming the file and line of a missing column, a bad
// number, an engine name EnginePolicy does not have.
EngineSteps read_engine_steps(const std::string& path);

// The step under `to` over the step under `from`, with the band its repeats
// allow: at a recorded batch, the ratio of the two sides' mean steps, from
// min(to) / max(from) to max(to) / min(from) over the repeats, where a side
// recorded once spans its run's step mean ± stddev instead. Between two
// recorded batches the three figures are interpolated linearly in
// log2(batch); outside them, or where a side is not recorded, `missing`
// says what was not ("ddp bf16 graph at batch 16 on NVIDIA H100 80GB HBM3").
struct EngineRatio {
  double ratio = 1, low = 1, high = 1;
  std::string missing;  // "" when priced
};

struct EngineKey {
  std::string device_name, strategy, precision;
  int64_t batch = 0;
};

EngineRatio engine_ratio(const EngineSteps& steps, const EngineKey& key, const std::string& from,
                         const std::string& to);

// The engine settings searched beside `base`: on a CUDA device every one of
// eager, graph, fused and graph+fused at `precision` (the fused model's
// weights as EnginePolicy::fused_weights says); elsewhere `base` alone (a
// CPU runs the graph-ready step uncaptured, and no CPU ratio is recorded).
std::vector<EnginePolicy> engine_settings(const EnginePolicy& base, const std::string& precision,
                                          const std::string& device_kind);

}  // namespace hpcbench::plan
