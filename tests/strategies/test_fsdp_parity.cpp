// fsdp (full) and zero 3 must be what PyTorch's own FSDP2 (fully_shard)
// computes from the same initial weights, data and sample order
// (tests/reference/fsdp_reference.py): in fp32 to the tolerance the ddp test
// holds DistributedDataParallel to, and with bf16 compute and fp32 gradient
// reduction within a stated multiple of bf16's own deviation from fp32.
#include "test_catch.h"
#include <nlohmann/json.hpp>

#include <ATen/ATen.h>

#include <cmath>
#include <map>

#include "model/checkpoint.h"
#include "test_env.h"

using namespace hpcbench;
namespace fs = std::filesystem;

namespace {

using Params = std::map<std::string, at::Tensor>;

struct Run {
  Params params;
  std::vector<double> losses;
};

fs::path ref_dir() { return test::reference_dir() / "fsdp_reference"; }

nlohmann::json meta() { return nlohmann::json::parse(test::slurp(ref_dir() / "fsdp2.json")); }

// FSDP2's result in `precision` (fp32, bf16). Its state_dict has the Hugging
// Face names; transformers 5 saves no position_ids, which is not compared.
Run reference(const std::string& precision) {
  Run r;
  r.params = model::read_safetensors(ref_dir() / ("fsdp2_" + precision + ".safetensors"));
  auto m = meta();  // held: a range-for over a temporary's member would read freed memory
  for (auto& l : m["losses_" + precision]) r.losses.push_back(l.get<double>());
  REQUIRE(r.losses.size() == m["steps"].get<size_t>());
  return r;
}

// `hpcbench run` with the reference's flags from its initial weights.
Run ours(const fs::path& dir, const std::string& name, const std::string& args) {
  auto m = meta();
  auto ckpt = dir / (name + ".safetensors");
  auto results = dir / ("results-" + name);
  auto r = test::run_command(test::hpcbench_bin().string() + " run --nproc-per-node " +
                             std::to_string(m["world"].get<int>()) + " " + m["flags"].get<std::string>() + " " + args +
                             " --checkpoint " + (ref_dir() / "initial" / "model.safetensors").string() +
                             " --run-name " + name + " --results-dir " + results.string() + " --save-checkpoint " +
                             ckpt.string());
  INFO(args << "\n" << r.output);
  REQUIRE(r.exit_code == 0);
  Run out;
  out.params = model::read_safetensors(ckpt);
  auto json = nlohmann::json::parse(test::slurp(results / name / "run.json"));
  for (auto& s : json["steps"]) out.losses.push_back(s["loss"].get<double>());
  REQUIRE(out.losses.size() == static_cast<size_t>(m["steps"].get<int>()));
  return out;
}

// The floating-point tensors `want` holds, in double (every one must be in
// `got`; ours has position_ids besides).
std::vector<std::pair<std::string, std::pair<at::Tensor, at::Tensor>>> pairs(const Params& got, const Params& want) {
  std::vector<std::pair<std::string, std::pair<at::Tensor, at::Tensor>>> out;
  for (auto& [k, w] : want) {
    INFO(k);
    REQUIRE(got.count(k));
    if (!at::isFloatingType(w.scalar_type())) {
      CHECK(at::equal(got.at(k), w));
      continue;
    }
    out.push_back({k, {got.at(k).to(at::kDouble), w.to(at::kDouble)}});
  }
  REQUIRE(out.size() >= 39);  // bert-tiny's trained tensors
  return out;
}

// ||a - b|| / ||b|| over the whole parameter vector.
double global_rel(const Params& a, const Params& b) {
  double num = 0, den = 0;
  for (auto& [k, xy] : pairs(a, b)) {
    num += (xy.first - xy.second).pow(2).sum().item<double>();
    den += xy.second.pow(2).sum().item<double>();
  }
  return std::sqrt(num / den);
}

// The ddp test's criteria (test_strategy_parity.cpp), unchanged: relative L2
// difference of the whole vector below 1e-5, numpy.allclose(rtol=1e-5,
// atol=1e-5) per element (the atol covers the biases whose gradient is zero
// in exact arithmetic and hold only rounding noise), losses to 1e-5 relative.
void require_fp32_same(const Run& got, const Run& want, const std::string& what) {
  double worst = 0;
  std::string worst_tensor;
  for (auto& [k, xy] : pairs(got.params, want.params)) {
    auto& [x, y] = xy;
    double excess = ((x - y).abs() / (1e-5 + 1e-5 * y.abs())).max().item<double>();
    if (excess > worst) worst = excess, worst_tensor = k;
  }
  double rel = global_rel(got.params, want.params);
  INFO(what << ": global relative difference " << rel << ", worst tensor " << worst_tensor << " at " << worst
            << " x tolerance");
  CHECK(rel < 1e-5);
  CHECK(worst <= 1.0);
  for (size_t i = 0; i < want.losses.size(); ++i) {
    INFO("step " << i + 1 << " loss " << got.losses[i] << " vs " << want.losses[i]);
    CHECK(std::abs(got.losses[i] - want.losses[i]) <= 1e-5 * std::abs(want.losses[i]));
  }
}

// The bf16 bounds, as multiples of how far FSDP2's bf16 result is from its
// fp32 result (bf16 rounding, 8 significant bits, carried through the steps).
//
// Both sides compute with the same bf16 copies of the same fp32 masters and
// call the same ATen CPU kernels on them (linear's addmm, SDPA, LayerNorm,
// GELU, cross-entropy on fp32 logits); 2 ranks' fp32 reduce-scatter of
// gradients divided by 2 is exact; AdamW is the same fused kernel. What
// differs is fp32 arithmetic only (the clipping norm's order of sums, flat
// buffers against per-parameter DTensors), and it changes a master's bf16
// copy only where the master sits on a rounding boundary. So the two stay
// far closer than bf16 is to fp32: measured 1.4e-5 of bf16's deviation
// (3.7e-9 relative). Different kernels would not: FSDP2 with Hugging Face's
// eager attention instead of SDPA (bf16 matmuls and softmax rounded apart)
// lands at 38% of it. A multiple of order 1, as for two implementations
// with their own kernels, would let through real errors of this
// configuration: gradients reduced in bf16 instead of fp32 (`--reduce-dtype
// bf16`) land at 12%. The bound, 1%, is 700x what was measured and 12x
// below that error.
constexpr double kBf16Multiple = 0.01;
// Losses: per step, against the largest step's bf16-vs-fp32 loss deviation
// (one step's deviation alone can be near zero by chance).
constexpr double kBf16LossMultiple = 0.01;
// An fp32 run would be as close to FSDP2's fp32 result as the fp32 test
// requires (1e-5 relative, a few % of bf16's deviation here): a bf16 run
// must be about bf16's deviation away from it.
constexpr double kBf16Floor = 0.5;

}  // namespace

