#include "monitor/sampler.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include <fmt/format.h>

#include "core/injection.h"
#include "core/split.h"
#include "monitor/nvml.h"
#include "monitor/proc.h"
#include "results/utilisation_csv.h"

namespace hpcbench::monitor {

namespace {
double steady_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

std::string normalise_bus_id(const std::string& id) {
  unsigned long long domain = 0;
  unsigned bus = 0, device = 0, function = 0;
  int end = 0;
  if (std::sscanf(id.c_str(), "%llx:%x:%x.%x%n", &domain, &bus, &device, &function, &end) != 4 ||
      static_cast<size_t>(end) != id.size() || domain > 0xffffffffULL || bus > 0xff || device > 0x1f || function > 7)
    return "";
  return fmt::format("{:04X}:{:02X}:{:02X}.{:X}", domain, bus, device, function);
}

GpuSelection select_gpus(const std::vector<std::string>& nvml_bus_ids, const std::vector<std::string>& rank_bus_ids) {
  GpuSelection all;
  for (unsigned i = 0; i < nvml_bus_ids.size(); ++i) all.indices.push_back(i);
  std::set<std::string> wanted;
  for (auto& id : rank_bus_ids) {
    auto n = normalise_bus_id(id);
    if (n.empty()) {
      all.note = "the PCI bus id of some rank's device is not known (a CPU run, or the driver cannot say): every "
                 "GPU of the node is sampled, other jobs' too";
      return all;
    }
    wanted.insert(n);
  }
  if (wanted.empty()) {
    all.note = "no rank's PCI bus id given: every GPU of the node is sampled";
    return all;
  }
  GpuSelection mine;
  mine.all = false;
  for (unsigned i = 0; i < nvml_bus_ids.size(); ++i)
    if (auto n = normalise_bus_id(nvml_bus_ids[i]); !n.empty() && wanted.erase(n)) mine.indices.push_back(i);
  if (!wanted.empty()) {
    all.note = fmt::format("NVML shows no GPU with the PCI bus id {} (of this node's ranks): every GPU of the node "
                           "is sampled, other jobs' too",
                           *wanted.begin());
    return all;
  }
  return mine;
}

std::string rank_bus_id(const std::string& found, int local_rank) {
  auto list = injected("bus_ids");
  if (!list) return found;
  auto ids = split(*list);
  return local_rank >= 0 && static_cast<size_t>(local_rank) < ids.size() ? ids[static_cast<size_t>(local_rank)] : "";
}

Sampler::Sampler(SamplerOptions options) : options_(std::move(options)) {
  if (!options_.clock) options_.clock = steady_s;
  t0_ = options_.clock();
  if (options_.gpus) {
    nvml_ = std::make_unique<Nvml>();
    lost_.assign(nvml_->device_count(), false);
    for (unsigned i = 0; i < nvml_->device_count(); ++i) nvml_bus_ids_.push_back(nvml_->bus_id(i));
    selection_ = select_gpus(nvml_bus_ids_, options_.bus_ids);
    if (gpu_sampling() && selection_.all && selection_.indices.size() > 1) spdlog::info("GPU sampling: {}", selection_.note);
  }
  last_cpu_.resize(options_.ranks.size());
  if (!options_.ranks.empty()) {
    std::vector<pid_t> pids;
    for (auto& [rank, pid] : options_.ranks) pids.push_back(pid);
    procs_ = std::make_unique<ProcTrees>(pids);
  }
}

Sampler::~Sampler() { stop(); }

void Sampler::start() {
  if (options_.interval_ms <= 0 || thread_.joinable()) return;
  thread_ = std::thread([this] { loop(); });
}

void Sampler::stop() {
  {
    std::lock_guard<std::mutex> lock(stop_mutex_);
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Sampler::loop() {
  const auto interval = std::chrono::milliseconds(options_.interval_ms);
  auto next = std::chrono::steady_clock::now();
  std::unique_lock<std::mutex> lock(stop_mutex_);
  while (!stopping_) {
    lock.unlock();
    try {
      take();
    } catch (const std::exception& e) {
      // A sampler that cannot read must not take the run down with it.
      spdlog::warn("sampling stopped: {}", e.what());
      return;
    }
    lock.lock();
    // Fixed rate, not fixed gaps: a slow read does not shift later samples.
    next += interval;
    stop_cv_.wait_until(lock, next, [this] { return stopping_; });
  }
}

void Sampler::sample_now() { take(); }

bool Sampler::gpu_sampling() const { return nvml_ && nvml_->available(); }

std::string Sampler::gpu_note() const { return nvml_ && !nvml_->available() ? nvml_->why_not() : ""; }

std::map<int, std::string> Sampler::gpu_bus_ids() const {
  std::map<int, std::string> out;
  if (!gpu_sampling()) return out;
  for (unsigned i : selection_.indices) out[static_cast<int>(i)] = normalise_bus_id(nvml_bus_ids_[i]);
  return out;
}

std::vector<Sample> Sampler::samples() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return samples_;
}

void Sampler::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t step = step_.load(std::memory_order_relaxed);
  const double t = options_.clock() - t0_;
  if (gpu_sampling()) {
    for (unsigned i : selection_.indices) {
      if (lost_[i]) continue;
      auto g = nvml_->read(i);
      if (g.lost) {
        lost_[i] = true;
        spdlog::warn("GPU {} no longer answers NVML (lost); its sampling stops", i);
        continue;
      }
      Sample s{t, step, true, static_cast<int>(i), g.util_percent, g.memory_used_bytes, g.power_w,
               g.sm_clock_mhz, g.temperature_c, g.throttle_reasons, g.energy_mj};
      samples_.push_back(s);
    }
  }
  if (procs_) {
    auto usage = procs_->read();
    for (size_t k = 0; k < usage.size(); ++k) {
      if (!usage[k]) continue;  // the rank has ended
      Sample s;
      s.time_s = t;
      s.step = step;
      s.gpu = false;
      s.index = options_.ranks[k].first;
      s.memory_bytes = usage[k]->rss_bytes;
      if (auto& prev = last_cpu_[k]; prev && t > prev->first)
        // A child that ended takes its CPU time out of the tree: never below 0.
        s.util_percent = std::max(0.0, 100.0 * (usage[k]->cpu_s - prev->second) / (t - prev->first));
      last_cpu_[k] = std::make_pair(t, usage[k]->cpu_s);
      samples_.push_back(s);
    }
  }
}

Summary summarize(const std::vector<Sample>& samples, int64_t first_step, int64_t last_step) {
  Summary out;
  auto timed = [&](const Sample& s) { return s.step >= first_step && s.step <= last_step; };
  std::map<int, std::vector<const Sample*>> gpus;
  double util_sum = 0;
  int64_t util_n = 0;
  double cpu_sum = 0;
  int64_t cpu_n = 0;
  for (auto& s : samples) {
    if (s.gpu && s.memory_bytes) out.nvml_peak_memory_bytes = std::max(out.nvml_peak_memory_bytes, *s.memory_bytes);
    if (!timed(s)) continue;
    if (s.gpu) {
      gpus[s.index].push_back(&s);
      if (s.util_percent) util_sum += *s.util_percent, ++util_n;
    } else if (s.util_percent) {
      cpu_sum += *s.util_percent, ++cpu_n;
    }
  }
  if (util_n > 0) {
    out.util_of = "gpu", out.util_mean_percent = util_sum / double(util_n), out.util_samples = util_n;
  } else if (cpu_n > 0) {
    out.util_of = "cpu", out.util_mean_percent = cpu_sum / double(cpu_n), out.util_samples = cpu_n;
  }
  bool any_power = false, all_counter = true;
  double power = 0, energy = 0;
  for (auto& [index, rows] : gpus) {
    double psum = 0;
    int64_t pn = 0;
    for (auto* s : rows)
      if (s->power_w) psum += *s->power_w, ++pn;
    if (pn > 0) power += psum / double(pn), any_power = true;
    // The counter where every timed sample of this GPU has it; otherwise
    // the trapezoidal integral of its power samples.
    bool counter = rows.size() >= 2 && std::all_of(rows.begin(), rows.end(), [](auto* s) { return bool(s->energy_mj); });
    if (counter) {
      energy += static_cast<double>(*rows.back()->energy_mj - *rows.front()->energy_mj) / 1000.0;
    } else {
      all_counter = false;
      const Sample* prev = nullptr;
      for (auto* s : rows) {
        if (!s->power_w) continue;
        if (prev) energy += 0.5 * (*prev->power_w + *s->power_w) * (s->time_s - prev->time_s);
        prev = s;
      }
    }
  }
  if (!gpus.empty()) {
    out.energy_j = energy;
    out.energy_method = all_counter ? "counter" : "power_integral";
  }
  if (any_power) out.power_mean_w = power;
  return out;
}

Summary combine(const std::vector<Summary>& nodes) {
  Summary out;
  double util_sum = 0;
  int64_t util_n = 0;
  std::string util_of;
  for (auto& n : nodes) {
    if (n.util_samples <= 0) continue;
    // GPU utilisation wins over CPU where nodes differ (they do not in one job).
    if (util_of.empty() || (util_of == "cpu" && n.util_of == "gpu")) util_of = n.util_of, util_sum = 0, util_n = 0;
    if (n.util_of != util_of) continue;
    util_sum += n.util_mean_percent * double(n.util_samples);
    util_n += n.util_samples;
  }
  if (util_n > 0) out.util_of = util_of, out.util_mean_percent = util_sum / double(util_n), out.util_samples = util_n;
  for (auto& n : nodes) {
    if (n.power_mean_w >= 0) out.power_mean_w = std::max(out.power_mean_w, 0.0) + n.power_mean_w;
    if (n.energy_j >= 0) {
      out.energy_j = std::max(out.energy_j, 0.0) + n.energy_j;
      out.energy_method = out.energy_method.empty() || out.energy_method == n.energy_method ? n.energy_method
                                                                                             : "power_integral";
    }
    out.nvml_peak_memory_bytes = std::max(out.nvml_peak_memory_bytes, n.nvml_peak_memory_bytes);
  }
  return out;
}

const char* phase_of(int64_t step, int64_t warmup_steps) {
  if (step == kSetup) return "setup";
  if (step == kEvaluation) return "evaluation";
  if (step < 0) return "end";
  return step <= warmup_steps ? "warmup" : "timed";
}

std::string csv_rows(const std::vector<Sample>& samples, const std::string& host, int64_t warmup_steps,
                     const std::map<int, std::string>& gpu_bus_ids) {
  std::string out;
  for (auto& s : samples) {
    results::UtilisationRow r(s);
    r.host = host;
    r.phase = phase_of(s.step, warmup_steps);
    auto it = r.gpu ? gpu_bus_ids.find(s.index) : gpu_bus_ids.end();
    if (it != gpu_bus_ids.end()) r.bus_id = it->second;
    out += results::utilisation_line(r);
  }
  return out;
}

}  // namespace hpcbench::monitor
