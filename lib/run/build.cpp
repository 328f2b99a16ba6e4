#include "run/build.h"

#include <spdlog/spdlog.h>

#include <ATen/Parallel.h>

#include <cmath>

#include "core/hostinfo.h"
#include "core/time.h"
#include "distributed/process_group.h"
#include "model/bert_modules.h"
#include "model/checkpoint.h"
#include "train/amp.h"
#include "train/flops.h"
#include "train/samples.h"
#include "train/setup.h"

namespace hpcbench::run {

namespace {

void log_header(const Run& r, const train::TrainConfig& cfg, const RunContext& ctx, int64_t n) {
  const auto& m = r.model_config;
  spdlog::info("model {}: {} parameters, {} layers, hidden {}", m.name, m.num_parameters(), m.num_hidden_layers,
               m.hidden_size);
  spdlog::info("data: {} training features of {} tokens; {} optimizer steps ({} per epoch), global batch {}", n,
               cfg.max_seq_length, r.total_steps, r.steps_per_epoch, r.global_batch);
  spdlog::info("device {} ({}), precision {}, {} intra-op threads, {}", r.device.str(), r.device_description.name,
               cfg.precision, at::get_num_threads(),
               r.peak_tflops > 0 ? fmt::format("peak {} TFLOP/s", r.peak_tflops)
                                 : fmt::format("MFU n/a: no dense {} peak known for this device name; set --peak-tflops",
                                               cfg.precision));
  if (auto w = slow_precision_warning(r.device, cfg.precision); !w.empty()) spdlog::warn("{}", w);
  const auto& t = r.topology;
  spdlog::info("strategy {}{}: {} process(es) x {} device(s)", r.strategy_name,
               t.options.empty() ? "" : " (" + t.options + ")", ctx.world_size, t.devices);
}

}  // namespace

Run build(const train::TrainConfig& cfg, const strategies::Choice& choice, const RunContext& ctx) {
  train::validate(cfg);
  if (cfg.threads > 0) at::set_num_threads(static_cast<int>(cfg.threads));
  Run r;
  r.started_at = utc_now_iso();
  // With a communicator the rank's device was chosen with it (its local
  // rank's GPU, or the one a task was bound to).
  r.device = ctx.comm ? ctx.comm->device() : make_current(resolve_device(cfg.device, ctx.local_rank));
  r.device_description = describe(r.device);
  train::configure_precision(cfg.precision);

  r.model_config = train::model_config(cfg);
  r.data = std::make_unique<train::FeatureTensors>(train::training_features(cfg, r.model_config));
  const int64_t n = r.data->size();

  torch::manual_seed(static_cast<uint64_t>(cfg.seed));
  r.model = model::BertForQuestionAnswering(r.model_config, cfg.fused);
  if (!cfg.checkpoint.empty()) model::load_hf_checkpoint(*r.model, cfg.checkpoint);
  r.model->to(r.device);
  r.model->train();
  r.model->bert()->set_activation_checkpointing(cfg.activation_checkpointing);

  r.strategy_name = choice.name();
  r.strategy = strategies::make_strategy(choice);
  strategies::StrategyContext sctx{r.device, ctx.rank, ctx.world_size, cfg.precision, ctx.comm, ctx.host_list(),
                                   {cfg.lr, cfg.weight_decay, cfg.adam_beta1, cfg.adam_beta2, cfg.adam_eps},
                                   cfg.batch_size};
  sctx.fused = cfg.fused;
  r.topology = r.strategy->setup(r.model, sctx);
  const auto& t = r.topology;

  // A process driving several devices gets batch_size rows per device per
  // micro-step, so --batch-size means the same for every strategy.
  r.micro_rows = cfg.batch_size * t.devices;
  train::check_batch_fits(n, t.data_ranks, cfg.batch_size, t.devices, cfg.grad_accum);
  // Samples each data rank sees per epoch, with DistributedSampler's padding rule.
  const int64_t per_rank = (n + t.data_ranks - 1) / t.data_ranks;
  r.micro_per_epoch = (per_rank + r.micro_rows - 1) / r.micro_rows;
  r.steps_per_epoch = std::max<int64_t>(r.micro_per_epoch / cfg.grad_accum, 1);
  r.total_steps = cfg.max_steps > 0 ? cfg.max_steps : cfg.epochs * r.steps_per_epoch;
  r.global_batch = cfg.batch_size * cfg.grad_accum * t.replicas;
  r.flops_per_sample = train::training_flops_per_sequence(r.model_config, cfg.max_seq_length);
  r.hardware_flops_per_sample =
      train::hardware_flops_per_sequence(r.model_config, cfg.max_seq_length, cfg.activation_checkpointing);
  r.peak_tflops = cfg.peak_tflops > 0 ? cfg.peak_tflops : train::peak_tflops(r.device_description.name, cfg.precision);
  if (ctx.rank == 0) log_header(r, cfg, ctx, n);
  return r;
}

}  // namespace hpcbench::run
