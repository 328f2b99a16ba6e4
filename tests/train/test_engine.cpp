// The run's engine chosen in one place (train/engine.h): what each flag
// turns on, what each strategy's declarations and the other settings refuse.
#include "test_catch.h"

#include <tuple>
#include <vector>

#include "core/error.h"
#include "specs/label.h"
#include "train/engine.h"

using namespace hpcbench;
using Policy = EnginePolicy;

namespace {

EnginePolicy choose(const std::string& label, const std::string& precision, bool fused, bool graph,
                    bool recompute = false) {
  train::TrainConfig cfg;
  cfg.precision = precision;
  cfg.fused = fused;
  cfg.cuda_graph = graph;
  cfg.activation_checkpointing = recompute;
  return train::choose_engine(cfg, strategies::parse_label(label, "--strategy"));
}

}  // namespace

TEST_CASE("without the flags every strategy trains on the eager ATen engine with fp32 weights") {
  for (const char* label : {"baseline", "ddp", "zero:stage=3", "fsdp", "tensor", "pipeline", "dp"}) {
    INFO(label);
    for (const char* precision : {"fp32", "bf16", "fp16"}) {
      const auto e = choose(label, precision, false, false);
      CHECK(e.step == Policy::Step::Eager);
      CHECK(e.kernels == Policy::Kernels::Aten);
      CHECK(e.qkv == Policy::Qkv::Split);
      CHECK(e.weights == Policy::Weights::Fp32);
      CHECK(e.precision == precision);
      CHECK(e.autocast() == precision);
      CHECK(e.name() == "eager");
    }
  }
}

TEST_CASE("--fused is the packed model and the fused kernels, and resident bf16 weights under bf16 only") {
  for (const char* label : {"baseline", "ddp", "zero:stage=2", "fsdp", "tensor", "pipeline"}) {
    INFO(label);
    const auto fp32 = choose(label, "fp32", true, false);
    CHECK(fp32.fused_kernels());
    CHECK(fp32.packed_qkv());
    CHECK_FALSE(fp32.resident());  // fp32 weights are their own masters
    CHECK(fp32.autocast() == "fp32");
    const auto bf16 = choose(label, "bf16", true, false);
    CHECK(bf16.fused_model());
    CHECK(bf16.resident());
    CHECK(bf16.autocast() == "fp32");  // forward without autocast on bf16 weights
    CHECK(bf16.name() == "fused");
  }
  // tf32 is fp32 storage: nothing resident.
  CHECK_FALSE(choose("baseline", "tf32", true, false).resident());
  CHECK_THROWS_WITH(choose("baseline", "fp16", true, false),
                    Catch::Contains("--fused with --precision fp16") && Catch::Contains("loss scaling"));
}

TEST_CASE("--cuda-graph is the graph-ready step where the strategy declares it, never with fp16 or recompute") {
  for (const char* label : {"baseline", "ddp", "tensor"}) {
    INFO(label);
    const auto e = choose(label, "bf16", false, true);
    CHECK(e.graph());
    CHECK_FALSE(e.fused_kernels());
    CHECK(e.name() == "graph");
  }
  CHECK(choose("ddp", "bf16", true, true).name() == "graph+fused");
  CHECK_THROWS_WITH(choose("baseline", "fp16", false, true),
                    Catch::Contains("--cuda-graph with --precision fp16") && Catch::Contains("loss scaling"));
  CHECK_THROWS_WITH(choose("baseline", "fp32", false, true, true),
                    Catch::Contains("--cuda-graph with --activation-checkpointing"));
}

TEST_CASE("a setting the strategy does not declare is refused, naming the flag, the strategy and the reason") {
  const std::vector<std::tuple<const char*, bool, bool, const char*>> refused = {
      // Its job unknown, its stages are too: only a pipeline of one stage is captured.
      {"pipeline", false, true, "--cuda-graph with --strategy pipeline: a pipeline of more than one stage passes"},
      {"dp", false, true, "--cuda-graph with --strategy dp: one process drives several devices"},
      {"dp", true, false, "--fused with --strategy dp: one process drives its replicas"},
  };
  for (const auto& [label, fused, graph, why] : refused) {
    INFO(label);
    CHECK_THROWS_WITH(choose(label, "bf16", fused, graph), Catch::Contains(why));
  }
}

