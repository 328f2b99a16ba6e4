#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <ctime>
#include <map>
#include <optional>

#include "commands.h"
#include "core/error.h"
#include "report/run_folder.h"
#include "strategies/strategy.h"
#include "train/config.h"
#include "train/trainer.h"

namespace hpcbench::cli {

namespace {

std::string default_run_name(const train::TrainConfig& cfg, int world) {
  auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y%m%d-%H%M%S", &tm);
  return fmt::format("{}-{}x-{}", cfg.strategy, world, buf);
}

void print_summary(const report::RunResult& r, const std::string& folder) {
  fmt::print("\n  {} on {} x {} ({}), {} {}, seq {}, global batch {}\n", r.strategy, r.world_size,
             r.device_name, r.device, r.model, r.precision, r.seq_length, r.global_batch);
  fmt::print("  Step time (median … p90 … max): {:8.2f} ms … {:8.2f} ms … {:8.2f} ms   (σ {:.2f} ms, {} timed steps)\n",
             r.step_ms_median, r.step_ms_p90, r.step_ms_max, r.step_ms_stddev, r.timed_steps);
  fmt::print("  Throughput:  {:10.1f} samples/s  {:12.0f} tokens/s  {:8.1f} samples/s per device\n",
             r.samples_per_s, r.tokens_per_s, r.samples_per_s_per_device);
  fmt::print("  Phases (median): data {:.2f} ms, forward {:.2f} ms, backward {:.2f} ms, optimizer {:.2f} ms\n",
             r.data_ms, r.forward_ms, r.backward_ms, r.optimizer_ms);
  if (r.mfu > 0) fmt::print("  MFU {:.1f}% of {} TFLOP/s\n", 100 * r.mfu, r.peak_tflops);
  fmt::print("  Peak memory {:.1f} MiB, model state {:.1f} MiB; final loss {:.4f}\n",
             r.peak_memory_bytes / 1048576.0, r.model_state_bytes / 1048576.0, r.final_train_loss);
  if (r.val_loss >= 0) fmt::print("  Validation loss {:.4f}\n", r.val_loss);
  if (r.exact_match >= 0) fmt::print("  EM {:.2f}  F1 {:.2f}\n", r.exact_match, r.f1);
  fmt::print("  Results: {}\n", folder);
}

}  // namespace

int run_training(const train::TrainConfig& cfg) {
  train::validate(cfg);
  auto strategy = strategies::make_strategy(cfg.strategy);
  train::RunContext ctx;
  auto out = train::train(cfg, *strategy, ctx);
  if (ctx.rank != 0) return 0;
  std::string name = cfg.run_name.empty() ? default_run_name(cfg, ctx.world_size) : cfg.run_name;
  std::map<std::string, std::string> extra;
  if (out.details.contains("predictions")) extra["predictions.json"] = out.details["predictions"].dump(1);
  out.details.erase("predictions");
  auto folder = report::write_run_folder(cfg.results_dir, name, out.result, out.details, extra);
  print_summary(out.result, folder.string());
  return 0;
}

Action add_run(CLI::App& app) {
  auto* sub = app.add_subcommand("run", "Timed BERT/SQuAD training under one strategy; writes a results folder");
  auto cfg = std::make_shared<train::TrainConfig>();
  auto config_file = std::make_shared<std::string>();
  auto values = std::make_shared<std::map<std::string, std::string>>();
  sub->add_option("--config", *config_file, "TOML file (see configs/); flags override it");
  for (auto& s : train::settings_of(*cfg)) {
    // Flags are collected as text and applied after the TOML file, so that
    // the command line always wins, whatever the order of the arguments.
    sub->add_option_function<std::string>(
        s.flag, [values, flag = s.flag](const std::string& v) { (*values)[flag] = v; },
        s.help + " [" + s.key + "]");
  }
  return [cfg, config_file, values] {
    if (!config_file->empty()) train::load_toml(*cfg, *config_file);
    for (auto& s : train::settings_of(*cfg))
      if (auto it = values->find(s.flag); it != values->end()) train::set_from_string(s, it->second);
    return run_training(*cfg);
  };
}

}  // namespace hpcbench::cli
