// The step's host-side shortcuts give what the long way gives: a micro-batch
// staged in one buffer, and loss scaling whose device copy of 1 / scale is
// rewritten only when the scale changes.
#include "test_catch.h"

#include <ATen/ATen.h>

#include <cmath>
#include <limits>

#include "data/features.h"
#include "train/amp.h"
#include "train/batch.h"

using namespace hpcbench;

namespace {

// 4 features of 5 tokens; features 1 and 3 have padding.
data::Features features() {
  data::Features f;
  f.seq_len = 5;
  for (int32_t r = 0; r < 4; ++r) {
    for (int32_t t = 0; t < 5; ++t) {
      f.input_ids.push_back(100 * r + t);
      f.token_type_ids.push_back(t >= 2 ? 1 : 0);
      f.attention_mask.push_back(r % 2 == 1 && t >= 3 ? 0 : 1);
    }
    f.start_positions.push_back(r);
    f.end_positions.push_back(r + 1);
    f.example_index.push_back(r);
  }
  return f;
}

void check_same(const at::Tensor& a, const at::Tensor& b) {
  REQUIRE(a.defined());
  CHECK(a.sizes() == b.sizes());
  CHECK(a.scalar_type() == b.scalar_type());
  CHECK(at::equal(a, b));
}

}  // namespace

TEST_CASE("gather_staged: the fields of gather(), cut from one buffer; an all-ones mask left out") {
  auto f = features();
  train::FeatureTensors data(f);
  for (bool padded : {false, true}) {
    INFO("padded " << padded);
    auto idx = padded ? at::tensor({3, 0}, at::kLong) : at::tensor({2, 0}, at::kLong);
    auto want = data.gather(idx);
    auto got = data.gather_staged(idx, c10::kCPU, /*pin=*/false);
    check_same(got.input_ids, want.input_ids);
    check_same(got.token_type_ids, want.token_type_ids);
    check_same(got.start_positions, want.start_positions);
    check_same(got.end_positions, want.end_positions);
    CHECK(got.attention_mask.defined() == padded);
    if (padded) check_same(got.attention_mask, want.attention_mask);
    // One copy to the device: every field is a view of one buffer.
    CHECK(got.input_ids.storage().is_alias_of(got.end_positions.storage()));
    CHECK(got.token_type_ids.storage().is_alias_of(got.start_positions.storage()));
  }
  // One padded row among unpadded ones is enough to send the mask.
  CHECK(data.gather_staged(at::tensor({0, 2, 1}, at::kLong), c10::kCPU, false).attention_mask.defined());
}

TEST_CASE("GradScaler: overflow halves the scale and growth doubles it, and unscale divides by the new scale") {
  train::GradScaler scaler(c10::kCPU, /*enabled=*/true);
  CHECK(scaler.scale() == 65536.0);
  auto p = at::zeros({3}, at::kFloat);
  auto set_grad = [&](float v) { p.mutable_grad() = at::full({3}, v, at::kFloat); };

  set_grad(std::numeric_limits<float>::infinity());
  CHECK_FALSE(scaler.unscale({p}));
  scaler.update(true);
  CHECK(scaler.scale() == 32768.0);
  set_grad(3.0f * 32768.0f);
  CHECK(scaler.unscale({p}));
  CHECK(p.grad()[0].item<float>() == 3.0f);

  // 2000 clean steps grow it back.
  for (int i = 0; i < 2000; ++i) scaler.update(false);
  CHECK(scaler.scale() == 65536.0);
  set_grad(5.0f * 65536.0f);
  CHECK(scaler.unscale({p}));
  CHECK(p.grad()[0].item<float>() == 5.0f);

  set_grad(std::nanf(""));
  CHECK_FALSE(scaler.unscale({p}));
}
