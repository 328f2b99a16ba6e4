// The run record is filled by one function (run/result.h) from the facts
// build() computed, where the job ran, the combined steps, the evaluation
// and the sampler's summary: each field checked against the figure worked
// out by hand from the same inputs.
#include "test_catch.h"

#include "run/result.h"

using namespace hpcbench;

namespace {

run::Run facts() {
  run::Run r;
  r.cfg.precision = "bf16";
  r.cfg.max_seq_length = 64;
  r.cfg.activation_checkpointing = true;
  r.engine.kernels = EnginePolicy::Kernels::Fused;
  r.engine.qkv = EnginePolicy::Qkv::Packed;
  r.engine.weights = EnginePolicy::Weights::Resident;
  r.started_at = "2026-01-02T03:04:05Z";
  r.device_description.name = "test cpu";
  r.model_config = model::BertConfig::preset("bert-tiny");
  r.data_identity = "synthetic:16:seed7";
  r.strategy_name = "ddp";
  r.topology.options = "buckets=1";
  r.topology.state_theory_bytes = 1234;
  r.batch.per_device = 4;
  r.batch.grad_accum = 2;
  r.batch.global_batch = 16;
  r.flops_per_sample = 1e9;
  r.hardware_flops_per_sample = 1.5e9;
  r.peak_tflops = 2.0;
  r.cpu_cores = 3;
  r.threads_per_rank = 2;
  return r;
}

run::RunContext two_ranks() {
  run::RunContext ctx;
  ctx.world_size = 2;
  ctx.nodes = 1;
  ctx.gpus_per_node = 2;
  ctx.hosts = "n1 n1";
  ctx.slurm_job_id = "77";
  ctx.repeat_group = "grp";
  ctx.repeat_index = 2;
  return ctx;
}

// Four steps, the first the timing warm-up: timed steps of 10, 20 and 30 ms,
// 8 samples each.
run::JobSteps four_steps() {
  run::JobSteps job;
  const double ms[] = {100, 10, 20, 30};
  for (int i = 0; i < 4; ++i) {
    results::StepRecord s;
    s.step = i + 1;
    s.samples = 8;
    s.loss = 4.0 - i;
    s.times.ms = ms[i];
    s.times.phase_ms[size_t(results::Phase::Forward)] = ms[i] / 2;
    s.times.comm_ms = ms[i] / 10;
    job.steps.push_back(s);
  }
  job.timed_from = 1;
  job.rank_state_bytes = {3, 4};
  job.rank_peak_bytes = {9, 5};
  job.wall_s = 1.5;
  job.steps_planned = 4;
  return job;
}

}  // namespace

TEST_CASE("the record's identity comes from the run's facts and the job's place") {
  auto r = run::run_result(facts(), two_ranks(), four_steps(), nullptr, nullptr);
  CHECK(r.started_at == "2026-01-02T03:04:05Z");
  CHECK(r.hosts == "n1 n1");
  CHECK(r.slurm_job_id == "77");
  CHECK(r.repeat_group == "grp");
  CHECK(r.repeat_index == 2);
  CHECK(r.strategy == "ddp");
  CHECK(r.strategy_options == "buckets=1");
  CHECK(r.world_size == 2);
  CHECK(r.gpus_per_node == 2);
  CHECK(r.device == "cpu");
  CHECK(r.device_name == "test cpu");
  CHECK(r.precision == "bf16");
  CHECK(r.model == "bert-tiny");
  CHECK(r.parameters == model::BertConfig::preset("bert-tiny").num_parameters());
  CHECK(r.seq_length == 64);
  CHECK(r.batch_per_device == 4);
  CHECK(r.grad_accum == 2);
  CHECK(r.global_batch == 16);
  CHECK(r.data == "synthetic:16:seed7");
  CHECK(r.activation_checkpointing == 1);
  CHECK(r.fused == 1);
  CHECK(r.cuda_graph == "off");
  CHECK(r.cpu_cores == 3);
  CHECK(r.threads_per_rank == 2);
  CHECK(r.status == "ok");
}

