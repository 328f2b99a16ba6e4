#include "tensorboard/run_log.h"

#include "results/utilisation_csv.h"

#include <fmt/format.h>
#include <unistd.h>
#include <spdlog/spdlog.h>

#include <cmath>
#include <cstdio>
#include <exception>
#include <map>
#include <optional>
#include <sstream>

#include "core/bounded_read.h"
#include "core/error.h"
#include "core/hostinfo.h"
#include "monitor/sampler.h"
#include "tensorboard/event_writer.h"

namespace hpcbench::tensorboard {

namespace fs = std::filesystem;

namespace {

std::string settings_markdown(const std::vector<std::pair<std::string, std::string>>& settings) {
  std::string md = "| setting | value |\n| --- | --- |\n";
  for (auto& [k, v] : settings) md += fmt::format("| {} | {} |\n", k, v.empty() ? "(empty)" : v);
  return md;
}

std::vector<Scalar> step_scalars(const StepValues& v, int64_t global_batch, bool with_memory) {
  const double samples = static_cast<double>(v.samples > 0 ? v.samples : global_batch);
  std::vector<Scalar> out;
  if (v.has_loss) out.push_back({"train/loss", v.loss});
  out.insert(out.end(), {{"train/lr", v.lr},
                          {"train/grad_norm", v.grad_norm},
                          {"perf/step_ms", v.ms},
                          {"perf/samples_per_s", v.ms > 0 ? 1000.0 * samples / v.ms : 0.0},
                          {"perf/comm_ms", v.comm_ms},
                          {"perf/comm_exposed_ms", v.comm_exposed_ms}});
  if (with_memory) out.push_back({"perf/peak_memory_bytes", static_cast<double>(v.peak_memory_bytes)});
  return out;
}

// One sampled device's tag prefix.
std::string device_prefix(const std::string& host, bool several_nodes, bool gpu, int index) {
  std::string dev = gpu ? fmt::format("gpu{}", index) : fmt::format("cpu_rank{}", index);
  return several_nodes ? fmt::format("device/{}/{}", host, dev) : fmt::format("device/{}", dev);
}

// Energy counters count from the driver's start: shown from the first sample on.
void add_sample(EventWriter& w, const results::UtilisationRow& s, bool several_nodes, double start_wall,
                std::map<std::string, double>& energy_origin) {
  auto prefix = device_prefix(s.host, several_nodes, s.gpu, s.index);
  std::vector<Scalar> values;
  if (s.util_percent) values.push_back({prefix + "/utilisation_percent", *s.util_percent});
  if (s.memory_bytes) values.push_back({prefix + "/memory_bytes", static_cast<double>(*s.memory_bytes)});
  if (s.power_w) values.push_back({prefix + "/power_w", *s.power_w});
  if (s.energy_mj) {
    const double mj = static_cast<double>(*s.energy_mj);
    auto origin = energy_origin.try_emplace(prefix, mj).first->second;
    values.push_back({prefix + "/energy_j", (mj - origin) / 1000.0});
  }
  if (!values.empty()) w.scalars(std::llround(s.time_s * 1000.0), start_wall + s.time_s, values);
}

}  // namespace

RunLog::RunLog(RunLogOptions options) : options_(std::move(options)) {
  if (options_.dir.empty()) return;
  if (!available()) {
    spdlog::warn("--tensorboard on: this hpcbench was built without the TensorBoard writer (see --version); "
                 "no event file is written");
    return;
  }
  start_wall_ = wall_now();
  uncaught_at_start_ = std::uncaught_exceptions();
  WriterOptions wo;
  wo.flush_secs = options_.flush_secs;
  if (options_.sampler) wo.on_flush = [this] { add_live_samples(); };
  writer_ = std::make_unique<EventWriter>(options_.dir, std::move(wo));
  writer_->text("run/settings", 0, settings_markdown(options_.settings), start_wall_);
  writer_->flush();
  spdlog::info("TensorBoard: {} (tensorboard --logdir {})", writer_->path().string(),
               options_.dir.parent_path().parent_path().string());
}

RunLog::~RunLog() {
  if (!writer_) return;
  fs::path file = writer_->path();
  writer_.reset();
  // Training ended by an error: the run leaves no results, so no log either
  // (results/README.md). A killed process gets here not at all, and its log
  // stays readable up to the last flush.
  if (std::uncaught_exceptions() > uncaught_at_start_) discard_event_files(file.parent_path());
}

void RunLog::step(const StepValues& v) {
  if (!writer_) return;
  double wall = wall_now();
  step_walls_.emplace_back(v.step, wall);
  step_memory_.push_back(v.peak_memory_bytes);
  writer_->scalars(v.step, wall, step_scalars(v, options_.global_batch, true));
}

void RunLog::add_live_samples() {
  auto samples = options_.sampler->samples();
  for (; samples_done_ < samples.size(); ++samples_done_) {
    auto& s = samples[samples_done_];
    results::UtilisationRow r(s);
    r.host = options_.host;
    add_sample(*writer_, r, options_.several_nodes, start_wall_, live_energy_origin_);
  }
}

void RunLog::finish(const std::vector<results::StepRecord>& steps, const results::RunResult& result,
                    const std::string& utilisation_csv) {
  if (!writer_) return;
  fs::path file = writer_->path();
  writer_.reset();  // the live file, complete up to here
  // The run's results matter more than its log: a log that cannot be
  // rewritten stays as it was, with rank 0's figures.
  try {
    rewrite(file, steps, result, utilisation_csv);
  } catch (const std::exception& e) {
    spdlog::warn("TensorBoard: {} keeps rank 0's figures: {}", file.string(), e.what());
  }
}

void RunLog::rewrite(const fs::path& file, const std::vector<results::StepRecord>& steps,
                     const results::RunResult& result, const std::string& utilisation_csv) {
  // Per process: two runs of one name share their live folder (live_dir).
  fs::path tmp = file.parent_path() / fmt::format(".rewrite.partial-{}", ::getpid());
  {
    auto w = EventWriter::at(tmp, {.flush_secs = 0, .on_flush = {}});
    w->text("run/settings", 0, settings_markdown(options_.settings), start_wall_);
    std::map<int64_t, std::pair<double, int64_t>> live;  // step -> (wall time, memory)
    for (size_t i = 0; i < step_walls_.size(); ++i)
      live[step_walls_[i].first] = {step_walls_[i].second, step_memory_[i]};
    int64_t last_step = 0;
    double last_wall = start_wall_;
    for (auto& s : steps) {
      StepValues v;
      v.step = s.step;
      v.loss = s.loss;
      v.lr = s.lr;
      v.grad_norm = s.grad_norm;
      v.ms = s.times.ms;
      v.comm_ms = s.times.comm_ms;
      v.comm_exposed_ms = s.times.comm_exposed_ms;
      v.samples = s.samples;
      auto it = live.find(v.step);
      double wall = it != live.end() ? it->second.first : last_wall;
      if (it != live.end()) v.peak_memory_bytes = it->second.second;
      w->scalars(v.step, wall, step_scalars(v, options_.global_batch, it != live.end()));
      last_step = v.step;
      last_wall = wall;
    }
    auto rows = results::parse_utilisation(utilisation_csv);
    bool several = false;
    for (auto& r : rows) several = several || r.host != rows.front().host;
    std::map<std::string, double> origin;
    for (auto& r : rows) add_sample(*w, r, several, start_wall_, origin);
    std::vector<Scalar> eval;
    for (auto [value, tag] : {std::pair{result.val_loss, "eval/loss"}, {result.exact_match, "eval/exact_match"},
                              {result.f1, "eval/f1"}})
      if (value >= 0) eval.push_back({tag, value});
    if (!eval.empty()) w->scalars(last_step, wall_now(), eval);
    try {
      w->close();  // a rewrite the disk cut short must not replace the live file
    } catch (...) {
      std::remove(tmp.c_str());
      throw;
    }
  }
  // rename(2) replaces the live file whole: a reader sees the old or the new.
  if (std::rename(tmp.c_str(), file.c_str()) != 0) fail("cannot replace {}", file.string());
}

namespace {

// events.out.tfevents.<seconds>.<host>.<pid>.<n>, as EventWriter names them.
std::vector<fs::path> own_event_files(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  if (dir.empty() || !fs::is_directory(dir, ec)) return out;
  auto mine = fmt::format(".{}.{}.", hostname(), ::getpid());
  for (auto& e : fs::directory_iterator(dir, ec)) {
    auto name = e.path().filename().string();
    if (name.starts_with("events.out.tfevents.") && name.find(mine) != std::string::npos) out.push_back(e.path());
  }
  return out;
}

}  // namespace

// A run's own events: a scalar or two a step, so a long run's file is a few
// MiB, and one of a GiB is not this program's.
constexpr size_t kMaxEventFileBytes = kGiB;

std::vector<std::pair<std::string, std::string>> event_files(const fs::path& dir) {
  std::vector<std::pair<std::string, std::string>> out;
  for (auto& f : own_event_files(dir)) out.emplace_back(f.filename().string(), read_file(f, kMaxEventFileBytes));
  return out;
}

// unlink/rmdir rather than std::filesystem's removal, which in binaries
// linked with the torch wheel resolves to libtorch's copy (core/atomic_file.h).
void discard_event_files(const fs::path& dir) {
  for (auto& f : own_event_files(dir)) ::unlink(f.c_str());
  if (dir.empty()) return;
  // Each only when empty: another run may be writing beside this one.
  ::rmdir(dir.c_str());
  if (dir.parent_path().filename() == ".running") ::rmdir(dir.parent_path().c_str());
}

fs::path live_dir(const fs::path& results_dir, const std::string& run_name) {
  return results_dir / ".running" / run_name;
}

}  // namespace hpcbench::tensorboard
