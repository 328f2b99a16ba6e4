#include "run/job_results.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include <signal.h>

#include "core/bounded_read.h"
#include "core/error.h"
#include "core/stop_signal.h"
#include "core/time.h"
#include "distributed/process_group.h"
#include "results/run_folder.h"
#include "run/terminal_summary.h"
#include "tensorboard/run_log.h"

namespace hpcbench::run {

std::string default_run_name(const strategies::Choice& choice, int world) {
  return fmt::format("{}-{}x-{}", choice.file_name(), world, local_timestamp());
}

int interrupted_exit(int sig) { return 128 + (sig > 0 ? sig : SIGTERM); }

int write_results(const train::TrainConfig& cfg, const std::string& name, TrainOutput out, const dist::StepStop& stop,
                  const RunContext& ctx, const TrainHooks& hooks) {
  const bool interrupted = out.result.status == "interrupted";
  const int sig = stop.signal();
  if (interrupted) {
    const int64_t planned = out.details.value("steps_planned", int64_t{0});
    out.details["interrupted"] = {{"signal", signal_name(sig)},
                                  {"requested_by_rank", stop.requested_by()},
                                  {"steps_done", out.result.steps},
                                  {"steps_planned", planned},
                                  {"during", out.result.steps < planned ? "training" : "evaluation"}};
  }
  results::RunFiles files(out.result);
  files.steps = std::move(out.steps);
  files.rank_timing = std::move(out.rank_timing);
  if (out.details.contains("predictions")) files.files["predictions.json"] = out.details["predictions"].dump(1);
  out.details.erase("predictions");
  const nlohmann::json notice = out.details.value("interrupted", nlohmann::json::object());
  const bool checkpoint_lost = out.details.contains("final_checkpoint");
  files.details = std::move(out.details);
  if (!out.utilisation_csv.empty()) files.files["utilisation.csv"] = out.utilisation_csv;
  for (auto& [file, content] : out.files) files.files[file] = std::move(content);
  // What was measured reaches the terminal even when the folder cannot be
  // written (a disk full beyond the space set aside, a folder removed).
  std::string folder_text, write_error;
  try {
    // A stop signal now comes after the measurement: what it measured is
    // written whole, with the event files read for it.
    ReadsRunToTheirEnd whole;
    for (auto& [file, content] : tensorboard::event_files(hooks.tensorboard_dir)) files.files[file] = content;
    folder_text = results::write_run_folder(cfg.results_dir, name, std::move(files)).string();
    tensorboard::discard_event_files(hooks.tensorboard_dir);
  } catch (const UserError& e) {
    write_error = e.what();
    folder_text = "NOT WRITTEN (" + write_error + ")";
  }
  print_summary(out.result, folder_text, notice);
  if (!write_error.empty()) {
    spdlog::error("the run's results could not be written: {}; the summary above is what it measured", write_error);
    if (interrupted && ctx.comm) ctx.comm->barrier();
    return 2;
  }
  const std::string folder = folder_text;
  if (checkpoint_lost)
    spdlog::error("{} holds the run's results, marked in run.json (final_checkpoint); the checkpoint was not written",
                  folder);
  if (!interrupted) return checkpoint_lost ? 2 : 0;
  spdlog::warn("interrupted by {} after {} of {} steps{}: {} holds what was measured, with status interrupted "
               "(hpcbench report shows it and leaves it out of speedups unless --include-interrupted)",
               signal_name(sig), out.result.steps, notice["steps_planned"].get<int64_t>(),
               notice["during"] == "evaluation" ? ", during evaluation" : "", folder);
  if (ctx.comm) ctx.comm->barrier();
  return interrupted_exit(sig);
}

}  // namespace hpcbench::run