TEST_CASE("the figures are the timed steps' and the largest rank's") {
  auto r = run::run_result(facts(), two_ranks(), four_steps(), nullptr, nullptr);
  CHECK(r.steps == 4);
  CHECK(r.timed_steps == 3);
  CHECK(r.samples_timed == 24);
  CHECK(r.train_time_s == Approx(0.060));
  CHECK(r.wall_time_s == 1.5);
  CHECK(r.samples_per_s == Approx(400));           // 24 samples in 60 ms
  CHECK(r.samples_per_s_per_device == Approx(200));  // one device per rank, two ranks
  CHECK(r.tokens_per_s == Approx(400 * 64));
  CHECK(r.step_ms_median == Approx(20));
  CHECK(r.step_ms_max == Approx(30));
  CHECK(r.step_ms_mean == Approx(20));
  CHECK(r.forward_ms == Approx(10));
  CHECK(r.comm_ms == Approx(2));
  CHECK(r.tflops_per_device == Approx(0.2));  // 200 samples/s x 1 GFLOP
  CHECK(r.mfu == Approx(0.1));                // of 2 TFLOP/s
  CHECK(r.hfu == Approx(0.15));               // 1.5 GFLOP with the recomputed forward
  CHECK(r.peak_memory_bytes == 9);
  CHECK(r.model_state_bytes == 4);
  CHECK(r.model_state_theory_bytes == 1234);
  CHECK(r.final_train_loss == Approx(1.0));
  CHECK(r.bubble_fraction == -1);  // not a pipeline
  // Neither evaluation nor sampling: their fields keep "none".
  CHECK(r.val_loss == -1);
  CHECK(r.eval_load_s == -1);
  CHECK(r.utilisation_mean_percent == -1);
  CHECK(r.samples_per_kj == -1);
}

TEST_CASE("evaluation and the sampler's summary fill their fields") {
  run::Evaluation ev;
  ev.val_loss = 2.5;
  ev.exact_match = 40;
  ev.f1 = 50;
  ev.load_s = 1;
  ev.forward_s = 2;
  ev.postprocess_s = 3;
  ev.metric_s = 4;
  monitor::Summary s;
  s.util_of = "cpu";
  s.util_mean_percent = 90;
  s.power_mean_w = 100;
  s.energy_j = 2000;
  s.energy_method = "counter";
  auto r = run::run_result(facts(), two_ranks(), four_steps(), &ev, &s);
  CHECK(r.val_loss == 2.5);
  CHECK(r.exact_match == 40);
  CHECK(r.f1 == 50);
  CHECK(r.eval_postprocess_s == 3);
  CHECK(r.utilisation_of == "cpu");
  CHECK(r.energy_j == 2000);
  CHECK(r.samples_per_kj == Approx(12));  // 24 timed samples over 2 kJ
  CHECK(r.status == "ok");
}

TEST_CASE("a stop during training or evaluation makes the run interrupted") {
  auto job = four_steps();
  job.stopped = true;
  CHECK(run::run_result(facts(), two_ranks(), job, nullptr, nullptr).status == "interrupted");
  run::Evaluation ev;
  ev.interrupted = true;
  CHECK(run::run_result(facts(), two_ranks(), four_steps(), &ev, nullptr).status == "interrupted");
}

TEST_CASE("a job stopped before its first step records who it was and nothing measured") {
  run::JobSteps none;
  none.stopped = true;
  auto r = run::run_result(facts(), two_ranks(), none, nullptr, nullptr);
  CHECK(r.status == "interrupted");
  CHECK(r.strategy == "ddp");
  CHECK(r.steps == 0);
  CHECK(r.samples_per_s == 0);
  CHECK(r.peak_memory_bytes == 0);
}

TEST_CASE("--cuda-graph's outcome and the steps it left outside") {
  auto run = facts();
  run.engine.step = EnginePolicy::Step::Graph;
  auto job = four_steps();
  job.cuda_graph = "captured";
  job.short_steps = 2;
  CHECK(run::run_result(run, two_ranks(), job, nullptr, nullptr).cuda_graph == "captured, 2 short steps outside");
}
