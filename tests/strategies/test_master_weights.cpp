// The one master-weights component (strategies/master_weights.h) against
// exact arithmetic: a flat's partitions are the parameters' fp32 values end
// to end (zero padding), its write-back is ATen's own cast of the master
// into this rank's chunk and nowhere else, the parameters view what they
// should; the replicated model's masters over one rank; and the dtype the
// weights live in, decided in one place.
#include "test_catch.h"

#include <ATen/ATen.h>
#include <torch/torch.h>

#include "strategies/master_weights.h"
#include "strategies/updater.h"
#include "train/optimizer.h"

using namespace hpcbench;
using strategies::MasterFlat;

namespace {

EnginePolicy engine_of(const std::string& precision, bool resident) {
  EnginePolicy e;
  e.precision = precision;
  if (resident) e.weights = EnginePolicy::Weights::Resident;
  return e;
}

// bf16-resident with the fused kernels: the master step is the one kernel
// unless the engine turns that lever off (--no-fused-adamw).
EnginePolicy fused_engine(bool adamw_kernel = true) {
  auto e = engine_of("bf16", true);
  e.kernels = EnginePolicy::Kernels::Fused;
  e.adamw_kernel = adamw_kernel;
  return e;
}

// Three parameters of 15, 7 and 4 elements: 26, padded to 28 over 4 ranks.
std::vector<at::Tensor> three_params() {
  torch::manual_seed(3);
  return {torch::randn({3, 5}).requires_grad_(true), torch::randn({7}).requires_grad_(true),
          torch::randn({2, 2}).requires_grad_(true)};
}

at::Tensor flat_of(const std::vector<at::Tensor>& ps, int64_t padded) {
  std::vector<at::Tensor> parts;
  for (auto& p : ps) parts.push_back(p.detach().reshape({-1}));
  auto flat = at::cat(parts);
  return at::cat({flat, at::zeros({padded - flat.numel()})});
}

bool same_storage(const at::Tensor& a, const at::Tensor& b) {
  return a.storage().unsafeGetStorageImpl() == b.storage().unsafeGetStorageImpl();
}

model::BertConfig small() {
  model::BertConfig c;
  c.vocab_size = 128;
  c.hidden_size = 32;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 2;
  c.intermediate_size = 64;
  c.max_position_embeddings = 32;
  c.name = "masters-test";
  return c;
}

}  // namespace

TEST_CASE("weight_dtype: replicated weights are fp32 unless resident; gathered ones take the compute dtype",
          "[strategies][masters]") {
  using strategies::weight_dtype;
  CHECK(weight_dtype(engine_of("bf16", false), false) == c10::kFloat);
  CHECK(weight_dtype(engine_of("bf16", true), false) == c10::kBFloat16);
  CHECK(weight_dtype(engine_of("fp16", false), false) == c10::kFloat);
  CHECK(weight_dtype(engine_of("fp32", false), false) == c10::kFloat);
  CHECK(weight_dtype(engine_of("tf32", false), false) == c10::kFloat);
  CHECK(weight_dtype(engine_of("bf16", false), true) == c10::kBFloat16);
  CHECK(weight_dtype(engine_of("fp16", false), true) == c10::kHalf);
  CHECK(weight_dtype(engine_of("fp32", false), true) == c10::kFloat);
}

