#include "monitor/job_sampling.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>

#include "core/hostinfo.h"
#include "results/utilisation_csv.h"

namespace hpcbench::monitor {

namespace {

int64_t next_call() {
  static std::atomic<int64_t> calls{0};
  return calls++;
}

}  // namespace

JobSampling::JobSampling(JobSamplingOptions options, Exchange exchange)
    : options_(std::move(options)), exchange_(std::move(exchange)), call_(next_call()) {
  if (options_.interval_ms <= 0) return;
  auto pids = exchange_(key("pid"), std::to_string(::getpid()));
  // The sampler reads its node's ranks' GPUs alone, found by PCI bus id.
  auto buses = exchange_(key("bus"), rank_bus_id(options_.bus_id, options_.local_rank));
  if (options_.local_rank != 0) return;
  SamplerOptions o;
  o.interval_ms = options_.interval_ms;
  o.gpus = options_.gpus;
  const auto& hosts = options_.hosts;
  for (int r = 0; r < static_cast<int>(pids.size()); ++r) {
    if (hosts.size() == pids.size() && hosts[size_t(r)] != hosts[size_t(options_.rank)]) continue;
    if (options_.cpu_ranks) o.ranks.emplace_back(r, static_cast<pid_t>(std::stol(pids[size_t(r)])));
    o.bus_ids.push_back(buses[size_t(r)]);
  }
  sampler_ = std::make_unique<Sampler>(std::move(o));
  if (!sampler_->gpu_note().empty()) spdlog::info("GPU sampling off: {}", sampler_->gpu_note());
  sampler_->start();
}

JobSampling::~JobSampling() = default;

std::string JobSampling::key(const std::string& what) const { return fmt::format("monitor/{}/{}", call_, what); }

std::string JobSampling::host() const {
  const auto& hosts = options_.hosts;
  return size_t(options_.rank) < hosts.size() ? hosts[size_t(options_.rank)] : hostname();
}

JobSampling::Job JobSampling::finish(int64_t first_timed, int64_t last_timed) {
  Job job;
  if (options_.interval_ms <= 0) return job;
  std::string rows;
  nlohmann::json mine = nullptr;
  if (sampler_) {
    sampler_->stop();
    auto samples = sampler_->samples();
    rows = csv_rows(samples, host(), first_timed - 1, sampler_->gpu_bus_ids());
    auto s = summarize(samples, first_timed, last_timed);
    auto gpus = nlohmann::json::array();
    for (auto& [index, bus] : sampler_->gpu_bus_ids()) gpus.push_back({{"index", index}, {"bus_id", bus}});
    mine = {{"host", host()}, {"gpu_sampling", sampler_->gpu_sampling()}, {"gpu_note", sampler_->gpu_note()},
            {"gpus", gpus},
            {"gpus_of", !sampler_->gpu_sampling() ? "" : sampler_->gpu_selection().all ? "node" : "job"},
            {"gpus_note", sampler_->gpu_selection().note},
            {"samples", samples.size()}, {"util_of", s.util_of}, {"util_mean_percent", s.util_mean_percent},
            {"util_samples", s.util_samples}, {"power_mean_w", s.power_mean_w}, {"energy_j", s.energy_j},
            {"energy_method", s.energy_method}, {"nvml_peak_memory_bytes", s.nvml_peak_memory_bytes}};
  }
  // Through the rendezvous store: a node's rows are text of a few MB at most
  // for hour-long runs at the default interval.
  auto all_rows = exchange_(key("rows"), rows);
  auto all_summaries = exchange_(key("summary"), mine.dump());
  if (options_.rank != 0) return job;
  job.utilisation_csv = results::utilisation_header();
  for (auto& r : all_rows) job.utilisation_csv += r;
  std::vector<Summary> nodes;
  auto& d = job.details;
  d["sample_ms"] = options_.interval_ms;
  d["timed_steps"] = {first_timed, last_timed};
  d["nodes"] = nlohmann::json::array();
  for (auto& text : all_summaries) {
    auto j = nlohmann::json::parse(text);
    if (j.is_null()) continue;
    d["nodes"].push_back(j);
    Summary s;
    s.util_of = j["util_of"];
    s.util_mean_percent = j["util_mean_percent"];
    s.util_samples = j["util_samples"];
    s.power_mean_w = j["power_mean_w"];
    s.energy_j = j["energy_j"];
    s.energy_method = j["energy_method"];
    s.nvml_peak_memory_bytes = j["nvml_peak_memory_bytes"];
    nodes.push_back(s);
  }
  job.summary = combine(nodes);
  return job;
}

}  // namespace hpcbench::monitor
