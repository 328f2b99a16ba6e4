#include "predict/layout.h"

#include "model/bert.h"
#include "model/parameter_shapes.h"
#include "model/sharding_units.h"

namespace hpcbench::predict {

Layout model_layout(const model::BertConfig& config, int64_t seq) {
  const auto params = model::parameter_shapes(config);
  const auto units = model::sharding_unit_names(config.num_hidden_layers);
  Layout l;
  l.model = config.name;
  l.hidden = config.hidden_size;
  l.seq = seq;
  const double h = static_cast<double>(config.hidden_size), i = static_cast<double>(config.intermediate_size);
  const double s = static_cast<double>(seq);
  double total = 0;
  for (auto& u : units) {
    l.unit_names.push_back(u.name);
    l.unit_numel.push_back(0);
    // train/flops.h per unit: a layer's 4h² + 2hi matmul weights at 6 FLOPs
    // per weight and token plus attention's 12hs²; the head's 2h weights;
    // the embeddings are lookups (no matmul), counted as nothing.
    double f = 0;
    if (u.name.starts_with("layer")) f = 6 * (4 * h * h + 2 * h * i) * s + 12 * h * s * s;
    else if (u.name == "head") f = 6 * 2 * h * s;
    l.unit_share.push_back(f);
    total += f;
  }
  for (auto& x : l.unit_share) x /= total;

  for (auto& p : params) {
    l.param_numel.push_back(p.numel());
    l.param_unit.push_back(p.unit);
    l.unit_numel[p.unit] += p.numel();
    l.parameters += p.numel();
  }
  return l;
}

}  // namespace hpcbench::predict
