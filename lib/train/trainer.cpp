#include "train/trainer.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <iterator>
#include <map>
#include <sstream>
#include <thread>

#include "core/error.h"
#include "core/hostinfo.h"
#include "core/version.h"
#include "device/device.h"
#include "dist/process_group.h"
#include "model/bert_modules.h"
#include "model/checkpoint.h"
#include "monitor/nvtx.h"
#include "monitor/sampler.h"
#include "report/stats.h"
#include "tensorboard/run_log.h"
#include "train/amp.h"
#include "train/batch.h"
#include "train/flops.h"
#include "train/op_count.h"
#include "train/optimizer.h"
#include "train/rank_timing.h"
#include "train/samples.h"
#include "train/setup.h"
#include "train/step_timer.h"

namespace hpcbench::train {

namespace {

struct StepRecord {
  int64_t step;
  int64_t epoch;
  double loss;
  double lr;
  double ms;
  std::array<double, kPhases> phase_ms;
  double comm_ms;
  double comm_exposed_ms;
  std::array<double, kPhases> phase_exposed_ms;
  int collectives;
  int comm_untimed;
  int64_t samples;  // data-set rows the step trained on, all ranks (train/samples.h)
  double grad_norm;
  bool skipped;  // fp16 overflow: the optimizer step was skipped
};

// A progress line that rewrites itself, only when a person is watching; batch
// job logs get the periodic log lines alone.
class Progress {
 public:
  Progress(bool enabled, int64_t total) : enabled_(enabled && ::isatty(STDERR_FILENO)), total_(total) {}
  void update(int64_t step, double loss, double ms) {
    if (!enabled_) return;
    int width = 30;
    int filled = static_cast<int>(width * step / std::max<int64_t>(total_, 1));
    std::fprintf(stderr, "\r[%.*s%*s] %lld/%lld loss %.4f %.1f ms/step", filled,
                 "##############################", width - filled, "", static_cast<long long>(step),
                 static_cast<long long>(total_), loss, ms);
    std::fflush(stderr);
  }
  void done() {
    if (enabled_) std::fprintf(stderr, "\r%*s\r", 80, "");
  }

