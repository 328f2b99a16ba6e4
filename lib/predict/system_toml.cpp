#include "predict/system_toml.h"

#include <toml++/toml.h>

#include <cmath>

#include "core/bounded_read.h"
#include "core/error.h"

namespace hpcbench::predict {

namespace {

// The slowest link a system file may describe: 10 MB/s, under a tenth of
// 1 Gb Ethernet (125 MB/s). Below it a figure is a unit mistaken (bits,
// MB/s) or a typo, and the prediction would be years of GPU time for a step
// that takes seconds.
constexpr double kMinBandwidthGBps = 0.01;

double number(const toml::table& t, const std::string& file, const std::string& key, bool required, double dflt) {
  auto v = t[key];
  if (!v) {
    if (required) fail("{}: missing key {}", file, key);
    return dflt;
  }
  auto d = v.value<double>();
  if (!d) fail("{}: {} must be a number", file, key);
  // TOML writes nan and inf; neither is a network's figure.
  if (!std::isfinite(*d)) fail("{}: {} = {} must be a finite number", file, key, *d);
  return *d;
}

Tier tier(const toml::table& root, const std::string& file, const std::string& name) {
  auto* t = root[name].as_table();
  if (!t) fail("{}: missing table [{}]", file, name);
  Tier r;
  r.link = (*t)["link"].value_or(std::string{});
  r.bandwidth_GBps = number(*t, file, "bandwidth_GBps", true, 0);
  r.latency_us = number(*t, file, "latency_us", true, 0);
  r.efficiency = number(*t, file, "efficiency", false, 1);
  if (!(r.bandwidth_GBps > 0)) fail("{}: [{}] bandwidth_GBps {} must be positive", file, name, r.bandwidth_GBps);
  if (r.bandwidth_GBps < kMinBandwidthGBps)
    fail("{}: [{}] bandwidth_GBps {} is below {} GB/s (gigabytes a second, not bits; 1 Gb Ethernet is 0.125): "
         "no network that carries a job's collectives is that slow, and its GPU-hours would be absurd",
         file, name, r.bandwidth_GBps, kMinBandwidthGBps);
  if (!(r.latency_us >= 0)) fail("{}: [{}] latency_us {} must not be negative", file, name, r.latency_us);
  if (!(r.efficiency > 0 && r.efficiency <= 1))
    fail("{}: [{}] efficiency {} must be in (0, 1]", file, name, r.efficiency);
  if (r.bandwidth_GBps * r.efficiency < kMinBandwidthGBps)
    fail("{}: [{}] bandwidth_GBps {} x efficiency {} is below {} GB/s: no network that carries a job's collectives "
         "is that slow", file, name, r.bandwidth_GBps, r.efficiency, kMinBandwidthGBps);
  return r;
}

}  // namespace

System read_system(const std::string& path) {
  toml::table root;
  const std::string text = read_flag_file("--system", path, file_limit::kConfig);
  try {
    root = toml::parse(text, path);
  } catch (const toml::parse_error& e) {
    fail("--system {}: {}", path, std::string(e.description()));
  }
  System s;
  s.file = path;
  s.name = root["name"].value_or(path);
  s.device_name = root["device_name"].value_or(std::string{});
  double gpn = number(root, path, "gpus_per_node", true, 0);
  if (gpn != std::floor(gpn) || gpn < 1 || gpn > kMaxGpusPerNode)
    fail("{}: gpus_per_node = {} must be a whole number from 1 to {}", path, gpn, kMaxGpusPerNode);
  s.gpus_per_node = static_cast<int>(gpn);
  s.device = root["device"].value_or(std::string("cuda"));
  if (s.device != "cuda" && s.device != "cpu")
    fail("{}: device = \"{}\" must be \"cuda\" (the default) or \"cpu\"", path, s.device);
  s.memory_bytes = number(root, path, "memory_GiB", false, 0) * 1024.0 * 1024 * 1024;
  if (s.memory_bytes < 0) fail("{}: memory_GiB must not be negative", path);
  s.intra = tier(root, path, "intra");
  s.inter = tier(root, path, "inter");
  return s;
}

}  // namespace hpcbench::predict
