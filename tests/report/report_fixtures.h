#pragma once
// Hand-made runs whose figures are easy to check by hand: a baseline at
// 100 seq/s, strong-scaling ddp and zero runs (global batch 8), a weak-
// scaling ddp run (batch 8 per device), a run in another precision and a
// failed run, all on one GPU model of unknown name.
#include <filesystem>
#include <string>
#include <vector>

#include "results/run_reader.h"

namespace hpcbench::test {

inline results::RunResult make_run(const std::string& id, const std::string& strategy, int64_t world,
                                  int64_t global_batch, double samples_per_s, int64_t memory_mib) {
  results::RunResult r;
  r.run_id = id;
  r.started_at = "2025-01-01T00:00:" + std::to_string(10 + world) + "Z";
  r.strategy = strategy;
  r.world_size = world;
  r.gpus_per_node = world;
  r.device = "cuda";
  r.precision = "fp32";
  r.model = "bert-tiny";
  r.seq_length = 128;
  r.global_batch = global_batch;
  r.batch_per_device = global_batch / world;
  r.data = "synthetic:256:seed1";
  r.samples_per_s = samples_per_s;
  r.samples_per_s_per_device = samples_per_s / static_cast<double>(world);
  r.peak_memory_bytes = memory_mib << 20;
  r.model_state_bytes = int64_t{64} << 20;
  return r;
}

// Device names as the trainer records them, for the device rules.
inline constexpr const char* kA100 = "NVIDIA A100-SXM4-80GB";
inline constexpr const char* kH100 = "NVIDIA H100 80GB HBM3";
inline constexpr const char* kXeon = "Intel(R) Xeon(R) Platinum 8480+";

inline results::RunResult on_device(results::RunResult r, const std::string& device, const std::string& name) {
  r.device = device;
  r.device_name = name;
  return r;
}

inline std::vector<results::LoadedRun> fixture_runs() {
  std::vector<results::RunResult> rs;
  rs.push_back(make_run("zero-2x", "zero", 2, 8, 160, 256));
  rs.back().model_state_bytes = int64_t{40} << 20;
  rs.push_back(make_run("ddp-4x", "ddp", 4, 8, 300, 328));
  rs.push_back(make_run("base-1x", "baseline", 1, 8, 100, 512));
  rs.push_back(make_run("ddp-2x", "ddp", 2, 8, 180, 384));
  rs.push_back(make_run("ddp-2x-weak", "ddp", 2, 16, 190, 512));
  rs.back().started_at = "2025-01-02T00:00:00Z";
  rs.push_back(make_run("dp-2x-fp16", "dp", 2, 8, 150, 300));
  rs.back().precision = "fp16";
  rs.push_back(make_run("fsdp-2x", "fsdp", 2, 8, 0, 0));
  rs.back().status = "failed";
  std::vector<results::LoadedRun> out;
  for (auto& r : rs) out.push_back({r, "runs/" + r.run_id + "/run.json"});
  return out;
}

// One folder with runs on two devices, each with its own baseline (the
// CPU's newer, but serving fewer runs), and an H100 run with none.
inline std::vector<results::LoadedRun> device_runs() {
  std::vector<results::RunResult> rs = {
      on_device(make_run("gpu-base", "baseline", 1, 8, 100, 512), "cuda", kA100),
      on_device(make_run("gpu-ddp", "ddp", 2, 8, 180, 384), "cuda", kA100),
      on_device(make_run("gpu-ddp4", "ddp", 4, 8, 300, 328), "cuda", kA100),
      on_device(make_run("cpu-base", "baseline", 1, 8, 10, 1024), "cpu", kXeon),
      on_device(make_run("cpu-ddp", "ddp", 2, 8, 15, 600), "cpu", kXeon),
      on_device(make_run("h100-ddp", "ddp", 2, 8, 400, 300), "cuda", kH100),
  };
  rs[3].started_at = "2025-06-01T00:00:00Z";
  std::vector<results::LoadedRun> out;
  for (auto& r : rs) out.push_back({r, "runs/" + r.run_id + "/run.json"});
  return out;
}

}  // namespace hpcbench::test