TEST_CASE("a bf16 flat cut over 4 ranks: rank 2's master, its write-back, the parameters' views",
          "[strategies][masters]") {
  auto ps = three_params();
  const auto want = flat_of(ps, 28);
  MasterFlat f;
  for (auto& p : ps) f.add(p);
  REQUIRE(f.offsets == std::vector<int64_t>{0, 15, 22});
  strategies::make_masters(f, nullptr, 4, 2, c10::kBFloat16, /*replicated=*/true);
  REQUIRE(f.numel == 26);
  REQUIRE(f.shard_numel == 7);
  CHECK_FALSE(f.shard_is_view);
  CHECK(f.shard.scalar_type() == c10::kFloat);
  CHECK(at::equal(f.shard, want.narrow(0, 14, 7)));
  CHECK(at::equal(f.full, want.to(c10::kBFloat16)));

  // A step's update, then the write-back: ATen's cast in rank 2's chunk, the
  // other ranks' chunks untouched.
  at::NoGradGuard no_grad;
  f.shard.add_(at::linspace(-1, 1, 7) * 1e-2);
  auto before = f.full.clone();
  auto chunk = strategies::write_back(f, 2);
  CHECK(same_storage(chunk, f.full));
  auto after = want.to(c10::kBFloat16);
  after.narrow(0, 14, 7).copy_(f.shard.to(c10::kBFloat16));
  CHECK(at::equal(f.full, after));
  CHECK(at::equal(f.full.narrow(0, 0, 14), before.narrow(0, 0, 14)));

  strategies::view_compute(f);
  for (size_t k = 0; k < ps.size(); ++k) {
    CHECK(ps[k].scalar_type() == c10::kBFloat16);
    CHECK(same_storage(ps[k], f.full));
    CHECK(at::equal(ps[k], f.full.narrow(0, f.offsets[k], ps[k].numel()).view(ps[k].sizes())));
  }
  auto whole = want.clone();
  strategies::view_whole(f, whole);
  for (size_t k = 0; k < ps.size(); ++k) {
    CHECK(ps[k].scalar_type() == c10::kFloat);
    CHECK(same_storage(ps[k], whole));
  }
}

TEST_CASE("an fp32 replicated flat: the parameters are their own masters, the write-back copies nothing",
          "[strategies][masters]") {
  auto ps = three_params();
  MasterFlat f;
  for (auto& p : ps) f.add(p);
  strategies::make_masters(f, nullptr, 2, 1, c10::kFloat, /*replicated=*/true);
  CHECK(f.shard_is_view);
  CHECK(same_storage(f.shard, f.full));
  CHECK(at::equal(f.shard, flat_of(ps, 26).narrow(0, 13, 13)));
  // Partitioned (not replicated): the master is memory of its own and the
  // full buffer is the owner's to make.
  MasterFlat g;
  for (auto& p : ps) g.add(p);
  strategies::make_masters(g, nullptr, 2, 0, c10::kFloat, /*replicated=*/false);
  CHECK_FALSE(g.shard_is_view);
  CHECK_FALSE(g.full.defined());
  CHECK(at::equal(g.shard, flat_of(ps, 26).narrow(0, 0, 13)));
}

TEST_CASE("a replicated model's masters: one flat over one rank, per-parameter masters and gradients",
          "[strategies][masters]") {
  torch::manual_seed(5);
  model::BertForQuestionAnswering model(small());
  std::vector<at::Tensor> fp32;
  for (auto& p : model->parameters()) fp32.push_back(p.detach().clone());
  strategies::MasterWeights masters(*model, engine_of("bf16", true));
  auto params = model->parameters();
  REQUIRE(masters.masters().size() == params.size());
  for (size_t k = 0; k < params.size(); ++k) {
    INFO("parameter " << k);
    CHECK(at::equal(masters.masters()[k].detach(), fp32[k]));
    CHECK(masters.masters()[k].requires_grad());
    CHECK(params[k].scalar_type() == c10::kBFloat16);
    CHECK(at::equal(params[k].detach(), fp32[k].to(c10::kBFloat16)));
  }
  // Gradients in: ATen's cast of each bf16 gradient; a missing one is zeros.
  for (size_t k = 1; k < params.size(); ++k) params[k].mutable_grad() = at::randn_like(params[k]);
  params[0].mutable_grad() = at::Tensor();
  masters.gradients_in();
  CHECK(at::equal(masters.masters()[0].grad(), at::zeros_like(fp32[0])));
  for (size_t k = 1; k < params.size(); ++k) CHECK(at::equal(masters.masters()[k].grad(), params[k].grad().to(at::kFloat)));
  // The masters' update into the compute copy.
  {
    at::NoGradGuard no_grad;
    for (auto& m : masters.masters()) m.add_(0.01);
  }
  masters.copy_out();
  for (size_t k = 0; k < params.size(); ++k)
    CHECK(at::equal(params[k].detach(), masters.masters()[k].detach().to(c10::kBFloat16)));
  masters.use_masters();
  for (size_t k = 0; k < params.size(); ++k) CHECK(at::equal(params[k].detach(), masters.masters()[k].detach()));
  masters.use_compute();
  CHECK(params[0].scalar_type() == c10::kBFloat16);
  // Resident only where the engine says so.
  CHECK(strategies::resident_weights(*model, engine_of("bf16", false)) == nullptr);
}

