// `hpcbench plan`: the fastest layouts of a model on a cluster, searched with
// the memory model and the scaling model from a one-device baseline
// (lib/plan), and the sweep that verifies the top of the ranking.
#include <fmt/format.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "core/error.h"
#include "core/progress.h"
#include "core/split.h"
#include "core/time.h"
#include "model/bert_config.h"
#include "plan/search.h"
#include "plan/text.h"
#include "plan/verify.h"
#include "predict/baseline.h"
#include "predict/layout.h"
#include "predict/system_toml.h"
#include "sweep/submit.h"
#include "sweep_checks.h"
#include "train/flops.h"
#include "train/model_shape.h"

namespace hpcbench::cli {

namespace {

struct PlanArgs {
  std::string baseline, baseline_row, system, memory_limit, out, hpcbench, engine_ratios, precisions;
  int nodes = 1, gpus_per_node = 0, top = 5, verify = 3;
  int64_t global_batch = 0;
  bool submit = false, allow_device_mismatch = false, no_sweep = false;
  sweep::SweepOptions opts;
};

// "80GiB", "40GB", "512MiB", "1.5e9": bytes.
double parse_bytes(const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string unit = text.substr(used);
  double scale = 0;
  for (auto [name, s] : {std::pair<const char*, double>{"", 1}, {"B", 1}, {"KiB", 1024.0}, {"MiB", 1024.0 * 1024},
                         {"GiB", 1024.0 * 1024 * 1024}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}})
    if (unit == name) scale = s;
  if (used == 0 || scale == 0 || !std::isfinite(v) || v <= 0)
    fail("--memory-limit {}: not a size (a positive number with GiB, MiB, GB, MB or no unit: bytes)", text);
  return v * scale;
}

bool given(const std::vector<std::string>& args, const std::string& flag) {
  for (auto& a : args)
    if (a == flag || a.starts_with(flag + "=")) return true;
  return false;
}

// --max-steps after '--', or 100 (what the cost line assumes then).
int64_t max_steps(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string v;
    if (args[i] == "--max-steps" && i + 1 < args.size()) v = args[i + 1];
    else if (args[i].starts_with("--max-steps=")) v = args[i].substr(12);
    if (!v.empty()) {
      try {
        return std::max<int64_t>(1, std::stoll(v));
      } catch (const std::exception&) {
        return 100;  // the sweep's dry run names the bad value
      }
    }
  }
  return 100;
}

// The request from the flags, the baseline, the system file and the model.
plan::Request make_request(const PlanArgs& a, predict::System& sys, strategies::ModelLayout& layout,
                           std::string& model_path) {
  plan::Request r;
  r.base = predict::read_baseline(a.baseline, a.baseline_row, &model_path);
  if (r.base.seq <= 0) fail("--baseline {}: seq_length is missing", a.baseline);
  sys = predict::read_system(a.system);
  if (auto w = predict::check_device(r.base, sys, a.allow_device_mismatch); !w.empty())
    fmt::print("# WARNING: {}\n", w);
  if (a.nodes < 1) fail("--nodes {}: must be at least 1", a.nodes);
  r.shape = {a.nodes, a.gpus_per_node > 0 ? a.gpus_per_node : sys.gpus_per_node};
  if (a.gpus_per_node < 0 || r.shape.gpus_per_node > sys.gpus_per_node)
    fail("--gpus-per-node {}: {} has {} GPUs a node", a.gpus_per_node, a.system, sys.gpus_per_node);
  if (a.global_batch < 1) fail("--global-batch {}: must be at least 1", a.global_batch);
  if (a.top < 1) fail("--top {}: must be at least 1", a.top);
  if (a.verify < 1 && !a.no_sweep) fail("--verify {}: must be at least 1 (the layouts the sweep runs beside the baseline)", a.verify);
  if (a.no_sweep && a.submit) fail("--no-sweep with --submit: there is no sweep to submit");
  r.global_batch = a.global_batch;
  r.memory_limit = a.memory_limit.empty() ? sys.memory_bytes : parse_bytes(a.memory_limit);
  r.device_kind = sys.device;
  r.device_name = sys.device_name;
  for (std::string p : {"fp32", "tf32", "bf16", "fp16"}) r.peak_tflops[p] = train::peak_tflops(sys.device_name, p);
  r.baseline_noise = r.base.step_noise;
  if (!a.precisions.empty()) r.precisions = split(a.precisions);
  std::error_code ec;
  const bool is_file = model_path.ends_with(".json") || std::filesystem::is_regular_file(model_path, ec);
  auto mcfg = is_file ? model::BertConfig::from_json(model_path) : model::BertConfig::preset(model_path);
  layout = predict::model_layout(mcfg, r.base.seq);
  r.model = train::model_shape(mcfg);
  return r;
}

