#pragma once
// The one-device run a prediction starts from: a run folder (summary.csv /
// run.json) with its phase medians, or a published row of
// results/reference/ that gives throughput only.
#include <string>

#include "predict/collective.h"
#include "predict/step_model.h"

namespace hpcbench::results {
struct RunResult;
}

namespace hpcbench::predict {

// The run must have status ok and finite, non-negative phase times and
// throughput.
// `row`: the run_id to take from a file of several rows ("" when it holds
// one). Throws UserError naming the path, the row, the missing figure.
// `model_path` receives the model the run trained (a preset name or a
// config.json path, from run.json's config when present).
Baseline read_baseline(const std::string& path, const std::string& row, std::string* model_path);

// The same from a row already read; `where` names it in errors.
Baseline baseline_from_result(const results::RunResult& row, const std::string& where);

// "cuda", "cpu" or "" from a run's device ("cuda:1" -> "cuda").
std::string device_kind(const std::string& device);

// Whether `base` was measured on the device `system` describes. A CPU
// baseline scaled with a GPU system (or the other way round) throws
// UserError naming both, unless `allow_mismatch`; then, like a different
// GPU model or an unknown device, it returns the warning to print ("" when
// they agree).
std::string check_device(const Baseline& base, const System& system, bool allow_mismatch);

// Bytes of a gathered parameter under a precision: 2 for fp16/bf16, else 4.
int compute_bytes(const std::string& precision);

// The nodes and devices a measured row ran on, and the step options that
// predict it on `base`'s precision and the row's own engine (its weights
// resident or not): what the report's predicted-beside-measured columns and
// the efficiency split both replay.
Shape shape_of(const results::RunResult& row);
StepOptions step_options_of(const results::RunResult& row, const Baseline& base);

// The step options of a step on `precision` and `engine`: gathered
// parameters and reductions in the compute dtype; under resident weights
// (--fused bf16) compute-dtype gradients, which ddp's buckets take, and the
// replicas' 16 bytes a parameter. step_options_of and `plan` both take them
// from here, so that plan prunes by the memory predict reports.
StepOptions engine_step_options(const std::string& precision, const EnginePolicy& engine);

// The engine a run record names (EnginePolicy::recorded).
EnginePolicy recorded_engine(const results::RunResult& row);

// Why `choice` cannot be predicted from `base` ("" when it can): the
// baseline's compute times are its engine's (the fused kernels, a captured
// step), so a strategy that cannot run that engine would be credited with
// kernels it does not run. The reason is the strategy's own (its spec's
// engine()).
std::string engine_refusal(const Baseline& base, const strategies::Choice& choice);

// The memory model predict applies after the baseline's engine, in words:
// what a replica holds a parameter, and beside it what the baseline measured
// against what the model says for it (`parameters`: the model's).
std::string memory_model_text(const Baseline& base, int64_t parameters);

}  // namespace hpcbench::predict
