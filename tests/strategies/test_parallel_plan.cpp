// What model parallelism is made of that needs no tensors (lib/strategies:
// mesh, model_shape, pipeline/schedule, pipeline/timeline, pipeline/cost,
// tensor/cost): the schedules' orders, the bubble measured on timelines whose
// idle time is known, the rank mesh and its errors, the memory and cost
// formulas against hand-worked figures and the paper's closed form.
#include "test_catch.h"

#include <string>
#include <vector>

#include "core/error.h"
#include "specs/mesh.h"
#include "specs/model_shape.h"
#include "strategies/pipeline/cost.h"
#include "strategies/pipeline/schedule.h"
#include "strategies/pipeline/timeline.h"
#include "strategies/tensor/cost.h"

using namespace hpcbench;
using namespace hpcbench::strategies;
using namespace hpcbench::strategies::pipeline;

namespace {

std::string order(ScheduleKind k, int stage, int stages, int micro) {
  std::string s;
  // Piece by piece: `(c ? "" : " ") + std::string` draws a false -Wrestrict
  // from GCC 12 (libstdc++'s char_traits.h; GCC bug 105651).
  for (auto& a : stage_order(k, stage, stages, micro)) {
    if (!s.empty()) s += ' ';
    s += to_string(a);
  }
  return s;
}

}  // namespace

