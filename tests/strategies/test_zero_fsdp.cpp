// zero (stages 1-3) and fsdp (full, grad-op, hybrid) must be the baseline's
// arithmetic, partitioned: after five AdamW steps (weight decay groups,
// clipping engaged) from the same weights on the same global batches, the
// same parameters and losses as one process with the whole batch, over 2 and
// 4 Gloo ranks, with prefetch on and off, with and without gradient
// accumulation. Each rank is a copy of this executable running the hidden
// [shard_worker] case. Also: the model state each rank holds is the memory
// model's figure (docs/memory.md), and mixed precision computes in bf16/fp16
// from fp32 masters.
#include "test_catch.h"
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <sstream>
#include <thread>

#include "distributed/launch_env.h"
#include "distributed/process_group.h"
#include "model/bert.h"
#include "model/checkpoint.h"
#include "specs/registry.h"
#include "strategies/shard/groups.h"
#include "strategies/shard/sharded.h"
#include "test_env.h"
#include "train/amp.h"
#include "train/batch.h"
#include "train/optimizer.h"
#include "train/step_timer.h"

using namespace hpcbench;
namespace fs = std::filesystem;

namespace {

constexpr int kSteps = 5;
constexpr int64_t kSeq = 16;
constexpr double kMaxNorm = 1.0;

// Eight small layers beside small embeddings: Ψ/N dominates one unit's
// working set, so the memory figures tell the stages apart.
model::BertConfig tiny() {
  model::BertConfig c;
  c.vocab_size = 128;
  c.hidden_size = 32;
  c.num_hidden_layers = 8;
  c.num_attention_heads = 2;
  c.intermediate_size = 64;
  c.max_position_embeddings = 64;
  c.hidden_dropout_prob = 0;
  c.attention_probs_dropout_prob = 0;
  c.name = "tiny-test";
  return c;
}

// A run's spec: "baseline", "zero2", "fsdp-full", "fsdp-hybrid", then
// options separated by '+': "nopf" (no prefetch), "noov" (gradient
// reduction after each unit's backward, not overlapped), "g2" (shard group of 2),
// "bf16" / "fp16" (mixed precision), "r32" (reduce in fp32).
struct Spec {
  std::string strategy;
  std::string label;  // the strategy as `run --strategy` takes it
  std::string precision = "fp32";
  std::string hosts;  // "hb": two nodes, ranks in blocks; "hc": two nodes, ranks cyclic
};

Spec parse(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string p; std::getline(in, p, '+');) parts.push_back(p);
  Spec s;
  s.strategy = parts.at(0);
  std::vector<std::string> options;
  if (s.strategy.starts_with("zero")) {
    options.push_back("stage=" + s.strategy.substr(4));
    s.strategy = "zero";
  } else if (s.strategy.starts_with("fsdp-")) {
    options.push_back("sharding=" + s.strategy.substr(5));
    s.strategy = "fsdp";
  }
  for (size_t i = 1; i < parts.size(); ++i) {
    const auto& p = parts[i];
    if (p == "nopf") options.push_back("prefetch=off");
    else if (p == "noov") options.push_back("overlap=off");
    else if (p == "bf16" || p == "fp16") s.precision = p;
    else if (p == "r32") options.push_back("reduce=fp32");
    else if (p == "hb" || p == "hc") s.hosts = p;
    else if (p.starts_with("g")) options.push_back("shard-group=" + p.substr(1));
    else FAIL("unknown spec option " << p);
  }
  s.label = s.strategy;
  for (size_t i = 0; i < options.size(); ++i) s.label += (i ? "," : ":") + options[i];
  return s;
}

std::unique_ptr<strategies::shard::Sharded> make(const Spec& spec) {
  auto choice = strategies::parse_label(spec.label, "test");
  choice.validate(spec.precision);
  auto s = strategies::make_strategy(choice);
  auto* sharded = dynamic_cast<strategies::shard::Sharded*>(s.get());
  REQUIRE(sharded);
  s.release();
  return std::unique_ptr<strategies::shard::Sharded>(sharded);
}