TEST_CASE("fsdp full and zero 3 on 2 ranks equal PyTorch FSDP2 in fp32") {
  auto torch_fp32 = reference("fp32");
  test::TempDir dir;
  // The test can fail: training moved the weights far beyond the tolerance.
  CHECK(global_rel(model::read_safetensors(ref_dir() / "initial" / "model.safetensors"), torch_fp32.params) > 1e-4);
  require_fp32_same(ours(dir.path, "fsdp", "--strategy fsdp --sharding full --precision fp32"), torch_fp32,
                    "hpcbench fsdp full vs FSDP2");
  require_fp32_same(ours(dir.path, "zero3", "--strategy zero --zero-stage 3 --precision fp32"), torch_fp32,
                    "hpcbench zero 3 vs FSDP2");
}

TEST_CASE("fsdp full and zero 3 with bf16 compute and fp32 reduction agree with FSDP2's bf16 to bf16's own scale") {
  auto torch_fp32 = reference("fp32"), torch_bf16 = reference("bf16");
  // How far bf16 compute moves FSDP2's own result from fp32: the scale of
  // bf16 rounding (8 significant bits) carried through five steps.
  const double bf16_dev = global_rel(torch_bf16.params, torch_fp32.params);
  INFO("FSDP2 bf16 vs fp32: " << bf16_dev);
  // Well above fp32's agreement, or the bound below would say nothing.
  REQUIRE(bf16_dev > 1e-4);
  double loss_dev = 0;
  for (size_t i = 0; i < torch_bf16.losses.size(); ++i)
    loss_dev = std::max(loss_dev, std::abs(torch_bf16.losses[i] - torch_fp32.losses[i]));
  INFO("largest step loss deviation, FSDP2 bf16 vs fp32: " << loss_dev);
  test::TempDir dir;
  for (std::string s : {"fsdp --sharding full", "zero --zero-stage 3"}) {
    auto name = s.substr(0, s.find(' '));
    auto got = ours(dir.path, name + "-bf16", "--strategy " + s + " --precision bf16 --reduce-dtype fp32");
    double d = global_rel(got.params, torch_bf16.params);
    double from_fp32 = global_rel(got.params, torch_fp32.params);
    INFO(s << ": hpcbench bf16 vs FSDP2 bf16 " << d << " (" << d / bf16_dev << " x bf16's deviation), vs FSDP2 fp32 "
           << from_fp32);
    CHECK(d <= kBf16Multiple * bf16_dev);
    // And hpcbench did compute in bf16: an fp32 run would sit at fp32's
    // agreement with FSDP2's fp32 result, not at bf16's distance.
    CHECK(from_fp32 >= kBf16Floor * bf16_dev);
    for (size_t i = 0; i < torch_bf16.losses.size(); ++i) {
      INFO("step " << i + 1 << " loss " << got.losses[i] << " vs FSDP2 bf16 " << torch_bf16.losses[i] << ", fp32 "
                   << torch_fp32.losses[i]);
      CHECK(std::abs(got.losses[i] - torch_bf16.losses[i]) <= kBf16LossMultiple * loss_dev);
    }
  }
}
