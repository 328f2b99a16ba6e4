#pragma once
// `hpcbench plan`'s search: every layout of the job's space (space.h),
// pruned by memory first (memory.h), the survivors' steps predicted from the
// one-device baseline (lib/predict: each spec's schedule replayed on the
// network model), ranked by step time, with the calibration's interval and
// its ties (calibration.h). Torch-free: the model's layout comes in worked out
// (predict::model_layout).
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "plan/calibration.h"
#include "plan/engine_cost.h"
#include "plan/memory.h"
#include "plan/space.h"
#include "predict/collective.h"
#include "predict/step_model.h"

namespace hpcbench::plan {

struct Request {
  predict::Baseline base;
  const strategies::ModelLayout* layout = nullptr;
  strategies::ModelShape model;
  const predict::CommModel* comm = nullptr;
  strategies::Shape shape;
  int64_t global_batch = 0;
  double memory_limit = 0;     // bytes a rank may hold; 0: no limit
  std::string device_kind;     // "cuda" or "cpu": which calibration applies
  std::string device_name;     // the system file's device ("" when it does not say)
  double baseline_noise = 0;   // the baseline's step stddev / mean (0: not recorded)
  // The device's dense peak TFLOP/s by precision (train::peak_tflops; 0 or
  // absent: not known). Another precision than the baseline's is searched
  // where both rates are known, its compute scaled by their ratio.
  std::map<std::string, double> peak_tflops;
  // Recorded steps under each engine setting (engine_cost.h): where given,
  // the engine settings the device allows (engine_settings) are searched, a
  // layout under another engine than the baseline's priced by its recorded
  // ratio or refused by "the engine: no recorded ratio ..."; where null, the
  // engine stays the baseline's.
  const EngineSteps* engine_steps = nullptr;
  // --precisions: the precisions searched (empty: the baseline's and every
  // one the device's rates allow).
  std::vector<std::string> precisions;
};

// The precisions a search tries, each with "" or why it cannot: the
// baseline's always; fp32, tf32, bf16, fp16 where the device's peak rates
// for it and the baseline's are known and the baseline's engine keeps its
// weights as it did (--fused: bf16-resident under bf16 alone); of those, only
// the ones r.precisions lists where it lists any.
std::vector<std::pair<std::string, std::string>> precision_choices(const Request& r);

// The baseline at `precision`: forward and backward scaled by the peak
// rates' ratio (the optimizer and the rest as measured: fp32 masters and
// host work do not change), its engine's precision set.
predict::Baseline baseline_at(const Request& r, const std::string& precision);

// `b` on the engine `e`: every phase scaled by the recorded ratio `ratio`
// of e's step to b's engine's (the host time a graph removes and the kernels
// fusion cuts are spread over the step as its parts are, a simplification
// the recorded steps do not split further).
predict::Baseline baseline_on(const predict::Baseline& b, const EnginePolicy& e, double ratio);

// Where a layout's step goes beyond the ideal (the baseline's step for the
// global batch divided among the ranks), in seconds: these parts add up to
// the predicted step.
struct Parts {
  double ideal = 0;      // one device's step for the global batch / ranks, at the layout's precision
  double compute = 0;    // compute beyond its ideal share: model-parallel splits, recomputation, pipeline bubbles
  double optimizer = 0;  // optimizer beyond its share (replicated optimizers do not shrink)
  double data = 0;       // data and the rest of the step beyond their share
  double exposed = 0;    // communication the compute waited for
  std::string worst_collective;  // the collective with the most exposed time ("" when none)
};

struct Ranked {
  Candidate candidate;
  predict::Prediction prediction;
  MemoryUse memory;
  Interval step;    // the measured step the calibration allows, widened by the engine ratio's band
  EngineRatio engine;  // the step's ratio to the baseline's engine (1 under the baseline's)
  Parts parts;
  int rank = 0;       // 1 = fastest predicted
  int tie_group = 0;  // 1 = the layouts the calibration cannot order against the fastest
};

struct Result {
  std::vector<Ranked> ranked;  // fastest first
  Space space;                 // what was enumerated and refused (memory refusals included)
  Calibration calibration;
  double tie_threshold = 0;    // fraction
  // The engine changes no recorded ratio prices ("ddp bf16 graph"), whose
  // layouts were refused by "the engine: no recorded ratio".
  std::set<std::string> unpriced;
  double least_memory = 0;     // the smallest need of any layout the memory limit refused (bytes)
  double seconds = 0;          // the search's wall time
};

// The baseline scaled to `rows` sequences a micro-step (compute taken as
// linear in the rows, the optimizer as it is), with a recomputed forward in
// backward when `recompute`.
predict::Baseline scaled_baseline(const predict::Baseline& b, int64_t rows, bool recompute);

// `progress(done, total)` is called as layouts are predicted. Throws
// UserError naming --global-batch when no layout can take it, and
// --memory-limit when it is below every layout's need (saying the least).
Result search(const Request& r, const std::function<void(int64_t, int64_t)>& progress = {});

}  // namespace hpcbench::plan
