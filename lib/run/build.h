#pragma once
// What a run is made of, built from its configuration in this order: the
// device and its precision, the model configuration, the training data, the
// model with its initial weights, the strategy (which says where this rank
// sits and how it steps: strategies/strategy.h), and the step counts and
// global batch that follow from them. Every fact the loop, the evaluation
// and the run record share is computed here, once.
#include <c10/core/Device.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "data/features.h"
#include "device/device.h"
#include "model/bert.h"
#include "run/context.h"
#include "strategies/strategy.h"
#include "train/batch.h"
#include "train/config.h"

namespace hpcbench::run {

// The batch facts, in one place: what the flags ask for per device and how
// the strategy's placement turns that into rows, micro-steps and steps.
struct BatchPlan {
  int64_t per_device = 0;       // --batch-size: rows of a micro-step per device
  int64_t grad_accum = 1;       // micro-steps per optimizer step
  int64_t micro_rows = 0;       // rows this process is handed per micro-step
  int64_t micro_per_epoch = 0;  // micro-steps in an epoch of this process's share
  int64_t steps_per_epoch = 0;
  int64_t total_steps = 0;
  int64_t global_batch = 0;     // sequences per optimizer step over the job
};

// The batch plan for `n` training features over the strategy's placement.
// Refuses (UserError naming the flags) a batch that does not fit the data.
BatchPlan plan_batches(const train::TrainConfig& cfg, const strategies::Topology& t, int64_t n);

struct Run {
  train::TrainConfig cfg;  // as validated: the loop and the evaluation read their settings here
  std::string started_at;  // ISO 8601 UTC
  c10::Device device{c10::kCPU};
  DeviceDescription device_description;
  // "key = value" per setting (train::describe): the run header, the
  // TensorBoard log's settings and run.json's "config".
  std::vector<std::pair<std::string, std::string>> settings;
  model::BertConfig model_config;
  // How texts become windows: the training and the evaluation features alike.
  data::FeatureConfig features;
  std::unique_ptr<train::FeatureTensors> data;
  std::string data_identity;  // results' "data" (train::data_identity)
  // What it trains on (train/engine.h): chosen once, read by the model, the
  // strategy, the loop and the record.
  EnginePolicy engine;
  model::BertForQuestionAnswering model{nullptr};
  std::string strategy_name;
  std::unique_ptr<strategies::Strategy> strategy;
  strategies::Topology topology;
  // The optimizer that steps what this rank holds; after the strategy,
  // whose state it refers to, so that it goes first.
  std::unique_ptr<strategies::Updater> updater;
  BatchPlan batch;
  double flops_per_sample = 0;    // train/flops.h
  double hardware_flops_per_sample = 0;  // with the recomputed forward (activation checkpointing)
  double peak_tflops = 0;         // 0: unknown, no MFU
  int64_t cpu_cores = -1;         // the cores this node's job has (preflight/resources.h)
  int64_t threads_per_rank = -1;  // intra-op threads this rank computes with

  int64_t devices_total(const RunContext& ctx) const { return topology.devices * ctx.world_size; }
};

// Builds the run on this rank; with the strategy's set-up, a collective
// (replicas broadcast, shards cut). Logs the run's header on rank 0.
Run build(const train::TrainConfig& cfg, const strategies::Choice& choice, const RunContext& ctx);

}  // namespace hpcbench::run
