#include <map>
#include <memory>
#include <optional>
#include <string>

#include "commands.h"
#include "core/settings.h"
#include "launch_flags.h"
#include "run/job.h"
#include "specs/registry.h"
#include "train/config.h"
#include "train/names.h"

namespace hpcbench::cli {

namespace {

// What `hpcbench run` takes besides the settings table: the job's options
// and its strategy's flags.
struct RunOptions {
  run::JobOptions job;
  LaunchFlags launch;
  // Strategy option flags as given (flag -> text), set on the chosen
  // strategy once the TOML file and --strategy are known.
  std::map<std::string, std::string> strategy_flags;
};

// Every strategy's option flags, from the specs' settings tables; a flag
// the chosen strategy does not take is refused once it is known.
void add_strategy_flags(CLI::App* sub, const std::shared_ptr<RunOptions>& o) {
  for (auto& f : strategies::option_flags()) {
    if (f.type.empty()) {
      sub->add_flag_function(f.flag, [o, flag = f.flag, v = f.switch_text](int64_t) { o->strategy_flags[flag] = v; },
                             f.help);
      continue;
    }
    sub->add_option_function<std::string>(
           f.flag, [o, flag = f.flag](const std::string& v) { o->strategy_flags[flag] = v; }, f.help)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
        ->type_name(f.type);
  }
}

// The settings table's flags. They are collected as text and applied after
// the TOML file, so that the command line always wins, whatever the order of
// the arguments. A setting given twice takes its last value, so that a job
// script's defaults can be overridden by appending flags. A bool is a switch.
void add_setting_flags(CLI::App* sub, train::TrainConfig& cfg,
                       const std::shared_ptr<std::map<std::string, std::string>>& values) {
  for (auto& s : train::settings_of(cfg)) {
    if (type_name(s).empty()) {
      sub->add_flag_function(
          s.flag, [values, flag = s.flag, v = switch_value(s) ? "on" : "off"](int64_t) { (*values)[flag] = v; },
          s.help + " [" + s.key + "]");
      continue;
    }
    sub->add_option_function<std::string>(
           s.flag, [values, flag = s.flag](const std::string& v) { (*values)[flag] = v; },
           s.help + " [" + s.key + "]")
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
        // Collected as text, but shown with the setting's own type.
        ->type_name(type_name(s));
  }
}

// The job's communicator.
void add_communicator_flags(CLI::App* sub, run::JobOptions& job) {
  sub->add_option("--collective-timeout", job.collective_timeout_s,
                  "Seconds one collective may take before the job is declared broken")->capture_default_str();
  std::string communicating;
  for (auto* spec : strategies::specs())
    if (spec->traits().needs_comm) communicating += (communicating.empty() ? "" : ", ") + spec->name();
  sub->add_flag("--keep-collectives", job.keep_collectives,
                communicating + " at world size 1: issue every collective anyway (one GPU then runs NCCL, its "
                "stream-ordered waits and its timing for real; the step's overhead against the baseline includes them)");
  sub->add_option("--backend", job.backend,
                  "Collectives' backend: auto (NCCL on GPUs, Gloo on CPUs), nccl or gloo (also with CUDA tensors, "
                  "staged through host memory)")
      ->capture_default_str();
  sub->add_flag("--allow-shared-gpu", job.allow_shared_gpu,
                "Let local ranks share GPUs (local rank modulo the visible GPUs); needs --backend gloo, since "
                "NCCL refuses two ranks on one GPU");
}

// What the job writes besides its results, its repeats, the dry run.
void add_output_flags(CLI::App* sub, run::JobOptions& job) {
  sub->add_option("--save-checkpoint", job.save_checkpoint, "Write the final model here (rank 0; .safetensors or a folder)");
  sub->add_option("--save-initial-checkpoint", job.save_initial_checkpoint,
                  "Write the model every rank starts from here (rank 0)");
  sub->add_option("--dump-data", job.dump_data,
                  "Write the training features and every rank's sample order to this .safetensors (rank 0)");
  sub->add_option("--repeats", job.repeats,
                  "Run the timed loop this many times, each as a separate process and results folder "
                  "<run name>-r<i> with a shared repeat_group; `hpcbench report` groups them")
      ->capture_default_str();
  sub->add_option("--repeat-group", job.repeat_group, "Set by --repeats: the group recorded in the results")
      ->group("");
  sub->add_option("--repeat-index", job.repeat_index, "Set by --repeats: this repeat's index")->group("");
  sub->add_flag("--dry-run", job.dry_run,
                "Check the flags, the files the run reads and writes, the evaluation set, the cores and the "
                "memory, then exit without training (`hpcbench sweep` runs it for every job before submitting)");
}

int run_run(train::TrainConfig& cfg, const std::string& config_file, const std::map<std::string, std::string>& values,
            RunOptions& o) {
  std::optional<TomlFile> file;
  if (!config_file.empty()) {
    file.emplace(config_file);
    train::load_toml(cfg, *file);
  }
  for (auto& s : train::settings_of(cfg))
    if (auto it = values.find(s.flag); it != values.end()) set_from_string(s, it->second);
  if (cfg.strategy.empty()) cfg.strategy = strategies::reference_spec().name();
  auto choice = strategies::configure(cfg.strategy, file ? &*file : nullptr, o.strategy_flags, "--strategy");
  // The run's settings record the strategy as configured, options included.
  cfg.strategy = choice.label();
  train::resolve_names(cfg);
  o.launch.check();
  auto job = o.job;
  job.nproc_per_node = o.launch.nproc_per_node;
  job.nodes = o.launch.nodes;
  job.gpus_per_node = o.launch.gpus_per_node;
  job.connect_timeout_s = o.launch.connect_timeout_s;
  return run::run_job(cfg, choice, job);
}

}  // namespace

Action add_run(CLI::App& app) {
  auto* sub = app.add_subcommand("run", "Timed BERT/SQuAD training under one strategy; writes a results folder");
  auto cfg = std::make_shared<train::TrainConfig>();
  auto config_file = std::make_shared<std::string>();
  auto values = std::make_shared<std::map<std::string, std::string>>();
  auto o = std::make_shared<RunOptions>();
  sub->add_option("--config", *config_file, "TOML file (see configs/); flags override it");
  add_launch_flags(sub, o->launch);
  add_communicator_flags(sub, o->job);
  add_strategy_flags(sub, o);
  add_output_flags(sub, o->job);
  add_setting_flags(sub, *cfg, values);
  return [cfg, config_file, values, o] { return run_run(*cfg, *config_file, *values, *o); };
}

}  // namespace hpcbench::cli
