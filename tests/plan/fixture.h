#pragma once
// A small model and job for lib/plan's tests, built without LibTorch: the
// layout's units follow specs/model_shape.h's counts (embeddings, each
// encoder layer, the QA head), the compute all in the layers, split evenly.
#include <memory>
#include <string>

#include "plan/search.h"
#include "predict/collective.h"
#include "predict/step_model.h"
#include "specs/model_shape.h"
#include "specs/schedule.h"

namespace hpcbench::test {

// 4 layers, 2 heads, hidden 32: small enough to count by hand.
inline strategies::ModelShape tiny_shape() {
  strategies::ModelShape m;
  m.vocab = 64, m.hidden = 32, m.layers = 4, m.heads = 2, m.intermediate = 128, m.positions = 16, m.type_vocab = 2;
  return m;
}

inline strategies::ModelLayout tiny_layout(const strategies::ModelShape& m, int64_t seq) {
  strategies::ModelLayout l;
  l.model = "tiny";
  l.hidden = m.hidden;
  l.seq = seq;
  auto add = [&](const std::string& name, int64_t numel, double share) {
    l.unit_names.push_back(name);
    l.unit_numel.push_back(numel);
    l.unit_share.push_back(share);
    l.param_numel.push_back(numel);
    l.param_unit.push_back(l.unit_numel.size() - 1);
    l.parameters += numel;
  };
  add("embeddings", m.embedding_params(), 0);
  for (int64_t k = 0; k < m.layers; ++k) add("layer." + std::to_string(k), m.layer_params(), 1.0 / m.layers);
  add("head", m.head_params(), 0);
  return l;
}

// Collectives cost nothing: a step is its compute, its optimizer and what
// the schedule leaves idle.
class FreeNetwork final : public predict::CommModel {
 public:
  double seconds(const std::string&, double, const strategies::Group&) const override { return 0; }
  std::string describe() const override { return "free"; }
};

// A one-device baseline: `batch` rows a step, forward 1 s and backward 2 s
// for them, the optimizer `optimizer_s`, nothing else.
inline predict::Baseline tiny_baseline(int64_t batch, double optimizer_s, const std::string& precision = "fp32") {
  predict::Baseline b;
  b.source = "test";
  b.model = "tiny";
  b.precision = precision;
  b.device = "cuda";
  b.seq = 16;
  b.batch = batch;
  b.forward_s = 1, b.backward_s = 2, b.other_s = 0, b.optimizer_s = optimizer_s;
  b.step_s = 3 + optimizer_s;
  return b;
}

// A plan of the tiny model on one node of 2 devices, 8 sequences a step,
// from tiny_baseline(8, 1.5) over the free network: test_search.cpp works
// its ranking out by hand, test_verify.cpp writes its sweep.
struct PlanSetup {
  strategies::ModelShape m = tiny_shape();
  strategies::ModelLayout l = tiny_layout(m, 16);
  FreeNetwork net;
  plan::Request r;
  PlanSetup() {
    r.base = tiny_baseline(8, 1.5);
    r.layout = &l;
    r.model = m;
    r.comm = &net;
    r.shape = {1, 2};
    r.global_batch = 8;
    r.device_kind = "cuda";
  }
  PlanSetup(const PlanSetup&) = delete;  // the request points at its layout and network
  PlanSetup& operator=(const PlanSetup&) = delete;
};

}  // namespace hpcbench::test
