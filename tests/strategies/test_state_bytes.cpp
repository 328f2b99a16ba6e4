// The model-state figure a run reports for the replicating strategies,
// against an independent count: the bytes the CPU allocator actually holds
// once the model, the strategy and the optimizer exist after one step. A
// strategy that kept a tensor the count does not see (ddp's buckets beside
// separate gradients, as before gradients lived in them) fails here.
#include "test_catch.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <unistd.h>

#include <cmath>

#include "counting_allocator.h"
#include "distributed/process_group.h"
#include "specs/registry.h"
#include "strategies/strategy.h"
#include "train/optimizer.h"
#include "train/setup.h"
#include "train/step_timer.h"

using namespace hpcbench;

namespace {

model::BertConfig small() {
  model::BertConfig c;
  c.vocab_size = 512;
  c.hidden_size = 64;
  c.num_hidden_layers = 3;
  c.num_attention_heads = 2;
  c.intermediate_size = 128;
  c.max_position_embeddings = 64;
  c.name = "state-test";
  return c;
}

train::Batch batch() {
  auto g = at::make_generator<at::CPUGeneratorImpl>(7);
  train::Batch b;
  b.input_ids = at::randint(1, 512, {4, 32}, g, at::kLong);
  b.token_type_ids = at::zeros({4, 32}, at::kLong);
  b.attention_mask = at::ones({4, 32}, at::kLong);
  b.start_positions = at::randint(0, 32, {4}, g, at::kLong);
  b.end_positions = at::randint(0, 32, {4}, g, at::kLong);
  return b;
}

struct Measured {
  int64_t held;     // the allocator's count
  size_t counted;   // what the run would report
  double theory;    // the memory model
};

// One step of `name` at world size 1 (ddp with its communicator, which
// then runs no collective), measured where the trainer measures: after the
// optimizer step, before the gradients are released.
Measured one_step(const std::string& name, const EnginePolicy& engine = {}) {
  at::set_num_threads(1);
  auto& alloc = test::counting();
  auto b = batch();
  const int64_t before = alloc.now();
  Measured m{};
  {
    torch::manual_seed(1);
    model::BertForQuestionAnswering model(small(), engine);
    model->train();
    strategies::StrategyContext ctx;
    auto choice = strategies::parse_label(name, "test");
    if (choice.spec().traits().needs_comm) {
      dist::RankLayout layout;
      layout.master_port = 20000 + static_cast<int>(::getpid() % 20000);
      ctx.comm = std::make_shared<dist::Comm>(layout, c10::Device(c10::kCPU));
    }
    auto strategy = strategies::make_strategy(choice);
    ctx.optimizer = {1e-3, 0.01, 0.9, 0.999, 1e-6};
    ctx.engine = engine;
    auto [topo, updater_of] = strategy->setup(model, ctx);
    train::StepTimer timer(c10::kCPU);
    timer.begin();
    strategy->forward_backward(model, b, 1.0, true, timer);
    strategy->finish_gradients(timer);
    updater_of->step();
    m.held = alloc.now() - before;
    m.counted = updater_of->state_bytes();
    m.theory = topo.state_theory_bytes;
  }
  return m;
}

}  // namespace

TEST_CASE("model-state bytes of the replicating strategies match what the allocator holds") {
  for (std::string name : {"baseline", "ddp"}) {
    DYNAMIC_SECTION(name) {
      auto m = one_step(name);
      INFO(name << ": allocator " << m.held << " B, counted " << m.counted << " B, memory model " << m.theory << " B");
      // Besides the model state the allocator holds only the optimizer's
      // step counters (one float per parameter tensor, about 200 B here), so
      // a bound of 2 KiB catches any missed tensor larger than that: every
      // weight matrix and embedding (16 KiB and up here), and ddp's buckets
      // (a quarter of the whole) if they were a copy of the gradients.
      CHECK(std::abs(static_cast<double>(m.counted) - static_cast<double>(m.held)) <= 2048.0);
      // 16 bytes a parameter: weights, gradients (ddp: in its buckets), Adam's
      // two moments.
      CHECK(m.theory == Approx(static_cast<double>(m.counted)).epsilon(0.005));
    }
  }
}

// A tensor shard and a pipeline stage under --fused bf16 at world size 1:
// bf16 weights and gradients beside fp32 masters and Adam's moments, the
// masters stepped by the fused master-weight AdamW, which keeps no fp32
// gradient copies. What the allocator holds is what the run counts, and the
// spec's formula (16 bytes a parameter) is that count; an updater that
// still copied the gradients to fp32 would hold 4 bytes a parameter more
// than the formula says.
TEST_CASE("model-state bytes of a tensor shard and a pipeline stage under --fused bf16 match the allocator and the spec") {
  const auto fused = EnginePolicy::recorded("bf16", true, "fused");
  REQUIRE(fused.resident());
  for (std::string name : {"tensor", "pipeline"}) {
    DYNAMIC_SECTION(name) {
      auto m = one_step(name, fused);
      INFO(name << ": allocator " << m.held << " B, counted " << m.counted << " B, memory model " << m.theory << " B");
      CHECK(std::abs(static_cast<double>(m.counted) - static_cast<double>(m.held)) <= 2048.0);
      CHECK(m.theory == Approx(static_cast<double>(m.counted)).epsilon(0.005));
    }
  }
}
