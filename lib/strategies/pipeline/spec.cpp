// Pipeline parallelism (pipeline.h): the spec, torch-free.
#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "core/error.h"
#include "strategies/pipeline/cut.h"
#include "strategies/pipeline/options.h"
#include "specs/search.h"
#include "strategies/pipeline/schedule.h"
#include "strategies/pipeline/timeline.h"

namespace hpcbench::strategies::pipeline {

int64_t stages_given(const PipelineOptions& o) {
  if (o.stages > 0 && o.pp_size > 0 && o.stages != o.pp_size)
    fail("--stages {} and --pp-size {}: two names for the number of pipeline stages, given different values",
         o.stages, o.pp_size);
  return o.stages > 0 ? o.stages : o.pp_size;
}

Layout layout_of(const PipelineOptions& o, int world) {
  const auto given = parse_stage_layers(o.stage_layers);
  const int64_t stages = stages_given(o);
  Layout l;
  if (stages > 0) l.stages = static_cast<int>(stages);
  else if (!given.empty()) l.stages = static_cast<int>(given.size());
  else l.stages = o.dp_size > 0 ? world / static_cast<int>(o.dp_size) : world;
  l.dp = o.dp_size > 0 ? static_cast<int>(o.dp_size) : (l.stages > 0 ? world / l.stages : 0);
  if (!given.empty() && static_cast<int>(given.size()) != l.stages)
    fail("--stage-layers {}: {} counts for {} stages (--stages); give one count per stage", o.stage_layers,
         given.size(), l.stages);
  if (l.stages < 1 || l.dp < 1 || l.stages * l.dp != world) {
    if (o.dp_size > 0)
      fail("--stages {} x --dp-size {} is {} ranks, but the job has {}; their product must be the world size",
           l.stages, o.dp_size, int64_t(l.stages) * o.dp_size, world);
    fail("--stages {}: the job's {} ranks do not split into pipelines of {} stages; use a divisor of the world "
         "size, or --dp-size",
         l.stages, world, l.stages);
  }
  return l;
}

std::string micro_batch_problem(const PipelineOptions& o, int64_t batch_size) {
  if (batch_size > 0 && o.micro_batches > batch_size)
    return fmt::format("--micro-batches {} with --batch-size {}: a micro-batch needs at least one row; use "
                       "--micro-batches {} or less (each data-parallel replica's --batch-size rows are cut into the "
                       "micro-batches)",
                       o.micro_batches, batch_size, batch_size);
  return "";
}

namespace {

// Parameters on each stage: its layers' units, the embeddings on the first,
// the head on the last. `units` as the model lists them (embeddings, each
// layer, head).
std::vector<double> stage_sums(const std::vector<double>& units, const std::vector<int64_t>& counts) {
  std::vector<double> out(counts.size(), 0);
  size_t u = 1;
  for (size_t s = 0; s < counts.size(); ++s)
    for (int64_t i = 0; i < counts[s]; ++i) out[s] += units[u++];
  out.front() += units.front();
  out.back() += units.back();
  return out;
}

std::vector<int64_t> cut_of(const PipelineOptions& o, const Layout& l, size_t units) {
  if (units < 3) fail("internal: the pipeline's memory needs the model's units (embeddings, layers, head)");
  return stage_layer_counts(static_cast<int64_t>(units) - 2, l.stages, parse_stage_layers(o.stage_layers));
}

// What a pipeline of `stages` stages runs on (0: not known).
EngineSupport support(int stages) {
  const auto capture =
      stages == 1 ? Capability::yes()
                  : Capability::no(fmt::format(
                        "{} activations and gradients between ranks by point-to-point send and receive, which a "
                        "capture would have to hold on every stage's rank in the same order: NCCL's send and recv "
                        "inside a CUDA graph, which no run has shown yet; ranks that share one GPU talk over Gloo, "
                        "whose transfers block the host and cannot be captured. A pipeline of one stage is captured "
                        "(a one-rank job, or --stages 1 with --dp-size)",
                        stages > 1 ? fmt::format("its {} stages pass", stages)
                                   : std::string("a pipeline of more than one stage passes")));
  // Each stage runs the whole model's modules, fused under --fused; under
  // bf16 its updater steps fp32 masters of the stage's weights
  // (tests/strategies/test_fused_parity.cpp, 1 rank and 2 stages), and its
  // activations cross in bf16. GPipe and 1F1B alike, with accumulation.
  return {capture, Capability::yes(), Capability::yes()};
}

class PipelineSpec final : public Spec {
 public:
  std::string name() const override { return "pipeline"; }
  std::string summary() const override {
    return "pipeline parallelism: encoder layers cut into stages over ranks, micro-batches pipelined "
           "(GPipe or 1F1B), composable with data parallelism";
  }
  Traits traits() const override {
    Traits t;
    t.needs_comm = true;
    return t;
  }
  // Its engine settings on any job: the capture only where the options fix
  // one stage, the job's size being unknown here (engine_on knows it).
  EngineSupport engine(const Options& opts) const override {
    const auto& o = options_as<PipelineOptions>(opts);
    const int64_t stages = stages_given(o);
    return support(static_cast<int>(stages > 0 ? stages : static_cast<int64_t>(parse_stage_layers(o.stage_layers).size())));
  }
  // At one stage (a one-rank job, or --stages 1 with data parallelism) the
  // stage is the whole model: the step issues no point-to-point, and its
  // stage timings are events that a graph records as its own nodes
  // (runner.h), so it is captured; at more stages it is refused.
  EngineSupport engine_on(const Options& opts, const Shape& shape) const override {
    try {
      return support(layout_of(options_as<PipelineOptions>(opts), shape.world()).stages);
    } catch (const UserError&) {
      return engine(opts);  // a layout the job cannot take: unsupported() names it
    }
  }
  std::unique_ptr<Options> defaults() const override { return std::make_unique<PipelineOptions>(); }
  std::vector<std::string> always_shown() const override { return {"stages", "micro-batches", "schedule"}; }
  std::vector<std::string> facts() const override { return {"layout"}; }
  void validate(const Options& opts, const std::string&) const override {
    const auto& o = options_as<PipelineOptions>(opts);
    if (o.stages < 0) fail("--stages {}: must be at least 1 (or 0: every rank of a replica)", o.stages);
    if (o.pp_size < 0) fail("--pp-size {}: must be at least 1 (or 0: every rank of a replica)", o.pp_size);
    const int64_t stages = stages_given(o);
    if (o.dp_size < 0) fail("--dp-size {}: must be at least 1 (or 0: world / --stages)", o.dp_size);
    if (o.micro_batches < 1) fail("--micro-batches {}: must be at least 1", o.micro_batches);
    parse_schedule(o.schedule);
    auto given = parse_stage_layers(o.stage_layers);
    if (!given.empty() && stages > 0 && static_cast<int64_t>(given.size()) != stages)
      fail("--stage-layers {}: {} counts for {} stages (--stages); give one count per stage", o.stage_layers,
           given.size(), stages);
    for (auto n : given)
      if (n < 1) fail("--stage-layers {}: every stage needs at least one encoder layer", o.stage_layers);
  }
  std::string unsupported(const Options& opts, const Shape& shape) const override {
    try {
      layout_of(options_as<PipelineOptions>(opts), shape.world());
    } catch (const UserError& e) {
      return e.what();
    }
    return "";
  }
  // More stages than the model has layers, or a cut that is not the model's.
  std::string unsupported_model(const Options& opts, const Shape& shape, const ModelShape& model) const override {
    try {
      const auto& o = options_as<PipelineOptions>(opts);
      stage_layer_counts(model.layers, layout_of(o, shape.world()).stages, parse_stage_layers(o.stage_layers));
    } catch (const UserError& e) {
      return e.what();
    }
    return "";
  }
  std::string unsupported_batch(const Options& opts, int64_t batch_size) const override {
    return micro_batch_problem(options_as<PipelineOptions>(opts), batch_size);
  }
  int data_parallel_size(const Options& opts, const Shape& shape) const override {
    return layout_of(options_as<PipelineOptions>(opts), shape.world()).dp;
  }
  // The largest stage's model state (16 bytes a parameter, as a replica's,
  // bf16-resident weights over fp32 masters included: the fused
  // master-weight AdamW keeps no fp32 gradient copies, its pipeline-wide
  // norm all-reduced on the device); with data parallelism, the flat buffer
  // its gradients are all-reduced in (in the gradients' dtype).
  StateBytes memory(const Options& opts, const MemoryInputs& in) const override {
    const auto& o = options_as<PipelineOptions>(opts);
    const auto l = layout_of(o, in.shape.world());
    std::vector<double> units(in.units.begin(), in.units.end());
    auto per_stage = stage_sums(units, cut_of(o, l, units.size()));
    const double most = *std::max_element(per_stage.begin(), per_stage.end());
    const bool resident = in.resident && in.compute_bytes != 4;
    MemoryInputs stage = in;
    stage.units = {static_cast<int64_t>(most)};
    return {replicated_state(stage).total(),
            l.dp > 1 ? (resident ? in.compute_bytes : 4) * most : 0};
  }
  // The step of the stage that computes most (the pipeline's pace), as the
  // schedule simulated on per-stage times (timeline.h) leaves it: its
  // forwards, its backwards and its idle time ("bubble", compute-stream
  // time), then the point-to-point transfers on the critical path (one
  // activation and one gradient per stage boundary, costed as a two-rank
  // broadcast), then the largest stage's data-parallel all-reduce and
  // optimizer step.
  void schedule(const Options& opts, const StepInputs& in, StepBuilder& b) const override {
    const auto& o = options_as<PipelineOptions>(opts);
    const auto& lay = *in.layout;
    const auto l = layout_of(o, in.shape.world());
    const auto counts = cut_of(o, l, lay.unit_share.size());
    const auto share = stage_sums(lay.unit_share, counts);
    std::vector<double> numel(lay.unit_numel.begin(), lay.unit_numel.end());
    const auto params = stage_sums(numel, counts);
    const int m = static_cast<int>(std::min<int64_t>(o.micro_batches, std::max<int64_t>(in.batch, 1)));
    SimulationInput sim{parse_schedule(o.schedule), m, {}, {}, 0};
    for (double s : share) {
      sim.forward.push_back(in.base.forward_s * s / m);
      sim.backward.push_back(in.base.backward_s * s / m);
    }
    const auto run = simulate(sim);
    size_t busiest = 0;
    for (size_t s = 0; s < share.size(); ++s)
      if (share[s] > share[busiest]) busiest = s;
    const double fwd = m * sim.forward[busiest], bwd = m * sim.backward[busiest];
    // A boundary crosses nodes when the pipeline's stages are spread over them
    // (Megatron's order puts a pipeline's stages dp ranks apart).
    const int per_node = std::max(1, in.shape.gpus_per_node / l.dp);
    const int crossing = std::min(l.stages - 1, std::max(0, (l.stages + per_node - 1) / per_node - 1));
    const double act = static_cast<double>(in.batch) / m * static_cast<double>(lay.seq * lay.hidden) *
                       in.compute_bytes;
    const Group dp_group = l.dp <= in.shape.gpus_per_node ? Group{1, l.dp} : Group{l.dp / in.shape.gpus_per_node,
                                                                                   in.shape.gpus_per_node};
    for (int a = 0; a < in.grad_accum; ++a) {
      b.compute(in.base.other_s, "other");
      b.compute(fwd, "forward");
      b.compute(bwd, "backward");
      b.compute(std::max(0.0, run.makespan - fwd - bwd), "bubble");
      for (int k = 0; k < 2 * (l.stages - 1); ++k) {
        b.collective("broadcast", act, k / 2 < crossing ? Group{2, 1} : Group{1, 2});
        b.wait_all("p2p");
      }
    }
    // After the pipeline, every stage reduces and steps its own parameters at
    // once: the stage holding most (the embeddings') sets the pace.
    const double most = *std::max_element(params.begin(), params.end());
    if (l.dp > 1) {
      b.collective("all_reduce", in.param_grad_bytes * most, dp_group);
      b.wait_all("wait");
    }
    const double total = std::accumulate(params.begin(), params.end(), 0.0);
    b.compute(in.base.optimizer_s * (total > 0 ? most / total : 1.0), "optimizer");
  }
  Advice advice(const Options& opts) const override {
    const auto& o = options_as<PipelineOptions>(opts);
    return {fmt::format("the pipeline's bubble is (P-1)/(M+P-1) of a step: more micro-batches (--micro-batches, now "
                        "{}) shrink it, as do fewer stages",
                        o.micro_batches),
            ""};
  }
};

}  // namespace

const Spec& spec() {
  static const PipelineSpec s;
  return s;
}

// Every stage count from 2 that divides the job and the model's layers can
// hold; 1 to 32 micro-batches (the batch's check refuses more than its
// rows); both schedules where there is more than one micro-batch.
std::vector<OptionSet> search_space(const SearchInputs& in) {
  std::vector<OptionSet> sets;
  for (int pp = 2; pp <= in.shape.world() && pp <= in.model.layers; ++pp) {
    if (in.shape.world() % pp != 0) continue;
    for (int m = 1; m <= 32; m *= 2)
      for (const std::string schedule : {"gpipe", "1f1b"}) {
        if (m == 1 && schedule == "1f1b") continue;
        sets.push_back({{"pp-size", std::to_string(pp)}, {"micro-batches", std::to_string(m)}, {"schedule", schedule}});
      }
  }
  return sets;
}

}  // namespace hpcbench::strategies::pipeline
