#include "run/build.h"

#include <spdlog/spdlog.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>

#include "core/hostinfo.h"
#include "core/time.h"
#include "distributed/process_group.h"
#include "model/bert_modules.h"
#include "model/checkpoint.h"
#include "preflight/resources.h"
#include "train/amp.h"
#include "train/determinism.h"
#include "train/engine.h"
#include "train/flops.h"
#include "train/samples.h"
#include "train/setup.h"

namespace hpcbench::run {

namespace {

void log_header(const Run& r, const RunContext& ctx, int64_t n) {
  const auto& m = r.model_config;
  const auto& cfg = r.cfg;
  spdlog::info("model {}: {} parameters, {} layers, hidden {}", m.name, m.num_parameters(), m.num_hidden_layers,
               m.hidden_size);
  spdlog::info("data: {} training features of {} tokens; {} optimizer steps ({} per epoch), global batch {}", n,
               cfg.max_seq_length, r.batch.total_steps, r.batch.steps_per_epoch, r.batch.global_batch);
  spdlog::info("device {} ({}), precision {}, {} intra-op threads, {}", r.device.str(), r.device_description.name,
               cfg.precision, at::get_num_threads(),
               r.peak_tflops > 0 ? fmt::format("peak {} TFLOP/s", r.peak_tflops)
                                 : fmt::format("MFU n/a: no dense {} peak known for this device name; set --peak-tflops",
                                               cfg.precision));
  if (auto w = slow_precision_warning(r.device, cfg.precision); !w.empty()) spdlog::warn("{}", w);
  spdlog::info("engine {} ({})", r.engine.name(), r.engine.reason);
  if (cfg.deterministic) {
    const auto d = train::determinism_state();
    spdlog::info("deterministic kernels: ATen's deterministic algorithms {}, cuDNN deterministic {}, benchmark {}, "
                 "CUBLAS_WORKSPACE_CONFIG={}", d.algorithms ? "on" : "off", d.cudnn_deterministic ? "on" : "off",
                 d.cudnn_benchmark ? "on" : "off", d.cublas_workspace_config);
  }
  const auto& t = r.topology;
  spdlog::info("strategy {}{}: {} process(es) x {} device(s)", r.strategy_name,
               t.options.empty() ? "" : " (" + t.options + ")", ctx.world_size, t.devices);
}

// The model with its initial weights (seeded, or the checkpoint's) on the
// run's device, in training mode.
model::BertForQuestionAnswering initial_model(const Run& r) {
  const auto& cfg = r.cfg;
  torch::manual_seed(static_cast<uint64_t>(cfg.seed));
  model::BertForQuestionAnswering m(r.model_config, r.engine);
  if (!cfg.checkpoint.empty()) model::load_hf_checkpoint(*m, cfg.checkpoint);
  m->to(r.device);
  m->train();
  m->bert()->set_activation_checkpointing(cfg.activation_checkpointing);
  return m;
}

// The strategy made its own of the model: where this rank sits, and the
// updater that steps what it holds.
void set_up_strategy(Run& r, const strategies::Choice& choice, const RunContext& ctx) {
  const auto& cfg = r.cfg;
  r.strategy_name = choice.name();
  r.strategy = strategies::make_strategy(choice);
  strategies::StrategyContext sctx{r.device, ctx.rank, ctx.world_size, ctx.comm, ctx.host_list(),
                                   {cfg.lr, cfg.weight_decay, cfg.adam_beta1, cfg.adam_beta2, cfg.adam_eps},
                                   cfg.batch_size, r.engine};
  auto set_up = r.strategy->setup(r.model, sctx);
  r.topology = std::move(set_up.topology);
  r.updater = std::move(set_up.updater);
}

}  // namespace

BatchPlan plan_batches(const train::TrainConfig& cfg, const strategies::Topology& t, int64_t n) {
  BatchPlan b;
  b.per_device = cfg.batch_size;
  b.grad_accum = cfg.grad_accum;
  // A process driving several devices gets batch_size rows per device per
  // micro-step, so --batch-size means the same for every strategy.
  b.micro_rows = cfg.batch_size * t.devices;
  train::check_batch_fits(n, t.data_ranks, cfg.batch_size, t.devices, cfg.grad_accum);
  // Samples each data rank sees per epoch, with DistributedSampler's padding rule.
  const int64_t per_rank = (n + t.data_ranks - 1) / t.data_ranks;
  b.micro_per_epoch = (per_rank + b.micro_rows - 1) / b.micro_rows;
  b.steps_per_epoch = std::max<int64_t>(b.micro_per_epoch / cfg.grad_accum, 1);
  b.total_steps = cfg.max_steps > 0 ? cfg.max_steps : cfg.epochs * b.steps_per_epoch;
  b.global_batch = cfg.batch_size * cfg.grad_accum * t.replicas;
  return b;
}

Run build(const train::TrainConfig& cfg, const strategies::Choice& choice, const RunContext& ctx) {
  train::validate(cfg);
  // Here too, for whatever trains without the job (the tests): before the
  // device is made current.
  train::use_deterministic_kernels(cfg.deterministic);
  if (cfg.threads > 0) at::set_num_threads(static_cast<int>(cfg.threads));
  Run r;
  r.cfg = cfg;
  r.started_at = utc_now_iso();
  r.settings = train::describe(cfg);
  r.cpu_cores = preflight::node_cores();
  r.threads_per_rank = at::get_num_threads();
  // With a communicator the rank's device was chosen with it (its local
  // rank's GPU, or the one a task was bound to).
  r.device = ctx.comm ? ctx.comm->device() : make_current(resolve_device(cfg.device, ctx.local_rank));
  r.device_description = describe(r.device);
  train::configure_precision(cfg.precision);

  r.model_config = train::model_config(cfg);
  r.features = train::feature_config(cfg);
  r.data = std::make_unique<train::FeatureTensors>(train::training_features(cfg, r.model_config, r.features));
  const int64_t n = r.data->size();
  r.data_identity = train::data_identity(cfg, n);

  const int nodes = static_cast<int>(std::max<int64_t>(ctx.nodes, 1));
  r.engine = train::choose_engine(
      cfg, choice, {r.device.is_cuda(), ctx.comm && ctx.comm->wait_mode() == dist::WaitMode::HostBlocking},
      strategies::Shape{nodes, ctx.world_size / nodes});
  r.model = initial_model(r);
  set_up_strategy(r, choice, ctx);
  r.batch = plan_batches(cfg, r.topology, n);
  r.flops_per_sample = train::training_flops_per_sequence(r.model_config, cfg.max_seq_length);
  r.hardware_flops_per_sample =
      train::hardware_flops_per_sequence(r.model_config, cfg.max_seq_length, cfg.activation_checkpointing);
  r.peak_tflops = cfg.peak_tflops > 0 ? cfg.peak_tflops : train::peak_tflops(r.device_description.name, cfg.precision);
  if (ctx.rank == 0) log_header(r, ctx, n);
  return r;
}

}  // namespace hpcbench::run
