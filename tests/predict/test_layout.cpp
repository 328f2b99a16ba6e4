// The layout `plan` and `predict` work out from the configuration alone
// (model/parameter_shapes.h) against the model the trainer builds: every
// parameter's name, shape and order, and each sharding unit's count, for
// bert-tiny and bert-base. A configuration one layer short is told apart.
#include "test_catch.h"

#include <torch/csrc/autograd/grad_mode.h>

#include "model/bert.h"
#include "model/parameter_shapes.h"
#include "model/sharding_units.h"
#include "predict/layout.h"

using namespace hpcbench;

namespace {

struct Built {
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  std::vector<int64_t> unit_numel;  // summed by the built model's own sharding units
};

Built build(const model::BertConfig& cfg, const EnginePolicy& engine) {
  at::NoGradGuard no_grad;
  model::BertForQuestionAnswering m(cfg, engine);
  Built b;
  auto units = model::sharding_units(*m);
  b.unit_numel.assign(units.size(), 0);
  for (auto& p : m->named_parameters()) {
    if (!p.value().requires_grad()) continue;
    b.names.push_back(p.key());
    b.shapes.push_back(p.value().sizes().vec());
    for (size_t k = 0; k < units.size(); ++k)
      if (p.key().starts_with(units[k].prefix)) b.unit_numel[k] += p.value().numel();
  }
  return b;
}

void check_equal(const std::vector<model::ParameterShape>& worked, const Built& built) {
  REQUIRE(worked.size() == built.names.size());
  for (size_t k = 0; k < worked.size(); ++k) {
    INFO(built.names[k]);
    CHECK(worked[k].name == built.names[k]);
    CHECK(worked[k].shape == built.shapes[k]);
  }
}

}  // namespace

TEST_CASE("the layout from the configuration equals the built model's: bert-tiny and bert-base") {
  for (const char* name : {"bert-tiny", "bert-base-uncased"}) {
    INFO(name);
    const auto cfg = model::BertConfig::preset(name);
    const auto built = build(cfg, {});
    check_equal(model::parameter_shapes(cfg), built);
    const auto l = predict::model_layout(cfg, 128);
    CHECK(l.unit_numel == built.unit_numel);
    CHECK(l.parameters == cfg.num_parameters());
    CHECK(l.param_numel.size() == built.names.size());
    // A model one encoder layer short is not the same layout.
    auto fewer = cfg;
    --fewer.num_hidden_layers;
    CHECK(model::parameter_shapes(fewer).size() != built.names.size());
    CHECK(predict::model_layout(fewer, 128).unit_numel != built.unit_numel);
  }
}

TEST_CASE("the layout from the configuration: the packed QKV projection of --fused's engine") {
  const auto cfg = model::BertConfig::preset("bert-tiny");
  EnginePolicy packed;
  packed.qkv = EnginePolicy::Qkv::Packed;
  check_equal(model::parameter_shapes(cfg, EnginePolicy::Qkv::Packed), build(cfg, packed));
}
