#pragma once
// Strategies against the baseline through the real binary: one `hpcbench run`
// into its own results folder, its final weights and per-step losses, and the
// comparison every parity test uses (the ddp test's tolerance).
#include "test_catch.h"
#include <nlohmann/json.hpp>

#include <ATen/ATen.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "model/checkpoint.h"
#include "test_env.h"

namespace hpcbench::test::parity {

namespace fs = std::filesystem;

inline std::string bin() { return test::hpcbench_bin().string(); }

// Tiny, deterministic, fp32, no dropout; lr and Adam's eps chosen so that five
// steps move every trained weight far beyond the tolerance.
inline const std::string kCommon =
    " --model bert-tiny --synthetic-samples 64 --max-seq-length 64 --timing-warmup-steps 0"
    " --dropout 0 --seed 7 --precision fp32 --device cpu --threads 1 --lr 5e-4 --adam-eps 1e-6"
    " --warmup-ratio 0.2 --cache-dir none";

struct Run {
  std::map<std::string, at::Tensor> params;
  std::vector<double> losses;
  nlohmann::json json;
};

// One `hpcbench run` into its own results folder; its final weights and its
// per-step losses (the mean over ranks). `common`: the settings every run of
// a comparison shares.
inline Run run(const fs::path& dir, const std::string& name, const std::string& args,
               const std::string& common = kCommon) {
  auto ckpt = dir / (name + ".safetensors");
  auto results = dir / ("results-" + name);
  auto r = test::run_command(bin() + " run" + common + " --max-steps 5 " + args + " --run-name " + name + " --results-dir " +
                             results.string() + " --save-checkpoint " + ckpt.string());
  INFO(args << "\n" << r.output);
  REQUIRE(r.exit_code == 0);
  CHECK(test::entries(results) == 1);  // rank 0 alone writes, once
  Run out;
  out.params = model::read_safetensors(ckpt);
  out.json = nlohmann::json::parse(test::slurp(results / name / "run.json"));
  for (auto& s : out.json["steps"]) out.losses.push_back(s["loss"].get<double>());
  return out;
}

struct Diff {
  double global_rel = 0;  // ||a - b|| / ||b|| over every parameter
  double worst_excess = 0;  // max over elements of |a - b| / (atol + rtol |b|); <= 1 passes
  std::string worst_tensor;
};

// Both criteria at 1e-5: the relative L2 difference of the whole parameter
// vector, and numpy.allclose(rtol=1e-5, atol=1e-5) per element. The atol
// covers the few biases whose gradient is zero in exact arithmetic (key
// biases, the last LayerNorm bias and qa_outputs.bias: softmax ignores a
// shift), which hold only rounding noise that Adam scales up to ~lr * 1e-2.
inline Diff compare(const std::map<std::string, at::Tensor>& a, const std::map<std::string, at::Tensor>& b) {
  Diff d;
  double num = 0, den = 0;
  REQUIRE(a.size() == b.size());
  for (auto& [k, ta] : a) {
    REQUIRE(b.count(k));
    auto tb = b.at(k);
    if (!at::isFloatingType(ta.scalar_type())) {
      CHECK(at::equal(ta, tb));
      continue;
    }
    auto x = ta.to(at::kDouble), y = tb.to(at::kDouble);
    num += (x - y).pow(2).sum().item<double>();
    den += y.pow(2).sum().item<double>();
    double excess = ((x - y).abs() / (1e-5 + 1e-5 * y.abs())).max().item<double>();
    if (excess > d.worst_excess) {
      d.worst_excess = excess;
      d.worst_tensor = k;
    }
  }
  d.global_rel = std::sqrt(num / den);
  return d;
}

inline void require_same(const Run& got, const Run& want, const std::string& what) {
  auto d = compare(got.params, want.params);
  INFO(what << ": global relative difference " << d.global_rel << ", worst tensor " << d.worst_tensor
            << " at " << d.worst_excess << " x tolerance");
  CHECK(d.global_rel < 1e-5);
  CHECK(d.worst_excess <= 1.0);
  REQUIRE(got.losses.size() == want.losses.size());
  for (size_t i = 0; i < got.losses.size(); ++i) {
    INFO("step " << i + 1 << " loss " << got.losses[i] << " vs " << want.losses[i]);
    CHECK(std::abs(got.losses[i] - want.losses[i]) <= 1e-5 * std::abs(want.losses[i]));
  }
}

}  // namespace hpcbench::test::parity
