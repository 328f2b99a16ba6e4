#include <algorithm>
#include <numeric>

#include "test_catch.h"

#include <fmt/format.h>

#include "core/error.h"
#include "model/bert.h"
#include "predict/layout.h"
#include "predict/step_model.h"
#include "results/bench_comm_file.h"
#include "specs/model_shape.h"
#include "specs/registry.h"
#include "strategies/ddp/buckets.h"
#include "strategies/tensor/cost.h"

using namespace hpcbench;
using namespace hpcbench::predict;

namespace {
strategies::Choice label(const std::string& text) { return strategies::parse_label(text, "test"); }
const std::string kDdp = "ddp:bucket_mb=0.0015";
}  // namespace

namespace {

// Bandwidth only: t = S·f(op, n) / 1 MB/s, so that a schedule's comm time is
// its bus traffic.
class Linear final : public CommModel {
 public:
  double seconds(const std::string& op, double bytes, const Group& g) const override {
    if (g.ranks() <= 1) return 0;
    return bytes * results::bus_factor(op, g.ranks()) / 1e6;
  }
  std::string describe() const override { return "linear"; }
};

// Embeddings (100, no matmul), one layer (600 + 400, 90 % of the compute),
// head (10, 10 %). ddp's buckets with a cap of 1572 bytes (kDdp): the head and
// the layer's second tensor (1640 bytes), then the layer's first tensor,
// then the embeddings.
Layout toy_layout() {
  Layout l;
  l.model = "toy";
  l.unit_names = {"embeddings", "layer.0", "head"};
  l.unit_numel = {100, 1000, 10};
  l.unit_share = {0, 0.9, 0.1};
  l.param_numel = {100, 600, 400, 10};
  l.param_unit = {0, 1, 1, 2};
  l.parameters = 1110;
  return l;
}

Baseline toy_baseline() {
  Baseline b;
  b.forward_s = 1;
  b.backward_s = 2;
  b.optimizer_s = 0.5;
  b.batch = 4;
  b.step_s = 3.5;
  return b;
}

double comm_seconds(const std::vector<Task>& t) {
  double s = 0;
  for (auto& x : t)
    if (x.stream == Stream::comm) s += x.seconds;
  return s;
}

}  // namespace

TEST_CASE("ddp: the bucket replay exposes the last bucket, by hand") {
  Linear comm;
  auto l = toy_layout();
  auto b = toy_baseline();
  // One rank: nothing to communicate, the baseline's step.
  auto one = predict_step(b, l, label(kDdp), {1, 1}, comm, {});
  CHECK(one.step_s == Approx(3.5));
  CHECK(one.speedup == Approx(1));
  // Two ranks. Backward: head 0..0.2 (its tensor ready at 0.2), layer
  // 0.2..2.0 with the 400-element tensor ready at 0.2 + 1.8·400/1000 = 0.92
  // and the 600 one at 2.0, embeddings (no compute) at 2.0. Bucket 0 (4·410
  // bytes, 1.64 ms) launches at 0.92 and hides; buckets 1 and 2 (4·700 bytes,
  // 2.8 ms: the layer's first tensor, then the embeddings) launches at 2.0
  // and is exposed whole.
  auto two = predict_step(b, l, label(kDdp), {1, 2}, comm, {});
  CHECK(two.exposed_s == Approx(0.0028));
  CHECK(two.exposed_by_op["all_reduce"] == Approx(0.0028));
  CHECK(two.step_s == Approx(3.5028));
  CHECK(two.comm_s == Approx(0.00164 + 0.0028));
  CHECK(two.speedup == Approx(2 * 3.5 / 3.5028));
  CHECK(two.efficiency == Approx(3.5 / 3.5028));
  // Without overlap both buckets wait until backward has ended.
  auto no = predict_step(b, l, label(kDdp + ",overlap=off"), {1, 2}, comm, {});
  CHECK(no.exposed_s == Approx(0.00164 + 0.0028));
}

TEST_CASE("traffic: zero-3 and fsdp move 1.5x ddp's bytes, zero-2 as much as ddp") {
  Linear comm;
  auto l = toy_layout();
  auto b = toy_baseline();
  StepOptions o;  // fp32: 4-byte gathers and reductions, as ddp's buckets
  for (Shape s : {Shape{1, 4}, Shape{1, 8}}) {
    double ddp = comm_seconds(step_schedule(b, l, label("ddp"), s, comm, o));
    CHECK(ddp == Approx(4.0 * 1110 * results::bus_factor("all_reduce", s.world()) / 1e6));
    CHECK(comm_seconds(step_schedule(b, l, label("zero:stage=3"), s, comm, o)) == Approx(1.5 * ddp));
    CHECK(comm_seconds(step_schedule(b, l, label("fsdp"), s, comm, o)) == Approx(1.5 * ddp));
    CHECK(comm_seconds(step_schedule(b, l, label("zero:stage=2"), s, comm, o)) == Approx(ddp));
    // grad-op keeps forward's gathers for backward: 1x.
    CHECK(comm_seconds(step_schedule(b, l, label("fsdp:sharding=grad-op"), s, comm, o)) == Approx(ddp));
  }
  // The optimizer steps a 1/N partition.
  auto z = predict_step(b, l, label("zero:stage=2"), {1, 4}, comm, o);
  CHECK(z.optimizer_s == Approx(0.125));
  // Memory from the memory model: ddp replicates 16 bytes a parameter,
  // zero-3 partitions them (plus its working set of gathered units).
  auto d = predict_step(b, l, label("ddp"), {1, 4}, comm, o);
  CHECK(d.memory_bytes == Approx(16.0 * 1110));
  auto z3 = predict_step(b, l, label("zero:stage=3"), {1, 4}, comm, o);
  CHECK(z3.memory_persistent == Approx(16.0 * 1110 / 4));
}