// The sweep's options beside the flags: the baseline's model and sequence
// length unless the run flags after '--' say otherwise (each job's precision
// is its layout's: plan/verify.cpp).
void complete_sweep_options(PlanArgs& a, const plan::Request& r, const predict::System& sys,
                            const std::string& model_path) {
  auto& o = a.opts;
  o.out_dir = a.out.empty() ? "results/sweeps/plan-" + local_timestamp() : a.out;
  std::error_code ec;
  o.hpcbench = a.hpcbench.empty() ? std::filesystem::read_symlink("/proc/self/exe", ec)
                                  : std::filesystem::absolute(a.hpcbench, ec);
  if (ec || o.hpcbench.empty()) fail("--hpcbench: cannot tell where the hpcbench binary is; pass it");
  if (!std::filesystem::exists(o.hpcbench, ec))
    fail("--hpcbench {}: {}", o.hpcbench.string(), ec ? ec.message() : "no such file");
  o.cpu = sys.device == "cpu";
  std::vector<std::string> add;
  if (!given(o.run_args, "--model")) add.insert(add.end(), {"--model", model_path});
  if (!given(o.run_args, "--max-seq-length")) add.insert(add.end(), {"--max-seq-length", std::to_string(r.base.seq)});
  o.run_args.insert(o.run_args.begin(), add.begin(), add.end());
}

int run_plan(PlanArgs& a) {
  predict::System sys;
  strategies::ModelLayout layout;
  std::string model_path;
  auto r = make_request(a, sys, layout, model_path);
  predict::AlphaBeta comm(sys);
  r.layout = &layout;
  r.comm = &comm;
  plan::EngineSteps engine_steps;
  if (!a.engine_ratios.empty()) {
    engine_steps = plan::read_engine_steps(a.engine_ratios);
    r.engine_steps = &engine_steps;
  }
  // A line a second once the search takes longer than one.
  const auto start = LoopProgress::Clock::now();
  std::unique_ptr<LoopProgress> bar;
  auto res = plan::search(r, [&](int64_t done, int64_t total) {
    if (!bar)
      bar = std::make_unique<LoopProgress>("plan", "layouts", total, true, isatty(STDERR_FILENO) != 0,
                                           std::chrono::seconds(1), start);
    bar->update(done);
  });
  bar.reset();
  fmt::print("{}", plan::plan_text(res, r, a.top));
  fmt::print("{}", plan::cost_text(res, r, a.verify, max_steps(a.opts.run_args)));
  if (a.no_sweep) return 0;
  complete_sweep_options(a, r, sys, model_path);
  auto jobs = plan::verify_jobs(res, r, a.verify, a.opts);
  check_run_flags(a.opts, jobs);
  auto sweep = plan::write_verify_sweep(a.opts, jobs, plan::plan_record(res, r, jobs, a.system));
  int rc = 0;
  if (a.submit && sweep::submit_sweep(sweep).failed > 0) rc = 1;
  fmt::print("Verifying sweep: {} ({} jobs: the baseline and the top {}){}\n", (sweep.dir / "sweep.json").string(),
             sweep.jobs.size(), sweep.jobs.size() - 1,
             a.submit ? "" : "; submit with --submit, or `hpcbench sweep --resume --out " + sweep.dir.string() + "`");
  return rc;
}

}  // namespace