 private:
  bool enabled_;
  int64_t total_;
};

// Every step's time becomes the slowest rank's and its loss the mean over
// ranks; returns each rank's median step time (empty for one rank).
std::vector<double> combine_over_ranks(std::vector<StepRecord>& records, const RunContext& ctx) {
  std::vector<double> rank_median_ms;
  if (!ctx.comm || ctx.world_size <= 1) return rank_median_ms;
  const auto steps = static_cast<int64_t>(records.size());
  auto mine = at::empty({steps, 2}, at::kDouble);
  for (int64_t i = 0; i < steps; ++i) {
    mine[i][0] = records[size_t(i)].ms;
    mine[i][1] = records[size_t(i)].loss;
  }
  auto local = mine.to(ctx.comm->device());
  auto all = at::empty({ctx.world_size * steps * 2}, local.options());
  ctx.comm->allgather(all, local.view({-1}));
  all = all.cpu().view({ctx.world_size, steps, 2});
  auto slowest = std::get<0>(all.select(2, 0).max(0));
  auto mean_loss = all.select(2, 1).mean(0);
  for (int64_t i = 0; i < steps; ++i) {
    records[size_t(i)].ms = slowest[i].item<double>();
    records[size_t(i)].loss = mean_loss[i].item<double>();
  }
  for (int r = 0; r < ctx.world_size; ++r) {
    auto v = all[r].select(1, 0);
    rank_median_ms.push_back(v.numel() ? v.median().item<double>() : 0);
  }
  return rank_median_ms;
}

// Every rank's model-state and peak memory bytes, rank order.
std::pair<std::vector<int64_t>, std::vector<int64_t>> memory_over_ranks(size_t state_bytes, size_t peak_bytes,
                                                                        const RunContext& ctx) {
  std::vector<int64_t> state{static_cast<int64_t>(state_bytes)}, peak{static_cast<int64_t>(peak_bytes)};
  if (!ctx.comm || ctx.world_size <= 1) return {state, peak};
  auto mine = at::tensor({static_cast<double>(state_bytes), static_cast<double>(peak_bytes)}, at::kDouble);
  auto local = mine.to(ctx.comm->device());
  auto all = at::empty({ctx.world_size * 2}, local.options());
  ctx.comm->allgather(all, local);
  all = all.cpu().view({ctx.world_size, 2});
  state.clear();
  peak.clear();
  for (int r = 0; r < ctx.world_size; ++r) {
    state.push_back(static_cast<int64_t>(all[r][0].item<double>()));
    peak.push_back(static_cast<int64_t>(all[r][1].item<double>()));
  }
  return {state, peak};
}

// The store keeps a key's value: keys of the sampler's exchanges are made
// unique per train() call (every rank makes the same calls), so a second
// training with the same Comm never reads the first one's values.
std::string monitor_key(const std::string& what, int64_t call) { return fmt::format("monitor/{}/{}", call, what); }
int64_t next_train_call() {
  static std::atomic<int64_t> calls{0};
  return calls++;
}

// The node's first rank samples its GPUs (a GPU run, or a library named by
// HPCBENCH_NVML_LIBRARY) and, on CPU runs, the process trees of the node's
// ranks; the others sample nothing. Every rank takes part in the pid
// exchange (a collective).
std::unique_ptr<monitor::Sampler> start_sampler(const TrainConfig& cfg, const c10::Device& device,
                                                const RunContext& ctx, int64_t call) {
  if (cfg.sample_ms <= 0) return nullptr;
  std::vector<std::string> pids{std::to_string(::getpid())};
  // The sampler reads its node's ranks' GPUs alone, found by PCI bus id.
  std::vector<std::string> buses{monitor::rank_bus_id(device_bus_id(device), ctx.local_rank)};
  if (ctx.comm && ctx.world_size > 1) {
    pids = ctx.comm->exchange(monitor_key("pid", call), pids[0]);
    buses = ctx.comm->exchange(monitor_key("bus", call), buses[0]);
  }
  if (ctx.local_rank != 0) return nullptr;
  monitor::SamplerOptions o;
  o.interval_ms = cfg.sample_ms;
  const char* nvml_override = std::getenv("HPCBENCH_NVML_LIBRARY");
  o.gpus = !device.is_cpu() || (nvml_override && *nvml_override);
  std::vector<std::string> hosts;
  std::istringstream in(ctx.hosts);
  for (std::string h; in >> h;) hosts.push_back(h);
  for (int r = 0; r < static_cast<int>(pids.size()); ++r) {
    if (hosts.size() == pids.size() && hosts[size_t(r)] != hosts[size_t(ctx.rank)]) continue;
    if (device.is_cpu()) o.ranks.emplace_back(r, static_cast<pid_t>(std::stol(pids[size_t(r)])));
    o.bus_ids.push_back(buses[size_t(r)]);
  }
  auto sampler = std::make_unique<monitor::Sampler>(std::move(o));
  if (sampler->gpu_note().size()) spdlog::info("GPU sampling off: {}", sampler->gpu_note());
  sampler->start();
  return sampler;
}

// Stops the sampling and puts every node's samples and summary into `out`
// (a collective: every rank calls it, with or without a sampler).
void finish_sampling(std::unique_ptr<monitor::Sampler>& sampler, const TrainConfig& cfg, const RunContext& ctx,
                     int64_t first_timed, int64_t last_timed, int64_t call, TrainOutput& out) {
  if (cfg.sample_ms <= 0) return;
  std::string rows;
  nlohmann::json mine = nullptr;
  if (sampler) {
    sampler->stop();
    auto samples = sampler->samples();
    std::istringstream in(ctx.hosts);
    std::vector<std::string> hosts{std::istream_iterator<std::string>(in), {}};
    std::string host = size_t(ctx.rank) < hosts.size() ? hosts[size_t(ctx.rank)] : hostname();
    rows = monitor::csv_rows(samples, host, first_timed - 1, sampler->gpu_bus_ids());
    auto s = monitor::summarize(samples, first_timed, last_timed);
    auto gpus = nlohmann::json::array();
    for (auto& [index, bus] : sampler->gpu_bus_ids()) gpus.push_back({{"index", index}, {"bus_id", bus}});
    mine = {{"host", host}, {"gpu_sampling", sampler->gpu_sampling()}, {"gpu_note", sampler->gpu_note()},
            {"gpus", gpus}, {"gpus_of", !sampler->gpu_sampling() ? "" : sampler->gpu_selection().all ? "node" : "job"},
            {"gpus_note", sampler->gpu_selection().note},
            {"samples", samples.size()}, {"util_of", s.util_of}, {"util_mean_percent", s.util_mean_percent},
            {"util_samples", s.util_samples}, {"power_mean_w", s.power_mean_w}, {"energy_j", s.energy_j},
            {"energy_method", s.energy_method}, {"nvml_peak_memory_bytes", s.nvml_peak_memory_bytes}};
  }
  std::vector<std::string> all_rows{rows}, all_summaries{mine.dump()};
  if (ctx.comm && ctx.world_size > 1) {
    // Through the rendezvous store: a node's rows are text of a few MB at most
    // for hour-long runs at the default interval.
    all_rows = ctx.comm->exchange(monitor_key("rows", call), rows);
    all_summaries = ctx.comm->exchange(monitor_key("summary", call), mine.dump());
  }
  if (ctx.rank != 0) return;
  out.utilisation_csv = monitor::csv_header();
  for (auto& r : all_rows) out.utilisation_csv += r;
  std::vector<monitor::Summary> nodes;
  auto& d = out.details["monitor"];
  d["sample_ms"] = cfg.sample_ms;
  d["timed_steps"] = {first_timed, last_timed};
  d["nodes"] = nlohmann::json::array();
  for (auto& text : all_summaries) {
    auto j = nlohmann::json::parse(text);
    if (j.is_null()) continue;
    d["nodes"].push_back(j);
    monitor::Summary s;
    s.util_of = j["util_of"];
    s.util_mean_percent = j["util_mean_percent"];
    s.util_samples = j["util_samples"];
    s.power_mean_w = j["power_mean_w"];
    s.energy_j = j["energy_j"];
    s.energy_method = j["energy_method"];
    s.nvml_peak_memory_bytes = j["nvml_peak_memory_bytes"];
    nodes.push_back(s);
  }
  auto job = monitor::combine(nodes);
  auto& res = out.result;
  res.utilisation_of = job.util_of;
  res.utilisation_mean_percent = job.util_mean_percent;
  res.power_mean_w = job.power_mean_w;
  res.energy_j = job.energy_j;
  res.energy_method = job.energy_method;
  res.samples_per_kj = job.energy_j > 0 ? static_cast<double>(res.samples_timed) / (job.energy_j / 1000.0) : -1;
  res.nvml_peak_memory_bytes = job.nvml_peak_memory_bytes;
}

}  // namespace

TrainOutput train(const TrainConfig& cfg, strategies::Strategy& strategy, const RunContext& ctx,
                  const TrainHooks& hooks) {
  validate(cfg);
  if (cfg.threads > 0) at::set_num_threads(static_cast<int>(cfg.threads));
  const bool leader = ctx.rank == 0;
  // With a communicator the rank's device was chosen with it (its local
  // rank's GPU, or the one a task was bound to).
  auto device = ctx.comm ? ctx.comm->device() : make_current(resolve_device(cfg.device, ctx.local_rank));
  auto dev_desc = hpcbench::describe(device);
  configure_precision(cfg.precision);

  auto mcfg = model_config(cfg);
  auto train_features = training_features(cfg, mcfg);
  FeatureTensors data(train_features);
  const int64_t n = data.size();

  torch::manual_seed(static_cast<uint64_t>(cfg.seed));
  model::BertForQuestionAnswering model(mcfg);
  if (!cfg.checkpoint.empty()) model::load_hf_checkpoint(*model, cfg.checkpoint);
  model->to(device);
  model->train();

  strategies::StrategyContext sctx{device, ctx.rank, ctx.world_size, cfg.precision, ctx.comm, {}};
  {
    std::istringstream hosts(ctx.hosts);
    for (std::string h; hosts >> h;) sctx.hosts.push_back(h);
  }
  strategy.setup(model, sctx);
  if (!hooks.initial_checkpoint.empty()) {
    strategy.unshard_model();  // collective for sharded strategies: every rank
    if (leader) model::save_checkpoint(*model, hooks.initial_checkpoint);
  }
  // dp drives several devices from one process: it gets batch_size rows per
  // device per micro-step, so --batch-size means the same for every strategy.
  const int64_t devices_per_process = strategy.devices();
  const int64_t devices_total = devices_per_process * ctx.world_size;
  const int64_t micro_rows = cfg.batch_size * devices_per_process;
  check_batch_fits(n, ctx.world_size, cfg.batch_size, devices_per_process, cfg.grad_accum);

  OptimizerConfig ocfg{cfg.lr, cfg.weight_decay, cfg.adam_beta1, cfg.adam_beta2, cfg.adam_eps};
  // The whole model's parameters, or (zero, fsdp) this rank's partitions.
  auto optimizer = strategy.make_optimizer(model, ocfg);
  auto params = strategy.optimizer_params(model);

  // Samples each rank sees per epoch, with DistributedSampler's padding rule.
  const int64_t per_rank = (n + ctx.world_size - 1) / ctx.world_size;
  const int64_t micro_per_epoch = (per_rank + micro_rows - 1) / micro_rows;
  const int64_t steps_per_epoch = std::max<int64_t>(micro_per_epoch / cfg.grad_accum, 1);
  const int64_t total_steps = cfg.max_steps > 0 ? cfg.max_steps : cfg.epochs * steps_per_epoch;
  const int64_t warmup = static_cast<int64_t>(std::ceil(cfg.warmup_ratio * total_steps));
  LinearSchedule schedule(*optimizer, cfg.lr, warmup, total_steps);
  GradScaler scaler(device, cfg.precision == "fp16");

  const int64_t global_batch = micro_rows * cfg.grad_accum * ctx.world_size;
  const double flops_per_sample = training_flops_per_sequence(mcfg, cfg.max_seq_length);
  const double peak = cfg.peak_tflops > 0 ? cfg.peak_tflops : peak_tflops(dev_desc.name, cfg.precision);

  if (leader) {
    spdlog::info("model {}: {} parameters, {} layers, hidden {}", mcfg.name, mcfg.num_parameters(),
                 mcfg.num_hidden_layers, mcfg.hidden_size);
    spdlog::info("data: {} training features of {} tokens; {} optimizer steps ({} per epoch), global batch {}",
                 n, cfg.max_seq_length, total_steps, steps_per_epoch, global_batch);
    spdlog::info("device {} ({}), precision {}, {} intra-op threads, {}", device.str(), dev_desc.name,
                 cfg.precision, at::get_num_threads(),
                 peak > 0 ? fmt::format("peak {} TFLOP/s", peak)
                          : fmt::format("MFU n/a: no dense {} peak known for this device name; set --peak-tflops",
                                        cfg.precision));
    if (auto w = slow_precision_warning(device, cfg.precision); !w.empty()) spdlog::warn("{}", w);
    spdlog::info("strategy {}{}: {} process(es) x {} device(s)", strategy.name(),
                 strategy.options().empty() ? "" : " (" + strategy.options() + ")", ctx.world_size,
                 devices_per_process);
  }
  // Where each step's micro-batches start in its epoch's order, so that
  // hooks.data_dump can rebuild every rank's sample order after training
  // instead of inside the timed loop.
  std::vector<std::pair<int64_t, int64_t>> step_origin;  // (epoch, first micro-batch)

  reset_peak_memory(device);
  // Gloo's collectives are timed on host clocks on any device (a GPU shared
  // by several ranks): its works have no device duration.
  StepTimer timer(device, ctx.comm && ctx.comm->wait_mode() == dist::WaitMode::HostBlocking
                              ? CommTiming::HostClocks
                              : (device.is_cpu() ? CommTiming::HostClocks : CommTiming::WorkDuration));
  // The job's Comm reports every collective to the step timer (one timing
  // model for every strategy, train/step_timer.h), and stops before the
  // timer goes, whichever way train() ends.
  struct ObserverScope {
    dist::Comm* comm;
    ~ObserverScope() {
      if (comm) comm->set_observer(nullptr);
    }
  } observer_scope{ctx.comm.get()};
  if (ctx.comm) ctx.comm->set_observer(&timer);
  // Sampled from here to the end of evaluation; stops (joins its thread)
  // whichever way train() ends.
  const int64_t monitor_call = next_train_call();
  auto sampler = start_sampler(cfg, device, ctx, monitor_call);
  tensorboard::RunLog tb({.dir = leader ? hooks.tensorboard_dir : std::filesystem::path(),
                          .global_batch = global_batch, .settings = describe(cfg), .sampler = sampler.get(),
                          .host = hostname(), .several_nodes = ctx.nodes > 1, .flush_secs = 2});
  std::vector<StepRecord> records;
  records.reserve(static_cast<size_t>(total_steps));
  Progress progress(leader, total_steps);
  auto loop_start = std::chrono::steady_clock::now();
  OpCounter ops(count_ops_requested());  // HPCBENCH_COUNT_OPS=1: ATen operations per step (train/op_count.h)
  const double slow_ms = test_slow_rank_ms(ctx.rank);

  int64_t step = 0;
  size_t state_bytes = 0;
  bool stopped = false;  // a stop signal ended the loop early (TrainHooks::stop_before)
  for (int64_t epoch = 0; step < total_steps && !stopped; ++epoch) {
    auto order = epoch_indices(n, epoch, cfg.seed, ctx.rank, ctx.world_size);
    for (int64_t m = 0; m + cfg.grad_accum <= micro_per_epoch && step < total_steps; m += cfg.grad_accum) {
      if (hooks.stop_before && (stopped = hooks.stop_before(step))) break;
      if (sampler) {
        sampler->set_step(step + 1);
        // The timed window's first boundary, read exactly (energy counters).
        if (step == cfg.timing_warmup_steps) sampler->sample_now();
      }
      timer.begin();
      step_origin.emplace_back(epoch, m);
      at::Tensor loss_sum;
      for (int64_t a = 0; a < cfg.grad_accum; ++a) {
        int64_t begin = (m + a) * micro_rows;
        int64_t end = std::min<int64_t>(begin + micro_rows, order.size(0));
        auto batch = data.gather_to(order.slice(0, begin, end), device);
        timer.mark(Phase::Data);
        if (slow_ms > 0 && a == 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(slow_ms));
        // Each micro-batch's loss is a mean over its rows; dividing by the
        // accumulation count makes the summed gradient that of the mean over
        // the whole optimizer step, as Hugging Face's Trainer does.
        double scale = scaler.scale() / static_cast<double>(cfg.grad_accum);
        auto loss = strategy.forward_backward(model, batch, scale, a + 1 == cfg.grad_accum, timer);
        loss_sum = loss_sum.defined() ? loss_sum + loss : loss;
      }
      strategy.finish_gradients(timer);
      // Only fp16's loss scaling can find overflows (one host sync a step to
      // read the verdict, as torch's GradScaler); sharded ranks then agree
      // on it (a collective), so without scaling nothing is asked.
      bool finite = !scaler.enabled() || strategy.all_finite(scaler.unscale(params));
      at::Tensor norm;
      if (finite && cfg.max_grad_norm > 0)
        norm = strategy.clip_grad_norm(model, cfg.max_grad_norm);
      if (finite) {
        optimizer->step();
        strategy.after_optimizer_step();
      }
      // Model-state bytes are measured where they peak: gradients and the
      // optimizer's states both alive, right after the first update (not a
      // skipped fp16 step, which creates no optimizer states).
      if (finite && state_bytes == 0) state_bytes = strategy.model_state_bytes(model, *optimizer);
      scaler.update(!finite);
      double lr = schedule.lr();  // the rate this step used
      schedule.step();
      strategy.zero_grad(*optimizer);
      timer.mark(Phase::Optimizer);
      auto times = timer.end();  // the step's one synchronisation
      StepRecord r{};
      r.ms = times.ms;
      r.phase_ms = times.phase_ms;
      r.step = ++step;
      r.epoch = epoch;
      // Read after the step's synchronisation: these cost no extra wait.
      r.loss = loss_sum.item<double>() / static_cast<double>(cfg.grad_accum);
      r.lr = lr;
      r.comm_ms = times.comm_ms;
      r.comm_exposed_ms = times.comm_exposed_ms;
      r.phase_exposed_ms = times.phase_exposed_ms;
      r.collectives = times.collectives;
      r.comm_untimed = times.comm_untimed;
      r.samples = step_samples(n, ctx.world_size, micro_rows, m, cfg.grad_accum);
      r.grad_norm = norm.defined() ? norm.item<double>() : 0.0;
      r.skipped = !finite;
      records.push_back(r);
      if (ops.enabled()) {
        auto report = ops.take_report(ctx.rank, step);
        if (step > cfg.timing_warmup_steps) std::fputs(report.c_str(), stderr);
      }
      if (tb.enabled())
        tb.step({r.step, r.loss, r.lr, r.grad_norm, r.ms, r.comm_ms, r.comm_exposed_ms,
                 static_cast<int64_t>(peak_memory_bytes(device)), r.samples});
      progress.update(step, r.loss, r.ms);
      if (hooks.after_step) hooks.after_step(step);
      if (leader && (step % cfg.log_every == 0 || step == total_steps)) {
        double sps = 1000.0 * static_cast<double>(r.samples) / r.ms;
        double mfu = peak > 0 ? sps * flops_per_sample / devices_total / (peak * 1e12) : 0;
        progress.done();
        spdlog::info("step {:>6}/{}  loss {:.4f}  lr {:.3e}  {:8.1f} ms  {:9.1f} samples/s  MFU {}", step,
                     total_steps, r.loss, lr, r.ms, sps, peak > 0 ? fmt::format("{:.1f}%", 100 * mfu) : "n/a");
      }
    }
  }
  progress.done();
  if (sampler) {
    sampler->sample_now();  // the timed window's last boundary
    sampler->set_step(monitor::kDone);
  }
  double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - loop_start).count();
  if (stopped && records.empty()) {
    // Stopped before its first step (every rank at the same boundary): no
    // figure exists, and the caller writes no results folder.
    TrainOutput out;
    out.result.status = "interrupted";
    return out;
  }