std::string self_exe() {
  char buf[4096];
  auto n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  REQUIRE(n > 0);
  return std::string(buf, size_t(n));
}

// Runs `spec` ("baseline", "zero2", "fsdp-full", ...) as `world` processes
// with `rows` rows per rank and micro-step; returns rank 0's outputs.
std::map<std::string, at::Tensor> run(const fs::path& dir, const std::string& spec, int world, int rows, int accum) {
  auto out = dir / (spec + "-" + std::to_string(world) + "-" + std::to_string(rows) + "-" + std::to_string(accum));
  fs::create_directories(out);
  std::ostringstream cmd;
  int port = test::free_loopback_port();
  cmd << "pids=''; ";
  for (int r = 0; r < world; ++r)
    cmd << "RANK=" << r << " WORLD_SIZE=" << world << " LOCAL_RANK=" << r << " LOCAL_WORLD_SIZE=" << world
        << " MASTER_ADDR=127.0.0.1 MASTER_PORT=" << port << " HPCBENCH_SHARD_WORKER='" << spec << " " << rows << " "
        << accum << " " << out.string() << "' " << self_exe() << " '[shard_worker]' > " << (out / std::to_string(r)).string()
        << ".log 2>&1 & pids=\"$pids $!\"; ";
  cmd << "rc=0; for p in $pids; do wait $p || rc=1; done; for f in " << out.string()
      << "/*.log; do tail -n 30 $f; done; exit $rc";
  auto res = test::run_command(cmd.str());
  INFO(spec << " over " << world << " ranks:\n" << res.output);
  REQUIRE(res.exit_code == 0);
  return model::read_safetensors(out / "result.safetensors");
}

void require_same(const std::map<std::string, at::Tensor>& got, const std::map<std::string, at::Tensor>& want,
                  const std::string& what) {
  double num = 0, den = 0;
  for (auto& [k, w] : want) {
    if (!k.starts_with("param/")) continue;
    REQUIRE(got.count(k));
    auto x = got.at(k).to(at::kDouble), y = w.to(at::kDouble);
    num += (x - y).pow(2).sum().item<double>();
    den += y.pow(2).sum().item<double>();
    // qa_outputs.bias has a zero gradient in exact arithmetic (softmax
    // ignores a shift): it holds rounding noise that Adam scales up to
    // ~lr * 1e-2, whatever the order of the sums. The global check covers it.
    if (k == "param/qa_outputs.bias") continue;
    INFO(what << ": " << k);
    CHECK(((x - y).abs() / (1e-5 + 1e-5 * y.abs())).max().item<double>() <= 1.0);
  }
  INFO(what << ": global relative difference " << std::sqrt(num / den));
  CHECK(std::sqrt(num / den) < 1e-5);
  auto lg = got.at("losses"), lw = want.at("losses");
  INFO(what << ": losses " << lg << " vs " << lw);
  CHECK(((lg - lw).abs() / lw.abs()).max().item<double>() < 1e-5);
  auto ng = got.at("norms"), nw = want.at("norms");
  CHECK(((ng - nw).abs() / nw.abs()).max().item<double>() < 1e-4);
}

// The data of micro-step `m`: `global` rows, the same on every rank.
train::Batch batch_of(int64_t m, int64_t global) {
  auto g = at::make_generator<at::CPUGeneratorImpl>(1000 + m);
  train::Batch b;
  b.input_ids = at::randint(1, 128, {global, kSeq}, g, at::kLong);
  b.token_type_ids = (at::arange(kSeq).unsqueeze(0) >= kSeq / 2).to(at::kLong).expand({global, kSeq}).contiguous();
  b.attention_mask = at::ones({global, kSeq}, at::kLong);
  b.attention_mask.narrow(1, kSeq - 3, 3).zero_();
  b.start_positions = at::randint(0, kSeq, {global}, g, at::kLong);
  b.end_positions = at::randint(0, kSeq, {global}, g, at::kLong);
  return b;
}

}  // namespace