TEST_CASE("layout: units and parameters come from the model's code") {
  auto cfg = model::BertConfig::preset("bert-tiny");
  auto l = model_layout(cfg, 128);
  CHECK(l.parameters == cfg.num_parameters());
  CHECK(std::accumulate(l.unit_numel.begin(), l.unit_numel.end(), int64_t{0}) == l.parameters);
  CHECK(l.unit_names.front() == "embeddings");
  CHECK(l.unit_names.back() == "head");
  CHECK(std::accumulate(l.unit_share.begin(), l.unit_share.end(), 0.0) == Approx(1));
  CHECK(l.unit_share[1] == Approx(l.unit_share[2]));
  // ddp's buckets, cut by its code from the layout's parameters: each
  // parameter in one bucket, the first holding the last parameters (the
  // head's, ready first).
  std::vector<int64_t> bytes;
  for (auto n : l.param_numel) bytes.push_back(4 * n);
  auto buckets = strategies::ddp::assign_buckets(bytes, std::vector<int>(bytes.size(), 0), 0.25);
  std::vector<int> seen(l.param_numel.size(), 0);
  for (auto& bucket : buckets)
    for (auto k : bucket) ++seen[k];
  CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
  CHECK(buckets.size() > 2);
  CHECK(l.param_unit[buckets.front().front()] == l.unit_names.size() - 1);
}

// The tensor strategy's schedule, replayed, is the closed form
// strategies/tensor/cost.h gives (every all-reduce exposed, the layers'
// compute / T, the replicated rest whole, the shard's share of the
// optimizer); with dp groups the shard's gradients add one all-reduce across
// them. Its memory is the shard's model state (ModelShape's count).
TEST_CASE("tensor: the schedule replays to the closed-form tensor cost, and the memory is the shard's") {
  const auto cfg = model::BertConfig::preset("bert-mini");
  const int64_t seq = 64;
  auto l = model_layout(cfg, seq);
  Baseline b = toy_baseline();
  Linear comm;
  const strategies::ModelShape shape{cfg.vocab_size, cfg.hidden_size, cfg.num_hidden_layers, cfg.num_attention_heads,
                                     cfg.intermediate_size, cfg.max_position_embeddings, cfg.type_vocab_size};
  b.seq = seq;
  for (int tp : {1, 2, 4}) {
    INFO("tp " << tp);
    strategies::tensor::ShardMemoryInput mi;
    mi.model = shape;
    mi.tp = tp;
    const auto shard = strategies::tensor::shard_memory(mi);
    strategies::tensor::TensorCostInput in;
    in.tp = tp;
    in.layers = static_cast<int>(cfg.num_hidden_layers);
    double layer_share = 0;
    for (size_t u = 1; u + 1 < l.unit_share.size(); ++u) layer_share += l.unit_share[u];
    in.layer_forward_s = b.forward_s * layer_share / in.layers;
    in.layer_backward_s = b.backward_s * layer_share / in.layers;
    in.other_forward_s = b.forward_s * (1 - layer_share);
    in.other_backward_s = b.backward_s * (1 - layer_share);
    in.allreduce_bytes = static_cast<double>(b.batch * seq * cfg.hidden_size * 4);
    in.allreduce_s = [&](double bytes) { return comm.seconds("all_reduce", bytes, {1, tp}); };
    in.optimizer_s = b.optimizer_s;
    in.optimizer_share = static_cast<double>(shard.params) / static_cast<double>(l.parameters);
    auto want = strategies::tensor::tensor_cost(in);

    auto p = predict_step(b, l, label(fmt::format("tensor:tp-size={}", tp)), {1, tp}, comm, {});
    CHECK(p.step_s == Approx(want.step_s).epsilon(1e-12));
    CHECK(p.exposed_s == Approx(want.comm_exposed_s).margin(1e-12));
    CHECK(p.memory_bytes == Approx(shard.state).epsilon(1e-12));
    CHECK(p.speedup == Approx(b.step_s / p.step_s).epsilon(1e-12));  // one replica: the same batch a step

    // Two groups: the same step plus the shard's gradients all-reduced
    // across them, twice the samples.
    auto d = predict_step(b, l, label(fmt::format("tensor:tp-size={},dp-size=2", tp)), {1, 2 * tp}, comm, {});
    const double grads = comm.seconds("all_reduce", 4.0 * static_cast<double>(shard.params), {1, 2});
    CHECK(d.step_s == Approx(want.step_s + grads).epsilon(1e-12));
    CHECK(d.samples_per_s == Approx(2 * b.batch / d.step_s).epsilon(1e-12));
  }
}
