#include "preflight/run_settings.h"

#include <algorithm>
#include <cstdlib>

#include "core/error.h"
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
  // --fused: the strategy must run the fused model (spec.h's no_fused).
  if (cfg.fused) {
    if (auto why = choice.no_fused(); !why.empty()) fail("--fused with --strategy {}: {}", choice.label(), why);
    if (cfg.precision == "fp16")
      fail("--fused with --precision fp16: the fused model keeps its weights in bf16 (or fp32), and fp16 weights "
           "would need loss scaling of their own; use --precision bf16");
  }
  // --cuda-graph captures the whole optimizer step (docs/gpu.md, "CUDA
  // graph"): what would read the host inside it, or replay something other
  // than what was captured, is refused here rather than found on a GPU.
  if (cfg.cuda_graph) {
    if (auto why = choice.spec().no_cuda_graph(choice.options()); !why.empty())
      fail("--cuda-graph with --strategy {}: {}", choice.label(), why);
    if (cfg.precision == "fp16")
      fail("--cuda-graph with --precision fp16: dynamic loss scaling reads its overflow verdict on the host every "
           "step and skips the optimizer step on it, which a captured step cannot; use --precision bf16");
    if (cfg.activation_checkpointing)
      fail("--cuda-graph with --activation-checkpointing: the recompute saves and restores the device's random "
           "generator state on the host (model/activation_checkpoint.cpp), which a capture forbids");
  }
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