// One rank of a run; parameters come from HPCBENCH_SHARD_WORKER.
TEST_CASE("shard worker", "[.][shard_worker]") {
  std::istringstream spec_in(std::getenv("HPCBENCH_SHARD_WORKER"));
  std::string spec_text, out;
  int rows = 0, accum = 0;
  spec_in >> spec_text >> rows >> accum >> out;
  const auto spec = parse(spec_text);
  at::set_num_threads(1);
  auto layout = dist::detect_layout();
  const int world = layout.world_size, rank = layout.rank;
  torch::manual_seed(3);
  model::BertForQuestionAnswering model(tiny());
  model->train();
  train::OptimizerConfig ocfg{1e-3, 0.01, 0.9, 0.999, 1e-6};
  train::StepTimer timer(c10::kCPU);
  train::GradScaler scaler(c10::kCPU, spec.precision == "fp16");
  std::vector<double> losses, norms;
  std::map<std::string, at::Tensor> result;

  if (spec.strategy == "baseline") {
    // Autocast over fp32 weights: the replicating strategies' mixed precision.
    auto opt = train::make_adamw(*model, ocfg);
    auto params = model->parameters();
    for (int s = 0; s < kSteps; ++s) {
      double loss = 0;
      for (int a = 0; a < accum; ++a) {
        auto b = batch_of(s * accum + a, rows * world);
        train::AutocastGuard autocast(c10::kCPU, spec.precision);
        auto o = model->forward(b.input_ids, b.token_type_ids, b.attention_mask, b.start_positions, b.end_positions);
        (o.loss * (scaler.scale() / accum)).backward();
        loss += o.loss.item<double>() / accum;
      }
      bool finite = scaler.unscale(params);
      if (finite) {
        norms.push_back(train::clip_grad_norm(params, kMaxNorm).item<double>());
        opt->step();
      }
      scaler.update(!finite);
      opt->zero_grad(true);
      losses.push_back(loss);
    }
  } else {
    dist::CommOptions copts;
    copts.timeout = std::chrono::seconds(60);
    auto comm = std::make_shared<dist::Comm>(layout, c10::Device(c10::kCPU), copts);
    // A key exchanged again must give this call's values: the last rank comes
    // late to the second call, so a store key left from the first would be
    // read by the others.
    for (int i = 0; i < 2; ++i) {
      if (i == 1 && rank == world - 1) std::this_thread::sleep_for(std::chrono::milliseconds(300));
      auto all = comm->exchange("test/twice", std::to_string(100 * i + rank));
      for (int r = 0; r < world; ++r) REQUIRE(all[size_t(r)] == std::to_string(100 * i + r));
    }
    auto strategy = make(spec);
    EnginePolicy engine;
    engine.precision = spec.precision;
    strategies::StrategyContext sctx{c10::kCPU, rank, world, comm, {}, ocfg, 0, engine};
    for (int r = 0; r < world && !spec.hosts.empty(); ++r)
      sctx.hosts.push_back(spec.hosts == "hb" ? (r < world / 2 ? "n1" : "n2") : (r % 2 ? "n2" : "n1"));
    auto [topo, updater_of] = strategy->setup(model, sctx);
    auto& updater = *updater_of;
    // The parameters the model computes with are in the compute dtype.
    result["compute_bytes"] = at::full({1}, double(model->parameters().front().element_size()), at::kDouble);
    size_t state_bytes = 0;
    int skipped = 0;
    for (int s = 0; s < kSteps; ++s) {
      timer.begin();
      at::Tensor loss = at::zeros({1}, at::kDouble);
      for (int a = 0; a < accum; ++a) {
        auto b = batch_of(s * accum + a, rows * world).slice(rank * rows, (rank + 1) * rows);
        loss += strategy->forward_backward(model, b, scaler.scale() / accum, a + 1 == accum, timer).to(at::kDouble) / accum;
      }
      strategy->finish_gradients(timer);
      bool finite = !scaler.enabled() || updater.all_finite(scaler.unscale(updater.params()));
      if (finite) {
        norms.push_back(updater.clip(kMaxNorm).item<double>());
        updater.step();
      }
      skipped += !finite;
      scaler.update(!finite);
      if (s == 0) state_bytes = updater.state_bytes();
      updater.zero_grad();
      comm->allreduce(loss, /*average=*/true);
      losses.push_back(loss.item<double>());
      timer.end();
    }
    updater.gather_whole();
    auto all = at::empty({world}, at::kDouble);
    comm->allgather(all, at::full({1}, double(state_bytes), at::kDouble));
    result["state_bytes"] = all;
    result["theory_bytes"] = at::full({1}, topo.state_theory_bytes, at::kDouble);
    result["ddp_bytes"] = at::full({1}, 16.0 * double(strategy->parameters()), at::kDouble);
    result["params"] = at::full({1}, double(strategy->parameters()), at::kDouble);
    result["largest_unit"] = at::full({1}, double(strategy->largest_unit()), at::kDouble);
    result["skipped"] = at::full({1}, double(skipped), at::kDouble);
    auto scales = at::empty({world}, at::kDouble);
    comm->allgather(scales, at::full({1}, scaler.scale(), at::kDouble));
    result["scales"] = scales;
    comm->barrier();
  }
  if (rank == 0) {
    for (auto& np : model->named_parameters(true)) result["param/" + np.key()] = np.value().detach().clone();
    result["losses"] = at::tensor(losses, at::kDouble);
    result["norms"] = at::tensor(norms, at::kDouble);
    model::write_safetensors(result, fs::path(out) / "result.safetensors");
  }
}

