#pragma once
#include <algorithm>

#include "core/error.h"
#include "specs/mesh.h"
#include "specs/spec.h"

namespace hpcbench::strategies::tensor {

struct TensorOptions final : OptionsOf<TensorOptions> {
  int64_t tp_size = 0;  // 0: the ranks of a node (or the world / --dp-size)
  int64_t dp_size = 0;  // 0: the world / --tp-size
  std::vector<Setting> settings() override {
    return {{"tp-size", "--tp-size",
             "tensor-parallel ranks per group (attention heads and the MLP split as Megatron-LM does; 0: the ranks "
             "of a node)",
             &tp_size},
            {"dp-size", "--dp-size", "data-parallel replicas (0: the world size / the model-parallel sizes)",
             &dp_size}};
  }
};

// The job's ranks as dp x tp (specs/mesh.h: tensor groups are
// consecutive ranks). `per_node`: ranks on each node (0: all on one).
// Throws UserError naming --tp-size / --dp-size.
inline Mesh tensor_mesh(const TensorOptions& o, int world, int per_node) {
  int tp = static_cast<int>(o.tp_size);
  if (tp == 0) tp = o.dp_size > 0 ? std::max(1, world / static_cast<int>(o.dp_size)) : (per_node > 0 ? per_node : world);
  if (tp > 0 && o.dp_size == 0 && world % tp != 0)
    fail("--tp-size {}: does not divide the job's {} ranks (the data-parallel replicas are the ranks / --tp-size)",
         tp, world);
  return Mesh(world, {static_cast<int>(o.dp_size), 1, tp}, per_node);
}

}  // namespace hpcbench::strategies::tensor
