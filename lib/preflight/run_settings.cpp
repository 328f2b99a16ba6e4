#include "preflight/run_settings.h"

#include <algorithm>
#include <cstdlib>

#include "core/error.h"
#include "train/engine.h"
#include "train/samples.h"
#include "train/setup.h"

namespace hpcbench::preflight {

void check_strategy_fits(const strategies::Choice& choice, const strategies::Shape& devices, int64_t batch_size,
                         const strategies::ModelShape& model, const std::string& model_name) {
  if (devices.nodes < 1 || devices.gpus_per_node < 1)
    fail("--strategy {}: a job of {} node(s) x {} device(s) has no devices", choice.label(), devices.nodes,
         devices.gpus_per_node);
  if (auto why = choice.unsupported(devices); !why.empty())
    fail("--strategy {} on {} node(s) x {} device(s): {}", choice.label(), devices.nodes, devices.gpus_per_node, why);
  if (auto why = choice.unsupported_model(devices, model); !why.empty())
    fail("--strategy {} on {} rank(s) with model {}: {}", choice.label(), devices.world(), model_name, why);
  if (auto why = choice.unsupported_batch(batch_size); !why.empty())
    fail("--strategy {}: {}", choice.label(), why);
}

strategies::Shape job_devices(const strategies::Choice& choice, const strategies::Shape& processes) {
  const auto option = choice.spec().traits().devices_option;
  if (option.empty()) return processes;
  int per_process = 1;
  auto options = choice.options().clone();
  for (auto& s : options->settings())
    if (s.key == option) per_process = std::max(1, std::atoi(value_text(s).c_str()));
  return {processes.nodes, processes.gpus_per_node * per_process};
}

void check_run_settings(const train::TrainConfig& cfg, const strategies::Choice& choice,
                        const strategies::Shape& devices) {
  train::validate(cfg);
  choice.validate(cfg.precision);
  // The engine is decided in one place, which refuses what the strategy
  // does not declare on this job (train/engine.h).
  train::choose_engine(cfg, choice, {}, devices);
  const auto mcfg = train::model_config(cfg);
  check_strategy_fits(choice, devices, cfg.batch_size, train::model_shape(mcfg), mcfg.name);
  // Real SQuAD data has as many samples as its windows, known once it is
  // tokenized (the run checks it then, before the first step).
  if (cfg.train_data != "synthetic") return;
  const bool one_process = !choice.spec().traits().devices_option.empty();
  const int data_ranks =
      one_process ? devices.nodes : choice.spec().data_parallel_size(choice.options(), devices);
  const int64_t per_process = one_process ? devices.gpus_per_node : 1;
  train::check_batch_fits(cfg.synthetic_samples, std::max(1, data_ranks), cfg.batch_size, per_process,
                          cfg.grad_accum);
}

}  // namespace hpcbench::preflight