// Pipeline declares the capture on a job where it has one stage: no
// point-to-point in the step then. More stages are refused with the reason,
// the stage count named; an explicit --stages 1 is known without the job.
TEST_CASE("pipeline is captured at one stage and refused at more, naming the strategy and why") {
  train::TrainConfig cfg;
  cfg.precision = "bf16";
  cfg.cuda_graph = true;
  auto on = [&](const std::string& label, int ranks) {
    return train::choose_engine(cfg, strategies::parse_label(label, "--strategy"), {}, strategies::Shape{1, ranks});
  };
  CHECK(on("pipeline", 1).name() == "graph");
  CHECK(on("pipeline:stages=1", 2).name() == "graph");  // one stage, two data-parallel replicas
  CHECK(on("pipeline:dp-size=2", 2).name() == "graph");
  CHECK(choose("pipeline:stages=1", "bf16", false, true).name() == "graph");
  for (const auto& [label, ranks, stages] : std::vector<std::tuple<const char*, int, int>>{
           {"pipeline", 2, 2}, {"pipeline", 4, 4}, {"pipeline:stages=2", 4, 2}, {"pipeline:dp-size=2", 4, 2}}) {
    INFO(label << " on " << ranks);
    CHECK_THROWS_WITH(on(label, ranks),
                      Catch::Contains("--cuda-graph with --strategy " + std::string(label) + ": its " +
                                      std::to_string(stages) + " stages pass activations and gradients") &&
                          Catch::Contains("point-to-point") && Catch::Contains("Gloo") &&
                          Catch::Contains("NCCL's send and recv inside a CUDA graph"));
  }
  // The graph and the fused model together at one stage; at two the graph
  // alone is refused (the fused model is declared on any job).
  cfg.fused = true;
  CHECK(on("pipeline", 1).name() == "graph+fused");
  CHECK(on("pipeline", 1).resident());
  CHECK_THROWS_WITH(on("pipeline", 2), Catch::Contains("--cuda-graph with --strategy pipeline: its 2 stages pass"));
  cfg.cuda_graph = false;
  CHECK(on("pipeline", 2).name() == "fused");
  // --engine auto on CUDA, once shown: the graph and the fused model at one
  // stage, the fused model alone at two.
  cfg.fused = false;
  cfg.cuda_graph = false;
  const train::EngineDevice shown{true, false, true};
  auto one = train::choose_engine(cfg, strategies::parse_label("pipeline", "s"), shown, strategies::Shape{1, 1});
  CHECK(one.name() == "graph+fused");
  auto two = train::choose_engine(cfg, strategies::parse_label("pipeline", "s"), shown, strategies::Shape{1, 2});
  CHECK(two.name() == "fused");
  CHECK_THAT(two.reason, Catch::Contains("auto: no graph, its 2 stages pass"));
}

TEST_CASE("a strategy that declares no engine settings is refused each of them") {
  struct Quiet final : strategies::Spec {
    std::string name() const override { return "quiet"; }
    std::string summary() const override { return "declares nothing"; }
    std::unique_ptr<strategies::Options> defaults() const override {
      return std::make_unique<strategies::NoOptions>();
    }
    strategies::StateBytes memory(const strategies::Options&, const strategies::MemoryInputs& in) const override {
      return strategies::replicated_state(in);
    }
    void schedule(const strategies::Options&, const strategies::StepInputs&, strategies::StepBuilder&) const override {}
  } quiet;
  train::TrainConfig cfg;
  CHECK(train::choose_engine(cfg, strategies::Choice(quiet)).name() == "eager");
  for (const char* precision : {"fp32", "bf16"}) {
    cfg.precision = precision;
    cfg.fused = true;
    CHECK_THROWS_WITH(train::choose_engine(cfg, strategies::Choice(quiet)),
                      Catch::Contains("--fused with --strategy quiet: quiet declares no engine settings"));
    cfg.fused = false;
    cfg.cuda_graph = true;
    CHECK_THROWS_WITH(train::choose_engine(cfg, strategies::Choice(quiet)),
                      Catch::Contains("--cuda-graph with --strategy quiet: quiet declares no engine settings"));
    cfg.cuda_graph = false;
  }
}

TEST_CASE("--engine auto stays eager until a GPU run has shown the engine equal, and says why") {
  train::TrainConfig cfg;
  cfg.precision = "bf16";
  const auto baseline = strategies::parse_label("baseline", "--strategy");
  // A CPU: nothing to capture, no kernels of its own.
  auto cpu = train::choose_engine(cfg, baseline, {});
  CHECK(cpu.name() == "eager");
  CHECK_THAT(cpu.reason, Catch::Contains("auto: not fused, the device is not CUDA") &&
                             Catch::Contains("auto: no graph, the device is not CUDA"));
  // A CUDA device before the GPU run: eager, naming the run that would flip it.
  auto cuda = train::choose_engine(cfg, baseline, {true, false, false});
  CHECK(cuda.name() == "eager");
  CHECK_THAT(cuda.reason, Catch::Contains("no GPU run has shown it equal") && Catch::Contains("validate.sh"));
  // The shipped constant: auto is eager everywhere until it flips.
  CHECK(train::choose_engine(cfg, baseline, {true, false, train::kAutoEngineShown}).name() ==
        (train::kAutoEngineShown ? "graph+fused" : "eager"));
  // --engine eager: only the flags, auto off.
  cfg.engine = "eager";
  auto off = train::choose_engine(cfg, baseline, {true, false, true});
  CHECK(off.name() == "eager");
  CHECK_THAT(off.reason, Catch::Contains("--engine eager"));
  cfg.fused = true;
  CHECK(train::choose_engine(cfg, baseline, {true, false, true}).name() == "fused");
}