  // The job's figures: a step ends when its slowest rank ends it, and its
  // loss is the mean over ranks (equal batches: the global batch's mean).
  std::vector<StepTimes> own_timed;  // before the slowest rank's times replace this rank's
  // The same timed steps as the figures below.
  const auto first_timed = static_cast<size_t>(
      std::max<int64_t>(std::min<int64_t>(cfg.timing_warmup_steps, static_cast<int64_t>(records.size()) - 1), 0));
  for (size_t i = first_timed; i < records.size(); ++i)
    own_timed.push_back(StepTimes{records[i].ms, records[i].phase_ms, records[i].comm_ms, records[i].comm_exposed_ms,
                                  records[i].phase_exposed_ms, records[i].collectives, records[i].comm_untimed});
  auto rank_timing_ms = rank_timing(own_timed, ctx);
  auto rank_median_ms = combine_over_ranks(records, ctx);
  // Memory per rank: sharded ranks need not hold the same (padding, the
  // units a rank's partition cuts), and the job needs what the largest holds.
  const double state_theory = strategy.theoretical_state_bytes();
  auto [rank_state_bytes, rank_peak_bytes] = memory_over_ranks(state_bytes, peak_memory_bytes(device), ctx);
  // Figures over the timed steps only: the first steps pay for allocator
  // growth, kernel selection and cache warm-up, which a long run amortises.
  TrainOutput out;
  auto& res = out.result;
  int64_t skip = std::min<int64_t>(cfg.timing_warmup_steps, static_cast<int64_t>(records.size()) - 1);
  if (skip < cfg.timing_warmup_steps && leader)
    spdlog::warn("only {} steps: {} excluded as timing warm-up instead of {}; run more steps (--max-steps) "
                 "for figures you can trust", records.size(), std::max<int64_t>(skip, 0), cfg.timing_warmup_steps);
  skip = std::max<int64_t>(skip, 0);
  std::vector<double> step_ms;
  std::array<std::vector<double>, kPhases> phase;
  std::vector<double> comm, exposed;
  int64_t comm_untimed = 0, samples_timed = 0;
  for (size_t i = static_cast<size_t>(skip); i < records.size(); ++i) {
    comm_untimed += records[i].comm_untimed;
    samples_timed += records[i].samples;
    step_ms.push_back(records[i].ms);
    for (size_t p = 0; p < kPhases; ++p) phase[p].push_back(records[i].phase_ms[p]);
    comm.push_back(records[i].comm_ms);
    exposed.push_back(records[i].comm_exposed_ms);
  }
  auto st = report::summarize(step_ms);
  res.started_at = utc_now_iso();
  res.hpcbench_version = version();
  res.git_commit = git_commit();
  res.hosts = ctx.hosts.empty() ? hostname() : ctx.hosts;
  res.slurm_job_id = ctx.slurm_job_id;
  res.strategy = strategy.name();
  res.strategy_options = strategy.options();
  res.nodes = ctx.nodes;
  res.gpus_per_node = ctx.gpus_per_node * devices_per_process;
  res.world_size = ctx.world_size;
  res.device = c10::DeviceTypeName(device.type(), true);
  res.device_name = dev_desc.name;
  res.precision = cfg.precision;
  res.model = mcfg.name;
  res.parameters = mcfg.num_parameters();
  res.seq_length = cfg.max_seq_length;
  res.batch_per_device = cfg.batch_size;
  res.global_batch = global_batch;
  res.grad_accum = cfg.grad_accum;
  res.data = data_identity(cfg, n);
  res.steps = static_cast<int64_t>(records.size());
  res.timed_steps = static_cast<int64_t>(st.n);
  res.samples_timed = samples_timed;
  res.train_time_s = st.mean * static_cast<double>(st.n) / 1000.0;
  res.wall_time_s = wall_s;
  res.samples_per_s = res.train_time_s > 0 ? static_cast<double>(res.samples_timed) / res.train_time_s : 0;
  res.samples_per_s_per_device = res.samples_per_s / static_cast<double>(devices_total);
  res.tokens_per_s = res.samples_per_s * static_cast<double>(cfg.max_seq_length);
  res.step_ms_median = st.median;
  res.step_ms_p90 = st.p90;
  res.step_ms_max = st.max;
  res.step_ms_mean = st.mean;
  res.step_ms_stddev = st.stddev;
  res.data_ms = report::summarize(phase[size_t(Phase::Data)]).median;
  res.forward_ms = report::summarize(phase[size_t(Phase::Forward)]).median;
  res.backward_ms = report::summarize(phase[size_t(Phase::Backward)]).median;
  res.optimizer_ms = report::summarize(phase[size_t(Phase::Optimizer)]).median;
  res.comm_ms = report::summarize(comm).median;
  res.comm_exposed_ms = report::summarize(exposed).median;
  res.comm_untimed = comm_untimed;
  if (comm_untimed > 0)
    spdlog::warn("{} collective(s) of the timed steps could not be timed on rank {} and are missing from comm_ms "
                 "(comm_untimed in the results)", comm_untimed, ctx.rank);
  res.flops_per_sample = flops_per_sample;
  res.tflops_per_device = res.samples_per_s_per_device * flops_per_sample / 1e12;
  res.peak_tflops = peak;
  res.mfu = peak > 0 ? res.tflops_per_device / peak : 0;
  res.peak_memory_bytes = *std::max_element(rank_peak_bytes.begin(), rank_peak_bytes.end());
  res.model_state_bytes = *std::max_element(rank_state_bytes.begin(), rank_state_bytes.end());
  res.model_state_theory_bytes = static_cast<int64_t>(state_theory);
  res.final_train_loss = records.empty() ? 0 : records.back().loss;
  if (stopped) res.status = "interrupted";

