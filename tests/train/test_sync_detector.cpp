// The host-sync detector that shows --cuda-graph's step never waits on the
// device (lib/train/op_count.h): it must see the synchronising operations
// and nothing else, or its "0 in the step" would prove nothing.
#include "test_catch.h"

#include <ATen/ATen.h>
#include <ATen/ScalarOps.h>

#include <algorithm>

#include "data/features.h"
#include "train/batch.h"
#include "train/op_count.h"
#include "train/optimizer.h"

using namespace hpcbench;

namespace {
bool has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}
}  // namespace

TEST_CASE("the sync detector reports what reads a tensor on the host, and only that") {
  train::SyncDetector d(true);
  auto t = at::arange(6, at::kFloat);

  d.arm();
  auto u = (t * 2 + 1).sum();
  at::_foreach_mul_(std::vector<at::Tensor>{t}, u);
  CHECK(d.disarm().empty());

  d.arm();
  (void)u.item<float>();
  auto synced = d.disarm();
  CHECK(has(synced, "aten::_local_scalar_dense"));

  d.arm();
  (void)t.nonzero();
  CHECK(has(d.disarm(), "aten::nonzero"));

  d.arm();
  (void)t.gt(2).any().is_nonzero();
  CHECK(has(d.disarm(), "aten::is_nonzero"));

  // Not armed: nothing is kept.
  (void)u.item<float>();
  CHECK(d.disarm().empty());
}

TEST_CASE("the one exception: the CPU fused AdamW reads its tensor rate on the host") {
  train::SyncDetector d(true);
  auto p = at::ones({4}, at::kFloat);
  p.mutable_grad() = at::full({4}, 0.5f);
  std::vector<at::Tensor> params{p};
  auto opt = train::make_adamw(params, {}, train::OptimizerConfig{});
  opt->tensor_lr();
  opt->load_lr();
  d.arm();
  opt->step();
  CHECK(d.disarm().empty());
  // The step ran.
  CHECK(!at::equal(p, at::ones({4}, at::kFloat)));
}

TEST_CASE("a tensor learning rate steps exactly as the double one") {
  auto make = [] {
    auto p = at::linspace(-1, 1, 8, at::kFloat);
    p.mutable_grad() = at::linspace(0.3, -0.2, 8, at::kFloat);
    return p;
  };
  auto a = make(), b = make();
  train::OptimizerConfig cfg;
  cfg.lr = 3e-4;
  cfg.weight_decay = 0.01;
  auto oa = train::make_adamw({a}, {}, cfg);
  auto ob = train::make_adamw({b}, {}, cfg);
  ob->tensor_lr();
  for (int s = 0; s < 3; ++s) {
    // A rate the schedule changes every step, as LinearSchedule does.
    for (auto* o : {oa.get(), ob.get()})
      for (auto& g : o->param_groups()) g.options().set_lr(cfg.lr * (s + 1) / 3.0);
    ob->load_lr();
    oa->step();
    ob->step();
  }
  CHECK(at::equal(a, b));
}

TEST_CASE("fixed batch buffers hold what a gathered batch holds") {
  data::Features f;
  f.seq_len = 3;
  for (int i = 0; i < 5; ++i) {
    f.input_ids.insert(f.input_ids.end(), {101, 1000 + i, i % 2 ? 0 : 102});
    f.token_type_ids.insert(f.token_type_ids.end(), {0, 0, 1});
    f.attention_mask.insert(f.attention_mask.end(), {1, 1, i % 2 ? 0 : 1});
    f.start_positions.push_back(i % 3);
    f.end_positions.push_back(i % 3 + 1);
  }
  train::FeatureTensors ft(f);
  train::StaticBatches s(2, 2, 3, c10::Device(c10::kCPU));
  auto idx = at::tensor(std::vector<int64_t>{4, 1});
  const auto* before = s.slot(1).input_ids.data_ptr();
  const auto& b = s.load(ft, idx, 1);
  CHECK(b.input_ids.data_ptr() == before);  // the same memory, every step
  auto want = ft.gather(idx);
  CHECK(at::equal(b.input_ids, want.input_ids));
  CHECK(at::equal(b.token_type_ids, want.token_type_ids));
  CHECK(at::equal(b.attention_mask, want.attention_mask));
  CHECK(at::equal(b.start_positions, want.start_positions));
  CHECK(at::equal(b.end_positions, want.end_positions));
}

TEST_CASE("a wrapped host scalar is no synchronisation, a tensor read is") {
  train::SyncDetector d(true);
  auto t = at::arange(4, at::kFloat);
  auto out = at::empty_like(t);
  auto scalar = at::native::wrapped_scalar_tensor(0.5);
  d.arm();
  at::mul_out(out, t, scalar);
  CHECK(d.disarm().empty());
  d.arm();
  (void)t.sum().item<float>();
  CHECK(!d.disarm().empty());
}