TEST_CASE("zero stages 1-3 and fsdp equal the baseline with the same global batch") {
  test::TempDir dir;
  auto base4 = run(dir.path, "baseline", 1, 4, 1);
  auto base8 = run(dir.path, "baseline", 1, 8, 1);
  // The comparison can fail: another global batch gives other weights.
  {
    double num = 0, den = 0;
    for (auto& [k, v] : base4)
      if (k.starts_with("param/")) {
        num += (v - base8.at(k)).pow(2).sum().item<double>();
        den += v.pow(2).sum().item<double>();
      }
    CHECK(std::sqrt(num / den) > 1e-4);
  }
  // Clipping is engaged, so the sharded global norm is tested.
  CHECK(base4.at("norms").max().item<double>() > kMaxNorm);

  // Hybrid: shard groups of 1 over 2 ranks (replicas only) and of 2 over 4
  // ranks (reduce-scatter in the group, all-reduce across groups).
  for (std::string prefetch : {"", "+nopf", "+noov"})
    for (std::string spec : {"zero1", "zero2", "zero3", "fsdp-full", "fsdp-grad-op", "fsdp-hybrid"}) {
      const bool hybrid = spec == "fsdp-hybrid";
      require_same(run(dir.path, spec + (hybrid ? "+g1" : "") + prefetch, 2, 2, 1), base4,
                   spec + prefetch + " over 2 ranks");
      require_same(run(dir.path, spec + (hybrid ? "+g2" : "") + prefetch, 4, 2, 1), base8,
                   spec + prefetch + " over 4 ranks");
    }
  // Hybrid's default groups are the nodes, wherever SLURM put the ranks:
  // in blocks (0 1 | 2 3) or cyclic (0 2 | 1 3).
  require_same(run(dir.path, "fsdp-hybrid+hb", 4, 2, 1), base8, "fsdp-hybrid over 2 nodes, ranks in blocks");
  require_same(run(dir.path, "fsdp-hybrid+hc", 4, 2, 1), base8, "fsdp-hybrid over 2 nodes, ranks cyclic");
}

TEST_CASE("hybrid shard groups are the nodes' ranks, or consecutive ranks of a given size") {
  using strategies::shard::shard_groups;
  using G = std::vector<std::vector<int>>;
  CHECK(shard_groups(0, {"n1", "n1", "n2", "n2"}, 4) == G{{0, 1}, {2, 3}});
  CHECK(shard_groups(0, {"n1", "n2", "n1", "n2"}, 4) == G{{0, 2}, {1, 3}});
  CHECK(shard_groups(0, {}, 3) == G{{0, 1, 2}});
  CHECK(shard_groups(2, {"n1", "n2", "n1", "n2"}, 4) == G{{0, 1}, {2, 3}});
  CHECK(shard_groups(1, {}, 2) == G{{0}, {1}});
  CHECK_THROWS_WITH(shard_groups(0, {"n1", "n1", "n2"}, 3),
                    Catch::Contains("node n1 runs 2 ranks and node n2 runs 1"));
  CHECK_THROWS_WITH(shard_groups(3, {}, 4), Catch::Contains("--shard-group-size 3"));
}

