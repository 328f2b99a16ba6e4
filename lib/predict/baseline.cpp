#include "predict/baseline.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/error.h"
#include "core/printable.h"
#include "results/run_reader.h"

namespace hpcbench::predict {

namespace fs = std::filesystem;

std::string device_kind(const std::string& device) {
  auto kind = device.substr(0, device.find(':'));
  return kind == "cuda" || kind == "cpu" || kind.empty() ? kind : "cuda";  // hip, xpu...: accelerators
}

std::string check_device(const Baseline& base, const System& system, bool allow_mismatch) {
  auto kind = device_kind(base.device);
  auto what = [](const std::string& kind, const std::string& name) {
    return name.empty() ? kind : fmt::format("{} ({})", kind, name);
  };
  if (kind.empty())
    return fmt::format("the baseline {} does not say which device it ran on; its compute times are taken as {}'s",
                       base.source, what(system.device, system.device_name));
  if (kind != system.device) {
    auto why = fmt::format(
        "the baseline {} ran on {}, the system file {} describes {}: its compute times are not {}'s, so every "
        "speedup would scale the wrong device", base.source, what(kind, base.device_name), system.file,
        what(system.device, system.device_name), system.device_name.empty() ? system.device : system.device_name);
    if (!allow_mismatch)
      fail("{}. Measure the baseline on that device, or pass --allow-device-mismatch to predict anyway", why);
    return "DEVICE MISMATCH: " + why + " (--allow-device-mismatch)";
  }
  auto lower = [](std::string s) {
    for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
  };
  auto a = lower(base.device_name), b = lower(system.device_name);
  if (!a.empty() && !b.empty() && a.find(b) == std::string::npos && b.find(a) == std::string::npos)
    return fmt::format("the baseline ran on {}, the system file describes {}: compute times are the first's, "
                       "collectives the second's", base.device_name, system.device_name);
  return "";
}

int compute_bytes(const std::string& precision) {
  return precision == "fp16" || precision == "bf16" ? 2 : 4;
}

namespace {

// The fields the compute dtype and the memory model are read from: a value
// no run writes would be priced as something it is not (an unknown precision
// as fp32, a fused of -1 as the fused engine).
void check_engine_fields(const results::RunResult& rr, const std::string& where) {
  static const std::set<std::string> kPrecisions = {"fp32", "tf32", "fp16", "bf16"};
  static const std::set<std::string> kEngines = {"eager", "graph", "fused", "graph+fused"};
  if (!rr.precision.empty() && !kPrecisions.count(rr.precision))
    fail("--baseline {}: {} has precision '{}', not fp32, tf32, fp16 or bf16; a damaged or hand-made file", where,
         rr.run_id, printable(rr.precision, 64));
  if (rr.fused != 0 && rr.fused != 1)
    fail("--baseline {}: {} has fused = {}, not 0 or 1; a damaged or hand-made file", where, rr.run_id, rr.fused);
  if (rr.engine.empty()) return;  // a file older than the field
  if (!kEngines.count(rr.engine))
    fail("--baseline {}: {} has engine '{}', not eager, graph, fused or graph+fused; a damaged or hand-made file",
         where, rr.run_id, printable(rr.engine, 64));
  if (rr.engine.ends_with("fused") != (rr.fused == 1))
    fail("--baseline {}: {} has engine '{}' but fused = {}: the two disagree, so its memory model is in doubt; a "
         "damaged or hand-made file", where, rr.run_id, rr.engine, rr.fused);
}

}  // namespace

Baseline baseline_from_result(const results::RunResult& row, const std::string& where) {
  auto rr = row;
  results::fill_derived(rr);
  // A run that did not finish measured nothing a prediction can scale.
  if (rr.status != "ok")
    fail("--baseline {}: {} has status '{}', not ok; a failed or unfinished run is not a baseline", where,
         rr.run_id, rr.status.empty() ? "(none)" : rr.status);
  for (auto [name, value] : {std::pair<const char*, double>{"step_ms_median", rr.step_ms_median},
                             {"forward_ms", rr.forward_ms},
                             {"backward_ms", rr.backward_ms},
                             {"optimizer_ms", rr.optimizer_ms},
                             {"samples_per_s", rr.samples_per_s}})
    if (!std::isfinite(value) || value < 0)
      fail("--baseline {}: {} of {} is {}; a time or throughput must be a finite number, not negative", where,
           name, rr.run_id, value);
  if (results::devices(rr) != 1)
    fail("--baseline {}: {} ran on {} devices; a baseline runs on one", where, rr.run_id, results::devices(rr));
  check_engine_fields(rr, where);
  Baseline b;
  b.source = where;
  b.model = rr.model;
  b.precision = rr.precision.empty() ? "fp32" : rr.precision;
  b.device = rr.device;
  b.device_name = rr.device_name;
  b.data = rr.data;
  b.seq = rr.seq_length;
  b.batch = rr.batch_per_device;
  b.grad_accum = std::max<int64_t>(1, rr.grad_accum);
  if (rr.step_ms_mean > 0 && std::isfinite(rr.step_ms_stddev) && rr.step_ms_stddev > 0)
    b.step_noise = rr.step_ms_stddev / rr.step_ms_mean;
  b.engine = recorded_engine(rr);
  b.model_state_bytes = static_cast<double>(std::max<int64_t>(0, rr.model_state_bytes));
  if (b.batch <= 0) fail("--baseline {}: batch_per_device is missing", where);
  const double a = static_cast<double>(b.grad_accum);
  if (rr.step_ms_median > 0 && rr.forward_ms > 0 && rr.backward_ms > 0) {
    b.step_s = rr.step_ms_median / 1000;
    b.forward_s = rr.forward_ms / 1000 / a;
    b.backward_s = rr.backward_ms / 1000 / a;
    b.optimizer_s = rr.optimizer_ms / 1000;
    // Data loading and whatever else the step holds, kept as measured.
    b.other_s = std::max(0.0, (b.step_s - b.optimizer_s) / a - b.forward_s - b.backward_s);
  } else if (rr.samples_per_s > 0) {
    b.step_s = static_cast<double>(b.batch) * a / rr.samples_per_s;
    // Throughput only: backward does twice forward's matmuls (train/flops.h).
    b.forward_s = b.step_s / a / 3;
    b.backward_s = 2 * b.step_s / a / 3;
    b.phases_assumed = true;
  } else {
    fail("--baseline {}: neither phase times nor samples_per_s are recorded", where);
  }
  return b;
}

Baseline read_baseline(const std::string& path, const std::string& row, std::string* model_path) {
  fs::path file = path;
  std::error_code ec;
  if (fs::is_directory(file, ec)) file = fs::exists(file / "run.json", ec) ? file / "run.json" : file / "summary.csv";
  if (!fs::exists(file, ec) && !ec) fail("--baseline {}: no such run folder or file", path);
  // Read bounded and checked (results/run_reader.h); its "config" too.
  std::map<std::string, std::string> settings;
  std::vector<results::RunResult> rows;
  try {
    rows = results::read_result_file(file, &settings);
  } catch (const Interrupted&) {
    throw;
  } catch (const UserError& e) {
    fail("--baseline {}: {}", file.string(), e.what());
  }
  const results::RunResult* r = nullptr;
  for (auto& x : rows)
    if (row.empty() ? rows.size() == 1 : x.run_id == row) r = &x;
  if (!r) {
    if (row.empty()) fail("--baseline {}: {} rows; name one with --baseline-row", path, rows.size());
    fail("--baseline {}: no row with run_id {}", path, row);
  }
  auto b = baseline_from_result(*r, path);
  b.source = file.string() + (row.empty() ? "" : ":" + row);
  const auto& rr = *r;
  if (model_path) {
    *model_path = rr.model;
    if (auto it = settings.find("model"); it != settings.end()) *model_path = it->second;
  }
  return b;
}

Shape shape_of(const results::RunResult& row) {
  Shape shape;
  shape.nodes = static_cast<int>(std::max<int64_t>(1, row.nodes));
  shape.gpus_per_node = static_cast<int>(results::devices(row) / shape.nodes);
  return shape;
}

StepOptions engine_step_options(const std::string& precision, const EnginePolicy& engine) {
  StepOptions so;
  so.compute_bytes = compute_bytes(precision);
  so.reduce_bytes = so.compute_bytes;
  so.resident = engine.resident();
  if (so.resident) so.param_grad_bytes = so.compute_bytes;
  return so;
}

StepOptions step_options_of(const results::RunResult& row, const Baseline& base) {
  auto so = engine_step_options(base.precision, recorded_engine(row));
  so.grad_accum = static_cast<int>(std::max<int64_t>(1, row.grad_accum));
  return so;
}

EnginePolicy recorded_engine(const results::RunResult& row) {
  auto e = EnginePolicy::recorded(row.precision, row.fused > 0, row.engine);
  // A graph-ready step that was not captured (a CPU) ran op by op: its
  // times are eager's.
  if (!row.cuda_graph.starts_with("captured")) e.step = EnginePolicy::Step::Eager;
  return e;
}

std::string engine_refusal(const Baseline& base, const strategies::Choice& choice) {
  const auto support = choice.engine();
  const auto& e = base.engine;
  const char* what = nullptr;
  const strategies::Capability* c = nullptr;
  if (e.fused_model() && !support.fused.supported) {
    what = "--fused (its compute times are the fused kernels')";
    c = &support.fused;
  } else if (e.resident() && !support.resident.supported) {
    what = "--fused under bf16 (its compute times are those of bf16-resident weights, without autocast's casts)";
    c = &support.resident;
  } else if (e.graph() && !support.capture.supported) {
    what = "--cuda-graph (its compute times are a replayed step's)";
    c = &support.capture;
  }
  if (!c) return "";
  return fmt::format("the baseline {} ran {}, which --strategy {} cannot run: {}; measure a baseline without it to "
                     "predict {}", base.source, what, choice.label(), c->why_not, choice.label());
}

std::string memory_model_text(const Baseline& base, int64_t parameters) {
  const auto& e = base.engine;
  const bool resident = e.resident();
  const double per = strategies::replicated_state_bytes(1, resident, compute_bytes(base.precision));
  std::string text;
  if (resident)
    text = fmt::format("the baseline's engine is {} under {}: weights and gradients resident in {} beside fp32 "
                       "masters and Adam's moments, {:.0f} bytes a parameter on a replica; the "
                       "sharded strategies' compute copies and fp32 masters as without it",
                       e.name(), base.precision, base.precision, per);
  else
    text = fmt::format("the baseline's engine is {} under {}: fp32 weights{}, gradients and Adam's moments, "
                       "{:.0f} bytes a parameter on a replica", e.name(), base.precision,
                       e.fused_model() ? " (their own masters)" : base.precision == "fp32" ? "" : " (autocast casts them)",
                       per);
  text += " (docs/memory.md)";
  if (base.model_state_bytes > 0 && parameters > 0)
    text += fmt::format("; the baseline measured {:.1f} MiB of model state, the model says {:.1f} MiB for its "
                        "{} parameters", base.model_state_bytes / (1 << 20),
                        per * static_cast<double>(parameters) / (1 << 20), parameters);
  return text;
}

}  // namespace hpcbench::predict