Action add_plan(CLI::App& app) {
  auto a = std::make_shared<PlanArgs>();
  auto* cmd = app.add_subcommand(
      "plan", "Search every layout (strategy, options, dp x tp x pp, micro-batches, recomputation) of a job with the "
              "memory and scaling models from a one-device baseline, rank them, and write the sweep that verifies "
              "the top k beside the baseline");
  cmd->add_option("--baseline", a->baseline, "One-device run folder, run.json/summary.csv, or a results/reference CSV")
      ->required();
  cmd->add_option("--baseline-row", a->baseline_row, "run_id of the row to use when the file holds several");
  cmd->add_option("--system", a->system, "System description (configs/systems/*.toml)")->required();
  cmd->add_option("--nodes", a->nodes, "Nodes of the job")->capture_default_str();
  // Given, a value must be one: 0 or '' would otherwise read as "not given"
  // and plan the system's default without a word.
  cmd->add_option("--gpus-per-node", a->gpus_per_node, "GPUs a node (default: the system's)")
      ->check(CLI::Validator(
          [](std::string& v) {
            return v.find_first_not_of("0123456789") == std::string::npos && v.find_first_not_of('0') != std::string::npos
                       ? std::string()
                       : "'" + v + "' must be a whole number of at least 1";
          },
          "INT>=1"));
  cmd->add_option("--global-batch", a->global_batch, "Sequences per optimizer step")->required();
  cmd->add_option("--memory-limit", a->memory_limit,
                  "Bytes a rank may hold (80GiB, 40GB, ...; default: the system file's memory_GiB)")
      ->check(CLI::Validator(
          [](std::string& v) { return v.empty() ? std::string("empty; give a size such as 40GiB") : std::string(); },
          "SIZE"));
  cmd->add_option("--engine-ratios", a->engine_ratios,
                  "Recorded steps under each engine setting (results/reference/gpu/engine-ratios.csv): search "
                  "--cuda-graph and --fused on a CUDA device, each priced by its recorded ratio to the baseline's "
                  "engine (without it the engine stays the baseline's)")
      ->check(CLI::Validator(
          [](std::string& v) { return v.empty() ? std::string("empty; give a file such as engine-ratios.csv") : std::string(); },
          "FILE"));
  cmd->add_option("--precisions", a->precisions,
                  "Comma-separated precisions to search (fp32, tf32, bf16, fp16; default: the baseline's and every "
                  "one the device's peak rates allow)")
      // An empty list read as "not given" searched every precision without a word.
      ->check(CLI::Validator(
          [](std::string& v) { return v.empty() ? std::string("empty; give a list such as bf16,fp16") : std::string(); },
          "LIST"));
  cmd->add_option("--top", a->top, "Layouts to print")->capture_default_str();
  cmd->add_option("--verify", a->verify, "Layouts the written sweep runs beside the baseline")->capture_default_str();
  cmd->add_option("--out", a->out, "Sweep folder (default results/sweeps/plan-<time>)");
  cmd->add_flag("--submit", a->submit, "Queue the sweep's jobs with sbatch, as `sweep --submit` does");
  cmd->add_flag("--no-sweep", a->no_sweep, "Print the ranking only; write no sweep");
  cmd->add_option("--hpcbench", a->hpcbench, "The binary the jobs run (default: this one)");
  cmd->add_option("--partition", a->opts.partition, "sbatch --partition");
  cmd->add_option("--account", a->opts.account, "sbatch --account");
  cmd->add_option("--time", a->opts.time, "sbatch --time (e.g. 00:30:00)");
  cmd->add_option("--gres-type", a->opts.gres_type, "GPU type in --gres=gpu:<type>:N (e.g. a100)");
  cmd->add_option("--cpus-per-task", a->opts.cpus_per_task, "sbatch --cpus-per-task (threads per rank)");
  cmd->add_flag("--allow-device-mismatch", a->allow_device_mismatch,
                "Plan even when the baseline ran on another kind of device than the system file describes");
  cmd->add_option("run_args", a->opts.run_args, "After '--': extra 'hpcbench run' flags for every job");
  return [a] { return run_plan(*a); };
}

}  // namespace hpcbench::cli