TEST_CASE("zero and fsdp accumulate gradients over micro-steps") {
  test::TempDir dir;
  auto base = run(dir.path, "baseline", 1, 4, 2);
  for (std::string spec : {"zero1", "zero2", "zero3", "fsdp-full", "fsdp-hybrid+g1"})
    require_same(run(dir.path, spec, 2, 2, 2), base, spec + " over 2 ranks, accumulation 2");
}

TEST_CASE("model state per rank is the memory model's figure for 1, 2 and 4 ranks") {
  test::TempDir dir;
  std::map<std::string, std::map<int, double>> measured;
  for (std::string spec : {"zero1", "zero1+noov", "zero2", "zero2+noov", "zero3", "zero3+nopf+noov", "fsdp-full",
                           "fsdp-full+nopf", "fsdp-full+nopf+noov", "fsdp-grad-op", "fsdp-hybrid"})
    for (int world : {1, 2, 4}) {
      const bool hybrid = spec == "fsdp-hybrid";
      const int group = std::min(world, 2);
      auto r = run(dir.path, hybrid ? spec + "+g" + std::to_string(group) : spec, world, 1, 1);
      double theory = r.at("theory_bytes").item<double>();
      auto bytes = r.at("state_bytes");
      for (int k = 0; k < world; ++k) {
        double got = bytes[k].item<double>();
        INFO(spec << " rank " << k << " of " << world << ": " << got << " bytes, theory " << theory);
        CHECK(std::abs(got - theory) <= 0.05 * theory);
      }
      measured[spec][world] = bytes[0].item<double>();
      // Without prefetch and overlap the model is the ZeRO paper's closed forms
      // plus one unit's working set, computed here from Ψ, N and the largest unit U:
      // its full gradients (4U), gathered (4U) where parameters are partitioned,
      // and where gradients are reduce-scattered this rank's part of them (4U/N).
      const double psi = r.at("params").item<double>(), U = r.at("largest_unit").item<double>();
      const double N = hybrid ? group : world;
      std::map<std::string, double> paper = {{"zero1+noov", 8 * psi + 8 * psi / N + 4 * U},
                                             {"zero2+noov", 4 * psi + 12 * psi / N + 4 * U + 4 * U / N},
                                             {"zero3+nopf+noov", 16 * psi / N + 8 * U + 4 * U / N},
                                             {"fsdp-full+nopf+noov", 16 * psi / N + 8 * U + 4 * U / N}};
      if (paper.count(spec)) {
        INFO(spec << " over " << world << ": model " << theory << ", paper " << paper[spec]);
        CHECK(std::abs(theory - paper[spec]) <= 0.01 * paper[spec]);
      }
      // One rank: ddp's 16Ψ plus one unit's working set (grad-op keeps a
      // gathered copy beside the shard, 20Ψ, as FSDP does).
      if (world == 1 && spec != "fsdp-grad-op") CHECK(std::abs(measured[spec][1] - r.at("ddp_bytes").item<double>()) <= 0.15 * theory);
    }
  // Sharding saves memory as the paper says it does; prefetch costs a unit.
  CHECK(measured["zero1"][4] < measured["zero1"][1]);
  CHECK(measured["zero2"][4] < measured["zero1"][4]);
  CHECK(measured["zero3"][4] < measured["zero2"][4]);
  CHECK(measured["zero3+nopf+noov"][4] < 0.4 * measured["zero3+nopf+noov"][1]);
  CHECK(measured["fsdp-full+nopf"][4] < measured["fsdp-full"][4]);
  CHECK(measured["fsdp-full+nopf+noov"][4] < measured["fsdp-full+nopf"][4]);
  CHECK(measured["fsdp-full"][4] < measured["fsdp-hybrid"][4]);
}