  auto& d = out.details;
  d["config"] = nlohmann::json::object();
  for (auto& [k, v] : describe(cfg)) d["config"][k] = v;
  auto& env = d["environment"];
  env["host"] = hostname();
  env["device"] = device.str();
  env["device_name"] = dev_desc.name;
  env["intra_op_threads"] = at::get_num_threads();
  env["hardware_threads"] = hardware_threads();
  for (auto& [k, v] : job_environment()) d["environment"]["variables"][k] = v;
  auto& steps = d["steps"] = nlohmann::json::array();
  for (auto& r : records) {
    nlohmann::json j = {{"step", r.step}, {"epoch", r.epoch}, {"loss", r.loss}, {"lr", r.lr},
                        {"ms", r.ms}, {"comm_ms", r.comm_ms}, {"comm_exposed_ms", r.comm_exposed_ms},
                        {"collectives", r.collectives}, {"comm_untimed", r.comm_untimed}, {"samples", r.samples},
                        {"grad_norm", r.grad_norm}, {"skipped", r.skipped}};
    for (size_t p = 0; p < kPhases; ++p) {
      j[std::string(phase_name(Phase(p))) + "_ms"] = r.phase_ms[p];
      j[std::string(phase_name(Phase(p))) + "_exposed_ms"] = r.phase_exposed_ms[p];
    }
    steps.push_back(std::move(j));
  }
  d["timing_warmup_steps_excluded"] = skip;
  d["steps_planned"] = total_steps;
  d["devices_per_process"] = devices_per_process;
  if (!rank_median_ms.empty()) d["rank_step_ms_median"] = rank_median_ms;
  d["rank_timing_ms"] = rank_timing_ms;
  d["rank_model_state_bytes"] = rank_state_bytes;
  d["rank_peak_memory_bytes"] = rank_peak_bytes;
  // Which attention kernel the timed steps ran: the GPU comparisons with
  // Hugging Face name it on both sides (a padded batch cannot take flash).
  d["sdpa_backend"] = model::sdpa_backend_used();

