#include "train/engine.h"

#include <fmt/ranges.h>

#include <string>
#include <vector>

#include "core/error.h"

namespace hpcbench::train {

namespace {

void require(const char* flag, const strategies::Choice& choice, const strategies::Capability& c) {
  if (!c.supported) fail("{} with --strategy {}: {}", flag, choice.label(), c.why_not);
}

// --fused: the fused model; its weights resident in the compute dtype where
// that is bf16 (fp32 weights are their own masters).
void choose_fused(const TrainConfig& cfg, const strategies::Choice& choice, const strategies::EngineSupport& s,
                  EnginePolicy& e) {
  require("--fused", choice, s.fused);
  if (cfg.precision == "fp16")
    fail("--fused with --precision fp16: the fused model keeps its weights in bf16 (or fp32), and fp16 weights "
         "would need loss scaling of their own; use --precision bf16");
  e.kernels = EnginePolicy::Kernels::Fused;
  e.qkv = EnginePolicy::Qkv::Packed;
  e.weights = EnginePolicy::fused_weights(cfg.precision);
  if (e.resident()) require("--fused --precision bf16", choice, s.resident);
}

// --cuda-graph captures the whole optimizer step (docs/gpu.md, "CUDA
// graph"): what would read the host inside it, or replay something other
// than what was captured, is refused here rather than found on a GPU.
void choose_graph(const TrainConfig& cfg, const strategies::Choice& choice, const strategies::EngineSupport& s,
                  EnginePolicy& e) {
  require("--cuda-graph", choice, s.capture);
  if (cfg.precision == "fp16")
    fail("--cuda-graph with --precision fp16: dynamic loss scaling reads its overflow verdict on the host every "
         "step and skips the optimizer step on it, which a captured step cannot; use --precision bf16");
  if (cfg.activation_checkpointing)
    fail("--cuda-graph with --activation-checkpointing: the recompute saves and restores the device's random "
         "generator state on the host (model/activation_checkpoint.cpp), which a capture forbids");
  e.step = EnginePolicy::Step::Graph;
}

// Why `--engine auto` leaves `what` off here ("" when it may turn it on).
std::string auto_blocked(const TrainConfig& cfg, const strategies::Capability& declared, const EngineDevice& device,
                         bool graph) {
  if (!device.cuda) return "the device is not CUDA";
  if (!device.auto_shown)
    return "no GPU run has shown it equal to eager yet (tools/gpu/validate.sh, engine phase; train/engine.h)";
  if (!declared.supported) return declared.why_not;
  if (cfg.precision == "fp16") return "fp16's loss scaling is eager-only";
  if (graph && cfg.activation_checkpointing) return "activation checkpointing's recompute reads the host";
  if (graph && device.host_blocking_comm) return "Gloo's collectives block the host";
  return "";
}

// --engine auto: the settings not asked for, where allowed; the reason
// names what was left off and why.
void choose_auto(const TrainConfig& cfg, const strategies::Choice& choice, const strategies::EngineSupport& s,
                 const EngineDevice& device, EnginePolicy& e, std::vector<std::string>& why) {
  if (!cfg.fused) {
    auto blocked = auto_blocked(cfg, s.fused, device, false);
    if (blocked.empty() && cfg.precision == "bf16") blocked = auto_blocked(cfg, s.resident, device, false);
    if (blocked.empty()) {
      choose_fused(cfg, choice, s, e);
      why.push_back("auto: fused");
    } else {
      why.push_back("auto: not fused, " + blocked);
    }
  }
  if (!cfg.cuda_graph) {
    const auto blocked = auto_blocked(cfg, s.capture, device, true);
    if (blocked.empty()) {
      choose_graph(cfg, choice, s, e);
      why.push_back("auto: graph");
    } else {
      why.push_back("auto: no graph, " + blocked);
    }
  }
}

}  // namespace

EnginePolicy choose_engine(const TrainConfig& cfg, const strategies::Choice& choice, const EngineDevice& device,
                           const std::optional<strategies::Shape>& job) {
  EnginePolicy e;
  e.precision = cfg.precision;
  const auto support = job ? choice.engine(*job) : choice.engine();
  std::vector<std::string> why;
  if (cfg.fused) {
    choose_fused(cfg, choice, support, e);
    why.push_back("--fused");
  }
  if (cfg.cuda_graph) {
    choose_graph(cfg, choice, support, e);
    why.push_back("--cuda-graph");
  }
  if (cfg.engine == "auto") choose_auto(cfg, choice, support, device, e, why);
  else why.push_back("--engine eager: only what the flags ask for");
  e.residual = cfg.residual_fold ? EnginePolicy::Residual::Folded : EnginePolicy::Residual::Added;
  e.embedding_kernel = cfg.fused_embedding;
  e.adamw_kernel = cfg.fused_adamw;
  if (e.fused_model()) {
    why.push_back(e.folds_residual() ? "residual gradients folded into the GEMMs" : "--no-residual-fold");
    if (!e.embedding_kernel) why.push_back("--no-fused-embedding");
    if (!e.adamw_kernel) why.push_back("--no-fused-adamw");
  }
  e.reason = fmt::format("{}", fmt::join(why, "; "));
  return e;
}

}  // namespace hpcbench::train