TEST_CASE("pipeline schedules: GPipe and 1F1B orders") {
  CHECK(order(ScheduleKind::GPipe, 0, 2, 3) == "F0 F1 F2 B0 B1 B2");
  CHECK(order(ScheduleKind::GPipe, 1, 2, 3) == "F0 F1 F2 B0 B1 B2");
  // 1F1B over 4 stages and 8 micro-batches: stage s warms up with P - s
  // forwards, alternates, then drains (torch's Schedule1F1B).
  CHECK(order(ScheduleKind::OneFOneB, 0, 4, 8) == "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
  CHECK(order(ScheduleKind::OneFOneB, 2, 4, 8) == "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7");
  CHECK(order(ScheduleKind::OneFOneB, 3, 4, 8) == "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
  // Fewer micro-batches than stages: the warm-up is all of them.
  CHECK(order(ScheduleKind::OneFOneB, 0, 4, 2) == "F0 F1 B0 B1");
  // Activations held at once: M for GPipe, min(M, P - s) for 1F1B.
  CHECK(in_flight(ScheduleKind::GPipe, 1, 4, 8) == 8);
  CHECK(in_flight(ScheduleKind::OneFOneB, 0, 4, 8) == 4);
  CHECK(in_flight(ScheduleKind::OneFOneB, 3, 4, 8) == 1);
  CHECK(theoretical_bubble(4, 8) == Approx(3.0 / 11.0));
  CHECK(theoretical_bubble(1, 8) == 0);
  CHECK(schedule_name(parse_schedule("1f1b")) == "1f1b");
  CHECK_THROWS_WITH(parse_schedule("interleaved"), Catch::Contains("--schedule interleaved"));
  CHECK_THROWS_WITH(stage_order(ScheduleKind::GPipe, 0, 2, 0), Catch::Contains("--micro-batches 0"));
}

TEST_CASE("pipeline bubble: measured on timelines with a known idle time") {
  // A window of 10 with work at [1,3], [2,4] (overlapping: 1..4 counted
  // once) and [8,12] (clipped to 8..10): busy 5, idle 5.
  StageTimeline t{0, 10, {{1, 3}, {2, 4}, {8, 12}}};
  auto b = measure_bubble(t);
  CHECK(b.window == Approx(10));
  CHECK(b.busy == Approx(5));
  CHECK(b.idle() == Approx(5));
  CHECK(b.fraction() == Approx(0.5));
  CHECK(measure_bubble({0, 4, {}}).fraction() == Approx(1));

  // GPipe, 2 stages, 2 micro-batches, forward 1 and backward 2, free
  // transfers: stage 1 runs F0 1..2, F1 2..3, B0 3..5, B1 5..7; stage 0
  // F0 0..1, F1 1..2, B0 5..7, B1 7..9. Each is busy 6 of 9: idle
  // (P-1)(f+b) = 3, the textbook bubble (P-1)/(M+P-1) = 1/3.
  SimulationInput in{ScheduleKind::GPipe, 2, {1, 1}, {2, 2}, 0};
  auto sim = simulate(in);
  CHECK(sim.makespan == Approx(9));
  CHECK(sim.spans[1][2].begin == Approx(3));
  CHECK(sim.spans[0][2].begin == Approx(5));
  for (auto& stage : sim.stages) {
    CHECK(measure_bubble(stage).idle() == Approx(3));
    CHECK(measure_bubble(stage).fraction() == Approx(theoretical_bubble(2, 2)));
  }
  // Transfers of 0.5 lengthen the critical path by one forward and one
  // backward hop per stage boundary: 9 + 2 x 0.5; stage 0 idles 10 - 6.
  in.p2p = 0.5;
  sim = simulate(in);
  CHECK(sim.makespan == Approx(10));
  CHECK(measure_bubble(sim.stages[0]).idle() == Approx(4));

  // Equal stages: both schedules meet the textbook bubble, at any P and M.
  for (auto kind : {ScheduleKind::GPipe, ScheduleKind::OneFOneB})
    for (int p : {2, 4})
      for (int m : {1, 4, 8}) {
        SimulationInput eq{kind, m, std::vector<double>(size_t(p), 1.0), std::vector<double>(size_t(p), 2.0), 0};
        auto s = simulate(eq);
        INFO(schedule_name(kind) << " P=" << p << " M=" << m);
        CHECK(s.makespan == Approx((m + p - 1) * 3.0));
        for (auto& stage : s.stages) CHECK(measure_bubble(stage).fraction() == Approx(theoretical_bubble(p, m)));
      }
  CHECK_THROWS_WITH(simulate({ScheduleKind::GPipe, 2, {1}, {1, 2}, 0}), Catch::Contains("one of each per stage"));
}

TEST_CASE("mesh: Megatron's placement, groups, labels and the layout errors") {
  Mesh m(8, {2, 2, 2});
  // rank = p·(dp·tp) + d·tp + t
  CHECK(m.rank_of({1, 0, 1}) == 3);
  auto c = m.coord_of(5);
  CHECK((c.pp == 1 && c.dp == 0 && c.tp == 1));
  CHECK(m.tp_group(5) == std::vector<int>{4, 5});
  CHECK(m.dp_group(5) == std::vector<int>{5, 7});
  CHECK(m.pp_group(5) == std::vector<int>{1, 5});
  CHECK(m.label() == "dp2-pp2-tp2");
  CHECK(Mesh(4, {0, 2, 1}).dp() == 2);
  CHECK(Mesh(4, {0, 2, 1}).label() == "dp2-pp2");
  CHECK(Mesh(2, {0, 1, 2}).label() == "tp2");
  CHECK(Mesh(1, {}).label() == "dp1");
  // Two nodes of 4: tensor-parallel groups of 4 fill a node each.
  CHECK(Mesh(8, {0, 2, 4}, 4).tp_group(6) == std::vector<int>{4, 5, 6, 7});
  CHECK_THROWS_WITH(Mesh(4, {2, 2, 2}), Catch::Contains("= 8, but the job has 4 ranks"));
  CHECK_THROWS_WITH(Mesh(4, {0, 3, 1}), Catch::Contains("does not divide the job's 4 ranks"));
  CHECK_THROWS_WITH(Mesh(8, {0, 1, 4}, 2), Catch::Contains("must stay inside one node"));
  CHECK_THROWS_WITH(Mesh(4, {1, 0, 4}), Catch::Contains("--pp-size 0"));
}

TEST_CASE("model shape: parameters per layer and shard, activations against Korthikanti et al.") {
  ModelShape bert;  // bert-base
  // The sum over T shards of a layer is the layer with its replicated
  // part (two row-parallel biases, two LayerNorms: 6h) counted T times.
  for (int64_t t : {1, 2, 4})
    CHECK(t * bert.layer_params_per_rank(t) - (t - 1) * 6 * bert.hidden == bert.layer_params());
  CHECK(bert.parameters() == 108893186);  // BertConfig::num_parameters for bert-base-uncased
  // With 2-byte activations, dropout, i = 4h: s·b·h·(10 + 24/t + 5·a·s/(h·t)).
  const int64_t s = 384, b = 8;
  for (int64_t t : {1, 2, 4}) {
    double paper = double(s * b * bert.hidden) *
                   (10.0 + 24.0 / t + 5.0 * bert.heads * s / (double(bert.hidden) * t));
    CHECK(layer_activation_bytes(bert, b, s, 2, true, true, t) == Approx(paper));
  }
  // Without dropout or stored scores: 16e per s·b·h at t = 1 (i = 4h).
  CHECK(layer_activation_bytes(bert, b, s, 4, false, false) == Approx(64.0 * s * b * bert.hidden));
}

TEST_CASE("pipeline stage memory: state by stage, activations by the schedule's held micro-batches") {
  StageMemoryInput in;
  in.model = ModelShape{};
  in.layers_per_stage = {4, 4, 4};
  in.micro = 8;
  in.micro_rows = 2;
  in.seq = 128;
  const auto& m = in.model;
  const double a = layer_activation_bytes(m, 2, 128, 4, true, true);
  auto first = stage_memory(in, 0), middle = stage_memory(in, 1), last = stage_memory(in, 2);
  CHECK(first.params == 4 * m.layer_params() + m.embedding_params());
  CHECK(middle.params == 4 * m.layer_params());
  CHECK(last.params == 4 * m.layer_params() + m.head_params());
  CHECK(first.params + middle.params + last.params == m.parameters());
  CHECK(middle.state == 16.0 * middle.params);
  CHECK(first.held == 8);
  CHECK(first.activations == Approx(8 * 4 * a));
  in.schedule = ScheduleKind::OneFOneB;
  CHECK(stage_memory(in, 0).held == 3);
  CHECK(stage_memory(in, 2).activations == Approx(1 * 4 * a));
  in.recompute = true;
  CHECK(stage_memory(in, 0).activations == Approx(3 * 4 * 4.0 * 2 * 128 * m.hidden + a));
}

TEST_CASE("pipeline cost: simulated makespan, bubble and exposed transfers") {
  PipelineCostInput in;
  in.micro = 2;
  in.forward_s = {1, 1};
  in.backward_s = {2, 2};
  in.p2p_bytes = 1000;
  in.p2p_latency_s = 0.25;
  in.p2p_bandwidth_Bps = 4000;  // 0.25 + 0.25 = 0.5 per transfer
  in.optimizer_s = 0.5;
  auto c = pipeline_cost(in);
  CHECK(c.p2p_s == Approx(0.5));
  CHECK(c.p2p_exposed_s == Approx(1));
  CHECK(c.step_s == Approx(10.5));
  CHECK(c.busy_s == Approx(6));
  CHECK(c.theoretical_bubble == Approx(1.0 / 3));
  in.p2p_bandwidth_Bps = 0;
  CHECK_THROWS_WITH(pipeline_cost(in), Catch::Contains("bandwidth"));
}

TEST_CASE("tensor-parallel shard memory and cost") {
  tensor::ShardMemoryInput mi;
  mi.tp = 4;
  mi.micro_rows = 2;
  mi.seq = 128;
  auto mem = tensor::shard_memory(mi);
  const auto& m = mi.model;
  CHECK(mem.params == m.embedding_params() + m.head_params() + m.layers * m.layer_params_per_rank(4));
  CHECK(mem.activations == Approx(m.layers * layer_activation_bytes(m, 2, 128, 4, true, true, 4)));

  tensor::TensorCostInput in;
  in.tp = 2;
  in.layers = 3;
  in.micro = 2;
  in.layer_forward_s = 1;
  in.layer_backward_s = 2;
  in.other_forward_s = 0.5;
  in.other_backward_s = 0.5;
  in.allreduce_bytes = 100;
  in.allreduce_s = [](double bytes) { return bytes / 1000; };
  in.optimizer_s = 1;
  in.optimizer_share = 0.6;
  auto c = tensor::tensor_cost(in);
  // Compute: 2 micro x (3 layers x 3 / 2 + 1) = 11; 2 x 3 x 4 all-reduces of 0.1.
  CHECK(c.compute_s == Approx(11));
  CHECK(c.allreduces == 24);
  CHECK(c.comm_exposed_s == Approx(2.4));
  CHECK(c.step_s == Approx(11 + 2.4 + 0.6));
  in.recompute = true;
  c = tensor::tensor_cost(in);
  CHECK(c.compute_s == Approx(2 * (3 * 4 / 2.0 + 1)));
  CHECK(c.allreduces == 36);
  in.tp = 1;
  CHECK(tensor::tensor_cost(in).allreduces == 0);
}