TEST_CASE("once shown, --engine auto takes on CUDA what each strategy declares, and leaves the rest with why") {
  train::TrainConfig cfg;
  cfg.precision = "bf16";
  const train::EngineDevice shown{true, false, true};
  auto pick = [&](const std::string& label) { return train::choose_engine(cfg, strategies::parse_label(label, "s"), shown); };
  auto base = pick("baseline");
  CHECK(base.name() == "graph+fused");
  CHECK(base.resident());
  CHECK(pick("ddp").name() == "graph+fused");
  // tensor declares both since its layers take the fused model's packed
  // QKV (a rank's heads of each third) and its shard keeps fp32 masters.
  auto tensor = pick("tensor");
  CHECK(tensor.name() == "graph+fused");
  CHECK(tensor.resident());
  CHECK_THAT(tensor.reason, Catch::Contains("auto: fused") && Catch::Contains("auto: graph"));
  // zero and fsdp declare both since the sharded engine's storage is static
  // (shard/buffers.h; test_cuda_graph.cpp shows their graph-ready step equal).
  for (const char* label : {"zero:stage=3", "fsdp"}) CHECK(pick(label).name() == "graph+fused");
  // pipeline declares the fused model on any job (its stages keep fp32
  // masters); its job unknown here, its stages are too, so no graph.
  auto pipeline = pick("pipeline");
  CHECK(pipeline.name() == "fused");
  CHECK(pipeline.resident());
  CHECK_THAT(pipeline.reason, Catch::Contains("auto: no graph, a pipeline of more than one stage passes"));
  CHECK(pick("dp").name() == "eager");
  // What the other settings forbid stays off rather than failing the run.
  cfg.precision = "fp16";
  CHECK(pick("baseline").name() == "eager");
  cfg.precision = "bf16";
  cfg.activation_checkpointing = true;
  CHECK(pick("baseline").name() == "fused");
  cfg.activation_checkpointing = false;
  auto gloo = train::choose_engine(cfg, strategies::parse_label("ddp", "s"), {true, true, true});
  CHECK(gloo.name() == "fused");
  CHECK_THAT(gloo.reason, Catch::Contains("Gloo"));
}

namespace {

// A config with `flags` applied as the command line applies them (the
// settings table's switches).
train::TrainConfig with_flags(const std::string& precision, const std::vector<std::string>& flags) {
  train::TrainConfig cfg;
  cfg.precision = precision;
  cfg.engine = "eager";
  for (const auto& f : flags) {
    bool found = false;
    for (auto& s : train::settings_of(cfg))
      if (s.flag == f) {
        *std::get<bool*>(s.target) = switch_value(s);
        found = true;
      }
    INFO(f);
    REQUIRE(found);
  }
  return cfg;
}

}  // namespace

TEST_CASE("the fused kernels' levers turn off one at a time, and flags() asks for the same engine again") {
  const auto choice = strategies::parse_label("baseline", "--strategy");
  auto fused = with_flags("bf16", {"--fused"});
  auto e = train::choose_engine(fused, choice);
  CHECK(e.embedding_kernels() == Policy::Kernels::Fused);
  CHECK(e.fused_master_step());
  e = train::choose_engine(with_flags("bf16", {"--fused", "--no-fused-embedding"}), choice);
  CHECK(e.embedding_kernels() == Policy::Kernels::Aten);
  CHECK(e.fused_master_step());
  CHECK(e.kernels == Policy::Kernels::Fused);  // the other kernels stay
  CHECK(e.reason.find("--no-fused-embedding") != std::string::npos);
  e = train::choose_engine(with_flags("bf16", {"--fused", "--no-fused-adamw"}), choice);
  CHECK(e.embedding_kernels() == Policy::Kernels::Fused);
  CHECK_FALSE(e.fused_master_step());
  CHECK(e.reason.find("--no-fused-adamw") != std::string::npos);
  // Without the fused kernels neither lever has anything to turn on.
  e = train::choose_engine(with_flags("bf16", {}), choice);
  CHECK(e.embedding_kernels() == Policy::Kernels::Aten);
  CHECK_FALSE(e.fused_master_step());

  // Every combination of the engine's flags: the policy chosen from
  // flags() is the one flags() was read from (a plan's verification run
  // gets the engine the plan was costed for).
  const std::vector<std::string> all = {"--fused", "--cuda-graph", "--no-residual-fold", "--no-fused-embedding",
                                        "--no-fused-adamw"};
  for (unsigned mask = 0; mask < (1u << all.size()); ++mask) {
    std::vector<std::string> flags;
    for (size_t k = 0; k < all.size(); ++k)
      if (mask & (1u << k)) flags.push_back(all[k]);
    INFO(mask);
    const auto a = train::choose_engine(with_flags("bf16", flags), choice);
    const auto b = train::choose_engine(with_flags("bf16", a.flags()), choice);
    CHECK(a.name() == b.name());
    CHECK(a.kernels == b.kernels);
    CHECK(a.qkv == b.qkv);
    CHECK(a.weights == b.weights);
    CHECK(a.step == b.step);
    CHECK(a.folds_residual() == b.folds_residual());
    CHECK(a.embedding_kernels() == b.embedding_kernels());
    CHECK(a.fused_master_step() == b.fused_master_step());
  }
}
