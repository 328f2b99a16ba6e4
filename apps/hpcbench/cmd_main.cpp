// `hpcbench main`: the main job on the embedded default. The baseline and
// every strategy over local ranks (two CPU processes here; one per GPU where
// there are GPUs) on synthetic SQuAD-shaped data with a tiny BERT, then the
// speedup/efficiency report, written as terminal table, CSV, Markdown and
// plots. Each run is a child `hpcbench run`, so a failing strategy is shown
// as failed and the others still report. On a machine with one GPU each
// strategy runs at world size 1: the table then shows its overhead against
// the baseline, not a scaling figure, and says so.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <string>
#include <vector>

#include "commands.h"
#include "core/error.h"
#include "core/self_exec.h"
#include "core/time.h"
#include "device/device.h"
#include "model/bert_config.h"
#include "specs/registry.h"
#include "train/model_shape.h"

namespace hpcbench::cli {

namespace {

constexpr int64_t kWarmupSteps = 3;

struct MainOptions {
  std::string out;
  int64_t ranks = 0;
  // 3 warm-up steps and 15 timed. Over the main job's 21 runs (d9f2f59, idle)
  // the first step took a median 1.44x the run's median from step 6 on, the
  // second 1.13x, the third to fifth 0.96-0.99x (each at most 1.22x), so
  // steps 4 and 5 were timed-step-like warm-up, 2 of a run's 20.
  int64_t steps = 18;
  int64_t repeats = 3;
  bool no_plots = false;
};

struct MainJob {
  std::string name;
  std::vector<std::string> args;
};

// --ranks from the machine when not given, checked against it.
void settle_ranks(MainOptions& o) {
  const int gpus = accelerator_count();
  if (o.ranks == 0) o.ranks = gpus > 0 ? gpus : 2;
  if (o.ranks < 1) fail("--ranks {}: must be at least 1", o.ranks);
  if (o.repeats < 1) fail("--repeats {}: must be at least 1", o.repeats);
  if (gpus > 0 && o.ranks > gpus)
    fail("--ranks {}: this machine has {} GPU(s) and hpcbench runs one rank per GPU; use --ranks {} or fewer",
         o.ranks, gpus, gpus);
  if (o.ranks == 1)
    spdlog::warn("main job: one {} only, so every strategy runs at world size 1: the report's speedups are "
                 "each strategy's overhead against the baseline, not scaling",
                 gpus > 0 ? "GPU" : "rank");
}

// Every strategy at its default options: the reference on one device with
// the whole global batch, the others over the ranks.
std::vector<MainJob> main_jobs(int64_t ranks_given, const std::string& model, int64_t per_device) {
  const auto shape = train::model_shape(model::BertConfig::preset(model));
  const std::string n = std::to_string(ranks_given);
  std::vector<MainJob> jobs;
  for (auto* spec : strategies::specs()) {
    strategies::Choice c(*spec);
    const auto traits = spec->traits();
    if (traits.reference) {
      jobs.push_back({spec->name(), {"--strategy", c.label(), "--batch-size", std::to_string(per_device * ranks_given),
                                     "--run-name", spec->name() + "-1x"}});
      continue;
    }
    const strategies::Shape ranks{1, static_cast<int>(ranks_given)};
    int64_t batch = per_device;
    if (traits.devices_option.empty()) {
      if (!c.unsupported(ranks).empty() || !c.unsupported_model(ranks, shape).empty()) continue;
      // The global batch splits over the data-parallel replicas: ranks
      // that hold parts of one model read the same rows.
      batch = per_device * ranks_given / spec->data_parallel_size(c.options(), ranks);
    }
    std::vector<std::string> args{"--batch-size", std::to_string(batch), "--run-name", spec->name() + "-" + n + "x"};
    if (!traits.devices_option.empty()) {
      c.set(traits.devices_option, n, "main job");
    } else {
      args.push_back("--nproc-per-node");
      args.push_back(n);
    }
    args.insert(args.begin(), {std::string("--strategy"), c.label()});
    jobs.push_back({spec->name(), args});
  }
  return jobs;
}

int run_main(MainOptions& o) {
  namespace fs = std::filesystem;
  settle_ranks(o);
  fs::path out = o.out.empty() ? fs::path("results/main") / local_timestamp() : fs::path(o.out);
  fs::path runs = out / "runs";
  // Strong scaling: every run trains on the same global batch, so that the
  // report can divide times. On CPU each rank gets one thread, the
  // baseline too: one core plays one device.
  const std::string model = "bert-tiny";
  std::vector<std::string> common = {"--model", model, "--train-data", "synthetic",
                                     "--synthetic-samples", "1024", "--max-seq-length", "128",
                                     "--max-steps", std::to_string(o.steps), "--timing-warmup-steps", std::to_string(kWarmupSteps),
                                     "--log-every", "20", "--threads", "1", "--results-dir", runs.string(),
                                     "--repeats", std::to_string(o.repeats)};
  std::vector<std::string> failed;
  const int64_t per_device = 8;
  for (auto& job : main_jobs(o.ranks, model, per_device)) {
    spdlog::info("main job: {} ({})", job.name, fmt::join(job.args, " "));
    std::vector<std::string> args{"run"};
    args.insert(args.end(), common.begin(), common.end());
    args.insert(args.end(), job.args.begin(), job.args.end());
    if (int rc = run_self(args); rc != 0) {
      spdlog::error("main job: {} failed (exit {})", job.name, rc);
      failed.push_back(job.name);
    }
  }
  std::vector<std::string> report{"report", runs.string(), "--out", (out / "report").string()};
  if (o.no_plots) report.push_back("--no-plots");
  int rc = run_self(report);
  spdlog::info("main job: runs in {}, report in {}", runs.string(), (out / "report").string());
  if (!failed.empty()) fail("main job: {} failed; see the log above", fmt::join(failed, ", "));
  return rc;
}

}  // namespace

Action add_main(CLI::App& app) {
  auto o = std::make_shared<MainOptions>();
  auto* sub = app.add_subcommand(
      "main", "The main job on the embedded default: baseline and every strategy over local ranks on "
              "synthetic data with a tiny BERT, then the speedup/efficiency report");
  sub->add_option("--out", o->out, "Folder for the runs and the report (default results/main/<time>)");
  sub->add_option("--ranks", o->ranks,
                  "Ranks (or dp replicas) per strategy run (default: one per GPU, or 2 CPU processes without GPUs)");
  sub->add_option("--max-steps", o->steps, "Optimizer steps per run")->capture_default_str();
  sub->add_option("--repeats", o->repeats,
                  "Runs of each strategy (separate processes), so that the report has intervals and "
                  "significance verdicts instead of single samples")
      ->capture_default_str();
  sub->add_flag("--no-plots", o->no_plots, "Skip the plots");
  return [o] { return run_main(*o); };
}

}  // namespace hpcbench::cli
