#include "plan/memory.h"

#include <algorithm>

namespace hpcbench::plan {

MemoryUse memory_per_rank(const Candidate& c, const MemoryInputs& in) {
  MemoryUse m;
  m.state = predict::model_state(c.choice, *in.layout, in.shape, in.options).total();
  const double layers = static_cast<double>(in.model.layers);
  // BERT fine-tunes with dropout; the scores are kept (eager attention).
  const double layer = strategies::layer_activation_bytes(in.model, c.micro(), in.seq, in.options.compute_bytes, true, true);
  const double input = static_cast<double>(c.micro() * in.seq * in.model.hidden) * in.options.compute_bytes;
  const double replica = c.recompute ? layers * input + layer : layers * layer;
  const int holders = std::max(1, in.shape.world() / std::max(1, c.replicas));
  m.activations = replica / holders;
  return m;
}

}  // namespace hpcbench::plan
