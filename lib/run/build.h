#pragma once
// What a run is made of, built from its configuration in this order: the
// device and its precision, the model configuration, the training data, the
// model with its initial weights, the strategy (which says where this rank
// sits and how it steps: strategies/strategy.h), and the step counts and
// global batch that follow from them.
#include <c10/core/Device.h>

#include <memory>
#include <string>

#include "device/device.h"
#include "model/bert.h"
#include "run/context.h"
#include "strategies/strategy.h"
#include "train/batch.h"
#include "train/config.h"

namespace hpcbench::run {

struct Run {
  std::string started_at;  // ISO 8601 UTC
  c10::Device device{c10::kCPU};
  DeviceDescription device_description;
  model::BertConfig model_config;
  std::unique_ptr<train::FeatureTensors> data;
  model::BertForQuestionAnswering model{nullptr};
  std::string strategy_name;
  std::unique_ptr<strategies::Strategy> strategy;
  strategies::Topology topology;  // after the strategy: its updater refers to it
  int64_t micro_rows = 0;         // rows this process is handed per micro-step
  int64_t micro_per_epoch = 0;    // micro-steps in an epoch of this process's share
  int64_t steps_per_epoch = 0;
  int64_t total_steps = 0;
  int64_t global_batch = 0;       // sequences per optimizer step over the job
  double flops_per_sample = 0;    // train/flops.h
  double hardware_flops_per_sample = 0;  // with the recomputed forward (activation checkpointing)
  double peak_tflops = 0;         // 0: unknown, no MFU

  int64_t devices_total(const RunContext& ctx) const { return topology.devices * ctx.world_size; }
};

// Builds the run on this rank; with the strategy's set-up, a collective
// (replicas broadcast, shards cut). Logs the run's header on rank 0.
Run build(const train::TrainConfig& cfg, const strategies::Choice& choice, const RunContext& ctx);

}  // namespace hpcbench::run
