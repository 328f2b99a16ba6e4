#include <spdlog/spdlog.h>

#include "commands.h"
#include "train/config.h"

namespace hpcbench::cli {

Action add_main(CLI::App& app) {
  auto* sub = app.add_subcommand(
      "main", "The main job on the embedded default: a baseline run of a tiny BERT on synthetic "
              "SQuAD-shaped data (the strategies join as they land)");
  auto results = std::make_shared<std::string>("results/runs");
  sub->add_option("--results-dir", *results, "Folder that receives the run folders");
  return [results] {
    train::TrainConfig cfg;  // the defaults are the embedded default (configs/tiny-synthetic.toml)
    cfg.results_dir = *results;
    spdlog::info("main job: baseline, {} on {} synthetic features, seq {}", cfg.model, cfg.synthetic_samples,
                 cfg.max_seq_length);
    return run_training(cfg);
  };
}

}  // namespace hpcbench::cli
