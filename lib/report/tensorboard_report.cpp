#include "report/tensorboard_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "core/atomic_file.h"
#include "core/error.h"
#include "report/report_tables.h"
#include "tensorboard/event_writer.h"

namespace hpcbench::report {

namespace fs = std::filesystem;
namespace tb = tensorboard;

namespace {

constexpr const char* kMarker = ".hpcbench-tensorboard-report";

// A row name as one folder name.
std::string folder_name(const std::string& name) {
  std::string out;
  for (char c : name) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.') ? c : '_';
  return out.empty() || out.front() == '.' ? "run" + out : out;
}

std::vector<std::pair<std::string, tb::HParamValue>> hparams_of(const results::RunResult& r) {
  return {{"strategy", r.strategy},
          {"options", r.strategy_options.empty() ? std::string("-") : r.strategy_options},
          {"devices", static_cast<double>(results::devices(r))},
          {"nodes", static_cast<double>(r.nodes)},
          {"precision", r.precision},
          {"model", r.model},
          {"seq_length", static_cast<double>(r.seq_length)},
          {"batch_per_device", static_cast<double>(r.batch_per_device)},
          {"global_batch", static_cast<double>(r.global_batch)},
          {"device", r.device_name.empty() ? r.device : r.device_name},
          {"cuda_graph", r.cuda_graph.empty() ? std::string("-") : r.cuda_graph},
          {"fused", static_cast<double>(r.fused)}};
}

const std::map<std::string, std::string> kHParamHelp = {
    {"strategy", "parallel training strategy"},
    {"options", "the strategy's options (bucket size, stage, sharding, ...)"},
    {"devices", "devices (GPUs, or CPU ranks) of the run"},
    {"nodes", "nodes of the run"},
    {"precision", "fp32, tf32, fp16 or bf16"},
    {"model", "model name"},
    {"seq_length", "tokens per sequence"},
    {"batch_per_device", "sequences per device per micro-step"},
    {"global_batch", "sequences per optimizer step, all devices"},
    {"device", "device name"},
    {"cuda_graph", "--cuda-graph: off, captured, or not captured and why"},
    {"fused", "--fused: 1 with the fused kernels and bf16-resident weights"}};

const std::vector<tb::MetricDef> kMetrics = {
    {"metrics/throughput", "throughput (samples/s)", "median over the configuration's repeats"},
    {"metrics/speedup", "speedup", "throughput over the baseline's (same work)"},
    {"metrics/efficiency", "efficiency", "speedup over the device ratio"},
    {"metrics/mfu", "MFU", "model FLOP utilisation, fraction of the peak"},
    {"metrics/memory_gib_per_device", "memory per device (GiB)", "peak memory of the largest rank"},
    {"metrics/comm_exposed_ms", "exposed comm (ms)", "communication not hidden behind compute, median per step"},
};

}  // namespace

size_t write_tensorboard_report(const Comparison& comparison, const fs::path& dir) {
  std::error_code ec;
  if (fs::exists(dir, ec)) {
    if (!fs::is_directory(dir, ec)) fail("--tensorboard {}: exists and is not a folder", dir.string());
    bool empty = fs::directory_iterator(dir, ec) == fs::directory_iterator();
    if (ec) fail("--tensorboard {}: cannot list it: {}", dir.string(), ec.message());
    if (!empty && !fs::exists(dir / kMarker, ec))
      fail("--tensorboard {}: the folder is not empty and not an earlier TensorBoard report; give a new folder",
           dir.string());
    remove_tree(dir);
  }
  fs::create_directories(dir, ec);
  if (ec) fail("--tensorboard {}: cannot create it: {}", dir.string(), ec.message());
  write_file_atomic(dir / kMarker, "written by hpcbench report --tensorboard; replaced by the next one\n");

  std::vector<const ComparisonRow*> rows;
  for (auto& row : comparison.rows)
    if (row.run.status == "ok") rows.push_back(&row);

  double now = tb::wall_now();
  std::map<std::string, std::vector<tb::HParamValue>> domains;
  std::vector<std::string> order;
  for (auto* row : rows)
    for (auto& [name, value] : hparams_of(row->run)) {
      auto& d = domains[name];
      if (d.empty() && std::find(order.begin(), order.end(), name) == order.end()) order.push_back(name);
      if (std::find(d.begin(), d.end(), value) == d.end()) d.push_back(value);
    }
  std::vector<tb::HParamDef> defs;
  for (auto& name : order) defs.push_back({name, kHParamHelp.at(name), domains[name]});
  // MFU needs a known peak (none on CPUs): a column no row fills is left out.
  auto metrics = kMetrics;
  if (std::none_of(rows.begin(), rows.end(), [](auto* row) { return row->run.mfu > 0; }))
    std::erase_if(metrics, [](auto& m) { return m.tag == "metrics/mfu"; });
  {
    tb::EventWriter top(dir, {.flush_secs = 0, .on_flush = {}});
    top.hparams_experiment(defs, metrics, now);
    // The verdicts as the report states them, with the test's own p-values.
    if (auto sig = significance_lines(comparison); !sig.empty()) {
      std::string text;
      for (auto& line : sig) text += "- " + line + "\n";
      top.text("report/significance", 0, text, now);
    }
    top.close();  // a full disk is an error, not an empty report
  }

  std::set<std::string> used;
  for (auto* row : rows) {
    auto name = row_name(*row);
    auto folder = folder_name(name);
    for (int i = 2; !used.insert(folder).second; ++i) folder = fmt::format("{}-{}", folder_name(name), i);
    tb::EventWriter w(dir / folder, {.flush_secs = 0, .on_flush = {}});
    w.hparams_session_start(hparams_of(row->run), name, now);
    const auto& r = row->run;
    std::vector<tb::Scalar> metrics{{"metrics/throughput", r.samples_per_s}};
    if (row->speedup) metrics.push_back({"metrics/speedup", *row->speedup});
    if (row->efficiency) metrics.push_back({"metrics/efficiency", *row->efficiency});
    if (r.mfu > 0) metrics.push_back({"metrics/mfu", r.mfu});
    metrics.push_back({"metrics/memory_gib_per_device", static_cast<double>(r.peak_memory_bytes) / (1 << 30)});
    metrics.push_back({"metrics/comm_exposed_ms", r.comm_exposed_ms});
    w.scalars(0, now, metrics);
    // The repeats as the run's steps, in their own order.
    auto repeats = row->repeats;
    std::sort(repeats.begin(), repeats.end(), [](auto& a, auto& b) { return a.repeat_index < b.repeat_index; });
    for (size_t i = 0; i < repeats.size(); ++i)
      w.scalars(static_cast<int64_t>(i + 1), now,
                {{"repeats/samples_per_s", repeats[i].samples_per_s}, {"repeats/step_ms_median", repeats[i].step_ms_median}});
    w.hparams_session_end(true, now);
    w.close();
  }
  return rows.size();
}

}  // namespace hpcbench::report
