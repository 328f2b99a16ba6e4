// `hpcbench predict`: each strategy's step time, throughput, speedup,
// efficiency and memory per rank at N GPUs on M nodes, from a one-device
// baseline, the model's layout and a network description (lib/predict,
// docs/scaling-model.md).
#include <fmt/format.h>

#include <spdlog/spdlog.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "model/bert_config.h"
#include "predict/baseline.h"
#include "predict/collective.h"
#include "predict/layout.h"
#include "predict/step_model.h"
#include "predict/system_toml.h"
#include "preflight/run_settings.h"
#include "results/csv.h"
#include "specs/registry.h"
#include "train/model_shape.h"

namespace hpcbench::cli {

namespace {

struct PredictOptions {
  std::string baseline, baseline_row, system, comm, model, csv, reduce_dtype;
  std::string strategies;  // labels; empty: every strategy's showcase
  std::vector<int> nodes{1}, gpus_per_node;
  int64_t global_batch = 0;
  bool allow_device_mismatch = false;
};

// More ranks than any machine has: beyond it a count is a typo, and the
// model's ring arithmetic would overflow.
constexpr int64_t kMaxWorld = 1 << 20;

std::string ops_text(const predict::Prediction& p) {
  std::string s;
  for (auto& [op, t] : p.exposed_by_op)
    if (t * 1000 >= 0.005) s += fmt::format("{}{} {:.2f}", s.empty() ? "" : ", ", op, t * 1000);
  return s.empty() ? "-" : s;
}

// The network (a system file or bench-comm's table) and the ranks a node to
// predict at; `device_warning` receives the baseline-against-system warning.
std::unique_ptr<predict::CommModel> network(const PredictOptions& o, const predict::Baseline& base,
                                            std::vector<int>& gpn, std::string& device_warning) {
  if (!o.system.empty()) {
    auto sys = predict::read_system(o.system);
    device_warning = predict::check_device(base, sys, o.allow_device_mismatch);
    if (gpn.empty()) gpn = {sys.gpus_per_node};
    for (int g : gpn)
      if (g > sys.gpus_per_node) fail("--gpus-per-node {}: {} has {} GPUs a node", g, o.system, sys.gpus_per_node);
    return std::make_unique<predict::AlphaBeta>(sys);
  }
  auto m = predict::read_bench_comm(o.comm);
  if (gpn.empty()) gpn = {m->ranks()};
  return m;
}

// --strategies, or every strategy's showcase.
std::vector<strategies::Choice> choices_of(const PredictOptions& o, const std::string& precision) {
  std::vector<strategies::Choice> choices;
  if (!o.strategies.empty()) {
    choices = strategies::parse_labels(o.strategies, "--strategies");
  } else {
    std::string all;
    for (auto* spec : strategies::specs())
      for (auto& label : spec->showcase()) all += (all.empty() ? "" : ",") + label;
    choices = strategies::parse_labels(all, "--strategies");
  }
  for (auto& c : choices) c.validate(precision);
  return choices;
}

predict::StepOptions step_options(const PredictOptions& o, const predict::Baseline& base) {
  predict::StepOptions so;
  so.compute_bytes = predict::compute_bytes(base.precision);
  so.reduce_bytes = o.reduce_dtype.empty() ? so.compute_bytes : predict::compute_bytes(o.reduce_dtype);
  // The baseline's weights: resident ones (--fused under bf16) are counted
  // with their masters, and their gradients are in the compute dtype.
  so.resident = base.engine.resident();
  // The replicated strategies reduce the parameters' fp32 gradients unless
  // told otherwise (an fp16 compression hook, apex's O2 fp16 model), or
  // unless the weights are resident.
  so.param_grad_bytes = !o.reduce_dtype.empty() ? so.reduce_bytes : so.resident ? so.compute_bytes : 4;
  if (!o.reduce_dtype.empty() && o.reduce_dtype != "fp32" && o.reduce_dtype != "bf16" && o.reduce_dtype != "fp16")
    fail("--reduce-dtype {}: must be fp32, bf16 or fp16", o.reduce_dtype);
  return so;
}

void print_header(const predict::Baseline& base, const predict::Layout& layout, const predict::CommModel& comm,
                  const std::string& device_warning) {
  if (!device_warning.empty()) {
    spdlog::warn("{}", device_warning);
    fmt::print("# WARNING: {}\n", device_warning);
  }
  fmt::print("# baseline {}: {} {} seq {} batch {} x{} accumulation, {:.2f} ms a step, {:.2f} samples/s{}\n",
             base.source, base.model, base.precision, base.seq, base.batch, base.grad_accum, base.step_s * 1000,
             base.samples_per_s(),
             base.phases_assumed ? " (throughput only: forward:backward 1:2 assumed, optimizer time unknown)" : "");
  fmt::print("# model {}: {} parameters, {} units\n", layout.model, layout.parameters, layout.unit_numel.size());
  fmt::print("# memory model: {}\n", predict::memory_model_text(base, layout.parameters));
  fmt::print("# network {}\n", comm.describe());
  fmt::print("{:<24} {:>5} {:>4} {:>5} {:>5} {:>10} {:>10} {:>9} {:>9} {:>11} {:>8} {:>6} {:>10}  {}\n", "strategy",
             "nodes", "gpn", "world", "accum", "step_ms", "compute_ms", "opt_ms", "exposed", "samples/s", "speedup",
             "eff", "mem_GiB", "exposed ms by collective");
}

// Accumulation steps that keep --global-batch at this shape (the baseline's
// when none is given).
int grad_accum_at(const PredictOptions& o, const predict::Baseline& base, const strategies::Choice& choice,
                  const predict::Shape& shape) {
  if (o.global_batch <= 0) return static_cast<int>(base.grad_accum);
  const int replicas = choice.spec().data_parallel_size(choice.options(), shape);
  int64_t per = base.batch * replicas;
  if (o.global_batch % per != 0)
    fail("--global-batch {}: not a multiple of batch {} x {} replicas", o.global_batch, base.batch, replicas);
  if (o.global_batch / per > std::numeric_limits<int>::max())
    fail("--global-batch {}: {} accumulation steps at {} replicas is beyond any run", o.global_batch,
         o.global_batch / per, replicas);
  return static_cast<int>(o.global_batch / per);
}

// One row on the terminal and in the CSV.
void print_row(const std::string& label, const predict::Shape& shape, int accum, const predict::Prediction& p,
               const predict::StepOptions& so, std::string& csv) {
  fmt::print("{:<24} {:>5} {:>4} {:>5} {:>5} {:>10.2f} {:>10.2f} {:>9.2f} {:>9.2f} {:>11.2f} {:>8.3f} {:>6.3f} "
             "{:>10.3f}  {}\n",
             label, shape.nodes, shape.gpus_per_node, shape.world(), accum, p.step_s * 1000,
             (p.compute_s + p.other_s) * 1000, p.optimizer_s * 1000, p.exposed_s * 1000, p.samples_per_s, p.speedup,
             p.efficiency, p.memory_bytes / (1 << 30), ops_text(p));
  auto ex = [&](const std::string& op) {
    auto it = p.exposed_by_op.find(op);
    return it == p.exposed_by_op.end() ? 0.0 : it->second * 1000;
  };
  double rest = p.exposed_s * 1000 - ex("all_reduce") - ex("all_gather") - ex("reduce_scatter");
  csv += fmt::format("{},{},{},{},{},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},"
                     "{:.6f},{:.6f},{:.6f},{:.0f},{:.0f},{:.0f},{}\n",
                     results::csv_field(label), shape.nodes, shape.gpus_per_node, shape.world(), accum,
                     p.step_s * 1000, p.compute_s * 1000, p.other_s * 1000, p.optimizer_s * 1000, p.comm_s * 1000,
                     p.exposed_s * 1000, ex("all_reduce"), ex("all_gather"), ex("reduce_scatter"), std::max(0.0, rest),
                     p.samples_per_s, p.speedup, p.efficiency, p.memory_bytes, p.memory_persistent, p.memory_working,
                     so.resident ? "resident" : "fp32");
}

int run_predict(const PredictOptions& o) {
  if (o.system.empty() == o.comm.empty()) fail("give exactly one of --system FILE and --comm FILE");
  std::string model_path;
  auto base = predict::read_baseline(o.baseline, o.baseline_row, &model_path);
  if (!o.model.empty()) model_path = o.model;
  std::error_code ec;
  bool is_file = model_path.ends_with(".json") || std::filesystem::is_regular_file(model_path, ec);
  auto mcfg = is_file ? model::BertConfig::from_json(model_path) : model::BertConfig::preset(model_path);
  if (base.seq <= 0) fail("--baseline {}: seq_length is missing", o.baseline);
  if (o.global_batch < 0) fail("--global-batch {}: must be positive", o.global_batch);
  for (int n : o.nodes)
    if (n < 1) fail("--nodes {}: must be at least 1", n);
  for (int g : o.gpus_per_node)
    if (g < 1) fail("--gpus-per-node {}: must be at least 1", g);
  std::string device_warning;
  std::vector<int> gpn = o.gpus_per_node;
  auto comm = network(o, base, gpn, device_warning);
  for (int n : o.nodes)
    for (int g : gpn)
      if (static_cast<int64_t>(n) * g > kMaxWorld)
        fail("--nodes {} x --gpus-per-node {}: {} ranks, more than the {} this model predicts for", n, g,
             static_cast<int64_t>(n) * g, kMaxWorld);
  auto choices = choices_of(o, base.precision);
  auto layout = predict::model_layout(mcfg, base.seq);
  const auto model_shape = train::model_shape(mcfg);
  auto so = step_options(o, base);
  print_header(base, layout, *comm, device_warning);
  std::string csv =
      "strategy,nodes,gpus_per_node,world_size,grad_accum,step_ms,compute_ms,other_ms,optimizer_ms,comm_ms,"
      "comm_exposed_ms,exposed_all_reduce_ms,exposed_all_gather_ms,exposed_reduce_scatter_ms,exposed_other_ms,"
      "samples_per_s,speedup,efficiency,memory_bytes,memory_persistent_bytes,memory_working_bytes,weights\n";
  size_t predicted = 0;
  for (auto& choice : choices)
    for (int n : o.nodes)
      for (int g : gpn) {
        predict::Shape shape{n, g};
        // The check `run` makes of the same layout (preflight/run_settings.h),
        // then what only the model can rule out (more pipeline stages than it
        // has layers): a row left out with its reason.
        try {
          preflight::check_strategy_fits(choice, shape, base.batch, model_shape, mcfg.name);
          if (auto why = predict::engine_refusal(base, choice); !why.empty()) fail("{}", why);
          so.grad_accum = grad_accum_at(o, base, choice, shape);
          auto p = predict::predict_step(base, layout, choice, shape, *comm, so);
          print_row(choice.label(), shape, so.grad_accum, p, so, csv);
          ++predicted;
        } catch (const UserError& e) {
          if (std::string(e.what()).starts_with("--global-batch")) throw;
          fmt::print("# {} at {} x {}: not predicted: {}\n", choice.label(), n, g, e.what());
        }
      }
  if (predicted == 0)
    fmt::print("# no layout predicted: none of the strategies runs at the shapes asked for (the reasons above)\n");
  if (!o.csv.empty()) write_file_atomic(o.csv, csv);
  return 0;
}

}  // namespace

Action add_predict(CLI::App& app) {
  auto o = std::make_shared<PredictOptions>();
  auto* cmd = app.add_subcommand("predict", "Predict each strategy's step time, speedup and memory at N GPUs on M "
                                            "nodes from a one-device baseline and a network description");
  cmd->add_option("--baseline", o->baseline, "One-device run folder, run.json/summary.csv, or a results/reference CSV")
      ->required();
  cmd->add_option("--baseline-row", o->baseline_row, "run_id of the row to use when the file holds several");
  cmd->add_option("--system", o->system, "System description (configs/systems/*.toml)");
  cmd->add_option("--comm", o->comm, "hpcbench bench-comm --output file measured on the ranks to predict");
  cmd->add_option("--strategies", o->strategies,
                  "Comma-separated strategy labels, as `run --strategy` takes them (" + strategies::spec_names() +
                      ", with options: zero:stage=3,prefetch=off); default: a few configurations of each");
  cmd->add_option("--nodes", o->nodes, "Node counts (comma-separated)")->delimiter(',')->capture_default_str();
  cmd->add_option("--gpus-per-node", o->gpus_per_node,
                  "Ranks per node (comma-separated; default: the system's GPUs a node, or bench-comm's ranks)")
      ->delimiter(',');
  cmd->add_option("--model", o->model, "Model preset or config.json (default: the baseline's)");
  cmd->add_option("--reduce-dtype", o->reduce_dtype,
                  "Gradient reduction dtype where a label does not name one: sharded strategies (default: the "
                  "compute dtype) and replicated ones (default: fp32)");
  cmd->add_option("--global-batch", o->global_batch,
                  "Keep this global batch at every shape (strong scaling: accumulation = global / (batch x ranks))");
  cmd->add_flag("--allow-device-mismatch", o->allow_device_mismatch,
                "Predict even when the baseline ran on another kind of device than the --system file describes "
                "(a CPU baseline with a GPU system): the figures then say little, and a warning heads them");
  cmd->add_option("--csv", o->csv, "Also write the predictions to this CSV file");
  return [o] { return run_predict(*o); };
}

}  // namespace hpcbench::cli