  // Whole parameters on every rank before the checkpoint and evaluation
  // (a collective for sharded strategies, a no-op for the others).
  strategy.unshard_model();
  if (leader && !hooks.final_checkpoint.empty()) model::save_checkpoint(*model, hooks.final_checkpoint);
  if (leader && !hooks.data_dump.empty()) {
    auto f = data.gather(at::arange(n, at::kLong));
    std::map<std::string, at::Tensor> dump{{"input_ids", f.input_ids}, {"token_type_ids", f.token_type_ids},
                                           {"attention_mask", f.attention_mask}, {"start_positions", f.start_positions},
                                           {"end_positions", f.end_positions}};
    if (!step_origin.empty()) {
      // [steps, grad_accum, micro_rows] per rank; a short last micro-batch
      // is padded with -1.
      for (int r = 0; r < ctx.world_size; ++r) {
        auto o = at::full({static_cast<int64_t>(step_origin.size()), cfg.grad_accum, micro_rows}, -1, at::kLong);
        int64_t epoch = -1;
        at::Tensor order;
        for (size_t k = 0; k < step_origin.size(); ++k) {
          auto [e, m] = step_origin[k];
          if (e != epoch) order = epoch_indices(n, epoch = e, cfg.seed, r, ctx.world_size);
          for (int64_t a = 0; a < cfg.grad_accum; ++a) {
            int64_t begin = (m + a) * micro_rows;
            int64_t end = std::min<int64_t>(begin + micro_rows, order.size(0));
            o[static_cast<int64_t>(k)][a].slice(0, 0, end - begin).copy_(order.slice(0, begin, end));
          }
        }
        dump["order_rank" + std::to_string(r)] = o;
      }
    }
    model::write_safetensors(dump, hooks.data_dump);
  }

  // Every rank holds the whole model (unshard_model above) and evaluates its
  // share of the dev set; rank 0 gathers the logits and scores them.
  if (!cfg.eval_data.empty() && !stopped) {
    if (sampler) sampler->set_step(monitor::kEvaluation);
    monitor::nvtx::Scope range(!device.is_cpu(), "evaluation");
    evaluate_into(cfg, model, device, ctx, out);
    if (sampler) sampler->set_step(monitor::kDone);
  }
  finish_sampling(sampler, cfg, ctx, skip + 1, res.steps, monitor_call, out);
  tb.finish(out.details, report::to_json(res), out.utilisation_csv);
  return out;
}

}  // namespace hpcbench::train