TEST_CASE("the engine decides residency and how the masters are stepped", "[strategies][masters]") {
  auto masters = [](const EnginePolicy& e) {
    model::BertForQuestionAnswering m(small());
    return strategies::resident_weights(*m, e);
  };
  CHECK(masters(engine_of("bf16", false)) == nullptr);
  CHECK(masters(engine_of("fp16", false)) == nullptr);
  CHECK(masters(engine_of("fp32", false)) == nullptr);
  // The fused kernels step the masters with the one kernel, except where
  // that lever is off (--no-fused-adamw); the unfused engine op by op.
  CHECK_FALSE(masters(engine_of("bf16", true))->fused());
  CHECK(masters(fused_engine())->fused());
  CHECK_FALSE(masters(fused_engine(/*adamw_kernel=*/false))->fused());
}

TEST_CASE("the fused master step (the --fused engine's) equals the op-by-op one: fp32 copies, clip, AdamW, copy out",
          "[strategies][masters]") {
  // Two equal models, one stepped each way on the same bf16 gradients with
  // make_adamw's two groups (decay on), clipping engaged. Tolerance as
  // tests/kernels/test_master_adamw.cpp's: fp32 in another order, a few
  // units of roundoff a step; a wrong group (decay on a bias) is 1e-5 |x|,
  // ten times it.
  train::OptimizerConfig cfg;
  cfg.lr = 1e-3;
  cfg.weight_decay = 0.1;
  torch::manual_seed(7);
  model::BertForQuestionAnswering a(small());
  torch::manual_seed(7);
  model::BertForQuestionAnswering b(small());
  strategies::MasterWeights ma(*a, engine_of("bf16", true)), mb(*b, fused_engine());
  REQUIRE_FALSE(ma.fused());
  REQUIRE(mb.fused());
  auto oa = strategies::adamw_of_masters(*a, ma, cfg);
  auto ob = strategies::adamw_of_masters(*b, mb, cfg);
  auto pa = a->parameters(), pb = b->parameters();
  for (int step = 1; step <= 3; ++step) {
    INFO("step " << step);
    for (size_t k = 0; k < pa.size(); ++k) {
      auto g = (4.0 * at::randn_like(pa[k], at::kFloat)).to(c10::kBFloat16);
      pa[k].mutable_grad() = g;
      pb[k].mutable_grad() = g.clone();
    }
    ma.gradients_in();
    const double na = train::clip_grad_norm(ma.masters(), 1.0).item<double>();
    oa->step();
    ma.copy_out();
    const double nb = mb.clip_fused(1.0).item<double>();
    mb.step_fused(static_cast<const train::FusedAdamW&>(*ob));
    // The norm sums some 30,000 squares in fp32 in another order (per
    // parameter then over the parameters, against over the flat): pairwise
    // sums grow the unit roundoff by about log2(n) = 15, so 1e-5.
    CHECK(std::abs(na - nb) <= 1e-5 * na);
    REQUIRE(na > 1.0);  // the clip engaged
    for (size_t k = 0; k < pa.size(); ++k) {
      INFO("parameter " << k);
      auto x = ma.masters()[k].detach().to(at::kDouble), y = mb.masters()[k].detach().to(at::kDouble);
      CHECK(((x - y).abs() / (1e-6 + 1e-6 * x.abs())).max().item<double>() <= 1.0);
      CHECK(at::equal(pb[k].detach(), mb.masters()[k].detach().to(c10::kBFloat16)));
    }
    oa->zero_grad(true);
    ob->zero_grad(true);
  }
  // Fused, no fp32 gradients are held: the masters, m and v, 12 bytes a parameter.
  int64_t held = 0;
  for (const auto& t : mb.held()) held += static_cast<int64_t>(t.nbytes());
  int64_t params = 0;
  for (const auto& p : pb) params += p.numel();
  CHECK(held == 12 * params);
}
