#include "results/plan_file.h"

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "core/bounded_read.h"
#include "results/json_file.h"

namespace hpcbench::results {

std::string plan_json(const PlanFile& p) {
  nlohmann::ordered_json layouts = nlohmann::ordered_json::array();
  for (auto& l : p.layouts)
    layouts.push_back({{"job", l.job},
                       {"strategy", l.strategy},
                       {"recompute", l.recompute},
                       {"rank", l.rank},
                       {"tie_group", l.tie_group},
                       {"step_ms", l.step_ms},
                       {"step_ms_low", l.step_ms_low},
                       {"step_ms_high", l.step_ms_high},
                       {"samples_per_s", l.samples_per_s},
                       {"memory_bytes", l.memory_bytes}});
  nlohmann::ordered_json j{{"schema", kPlanSchema},
                           {"baseline_source", p.baseline},
                           {"system", p.system},
                           {"nodes", p.nodes},
                           {"gpus_per_node", p.gpus_per_node},
                           {"global_batch", p.global_batch},
                           {"calibration", {{"low", p.calibration_low}, {"high", p.calibration_high},
                                            {"source", p.calibration_source}}},
                           {"baseline_noise", p.baseline_noise},
                           {"tie_threshold", p.tie_threshold},
                           {"searched", p.searched},
                           {"predicted", p.predicted},
                           {"layouts", layouts}};
  return j.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

void write_plan_file(const std::filesystem::path& file, const PlanFile& plan) { write_file_atomic(file, plan_json(plan)); }

PlanFile read_plan_file(const std::filesystem::path& file) {
  // A plan lists a few layouts.
  const auto j = read_json_file(file, 16 * kMiB, kPlanSchema, "plan");
  return read_fields(file, "plan", [&] {
    PlanFile p;
    p.baseline = j.at("baseline_source");
    p.system = j.at("system");
    p.nodes = j.at("nodes");
    p.gpus_per_node = j.at("gpus_per_node");
    p.global_batch = j.at("global_batch");
    p.calibration_low = j.at("calibration").at("low");
    p.calibration_high = j.at("calibration").at("high");
    p.calibration_source = j.at("calibration").at("source");
    p.baseline_noise = j.at("baseline_noise");
    p.tie_threshold = j.at("tie_threshold");
    p.searched = j.at("searched");
    p.predicted = j.at("predicted");
    for (auto& l : j.at("layouts")) {
      PlannedLayout x;
      x.job = l.at("job");
      x.strategy = l.at("strategy");
      x.recompute = l.at("recompute");
      x.rank = l.at("rank");
      x.tie_group = l.at("tie_group");
      x.step_ms = l.at("step_ms");
      x.step_ms_low = l.at("step_ms_low");
      x.step_ms_high = l.at("step_ms_high");
      x.samples_per_s = l.at("samples_per_s");
      x.memory_bytes = l.at("memory_bytes");
      p.layouts.push_back(std::move(x));
    }
    return p;
  });
}

}  // namespace hpcbench::results