// bf16/fp16: the model computes with 2-byte copies of fp32 master
// partitions. Every sharded form does the same arithmetic (the same bf16
// parameters, the same bf16 gradients summed in fp32), so they agree with
// each other as fp32 runs do; against the fp32 baseline they differ by bf16
// rounding only. The memory model's mixed-precision forms hold too.
TEST_CASE("zero and fsdp compute in bf16 and fp16 from fp32 masters") {
  test::TempDir dir;
  auto base = run(dir.path, "baseline", 1, 4, 1);
  auto ref = run(dir.path, "zero1+bf16+r32", 2, 2, 1);
  CHECK(ref.at("compute_bytes").item<double>() == 2);
  // The masters (what the checkpoint gets) are fp32.
  CHECK(ref.at("param/qa_outputs.weight").scalar_type() == at::kFloat);
  auto rel = [](const std::map<std::string, at::Tensor>& a, const std::map<std::string, at::Tensor>& b) {
    double num = 0, den = 0;
    for (auto& [k, v] : b)
      if (k.starts_with("param/")) {
        num += (a.at(k).to(at::kDouble) - v.to(at::kDouble)).pow(2).sum().item<double>();
        den += v.to(at::kDouble).pow(2).sum().item<double>();
      }
    return std::sqrt(num / den);
  };
  // bf16 changes the result (the test can tell), but only by rounding.
  INFO("bf16 zero1 against the fp32 baseline: " << rel(ref, base));
  CHECK(rel(ref, base) > 1e-6);
  CHECK(rel(ref, base) < 2e-2);
  for (std::string spec : {"zero2+bf16+r32", "zero3+bf16+r32", "fsdp-full+bf16+r32", "fsdp-grad-op+bf16+r32",
                           "fsdp-full+bf16+r32+nopf"}) {
    auto r = run(dir.path, spec, 2, 2, 1);
    INFO(spec << " against zero1 bf16: " << rel(r, ref));
    CHECK(rel(r, ref) < 1e-5);
    auto bytes = r.at("state_bytes");
    double theory = r.at("theory_bytes").item<double>();
    for (int k = 0; k < 2; ++k) {
      INFO(spec << " rank " << k << ": " << bytes[k].item<double>() << " bytes, theory " << theory);
      CHECK(std::abs(bytes[k].item<double>() - theory) <= 0.05 * theory);
    }
  }
  // Reducing in bf16 rounds the sums: close to, not equal to, fp32 sums.
  auto r16 = run(dir.path, "fsdp-full+bf16", 2, 2, 1);
  INFO("bf16 reduction against fp32 reduction: " << rel(r16, ref));
  CHECK(rel(r16, ref) < 2e-2);
  // fp16 with dynamic loss scaling: the first steps overflow at 2^16 on
  // some rank, every rank skips them together (else the partitions would
  // drift apart and the losses with them), and training goes on.
  auto h = run(dir.path, "fsdp-full+fp16+r32", 2, 2, 1);
  CHECK(h.at("compute_bytes").item<double>() == 2);
  const double skipped = h.at("skipped").item<double>();
  INFO("fp16 against the fp32 baseline: " << rel(h, base) << ", skipped " << skipped << ", final scales "
                                          << h.at("scales"));
  CHECK(skipped >= 1);
  CHECK(skipped < kSteps);
  // Every rank halved its scale for every skipped step (no growth in 5 steps).
  for (int k = 0; k < 2; ++k) CHECK(h.at("scales")[k].item<double>() == 65536.0 * std::pow(0.5, skipped));
  // The fp16 run takes one update fewer than the fp32 one (the skipped step),
  // so its distance from it is mostly that missing update: 2.15e-2 since the
  // sharded engine's static storage (shard/buffers.h), whose bf16 runs above
  // still equal zero1's to 1e-5 and whose fp16 fsdp runs through the binary
  // print the earlier engine's losses exactly. Bounded at 2.5e-2.
  CHECK(rel(h, base) < 2.5e-2);
  CHECK(h.at("losses").isfinite().all().item<bool>());
}
