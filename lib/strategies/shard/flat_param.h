#pragma once
// The flat parameter of ZeRO and FSDP: the parameters of one unit (an encoder
// layer, the embeddings, the QA head) that share a weight-decay setting, as
// one master flat (strategies/master_weights.h: laid end to end, padded to a
// multiple of the ranks it is cut over, rank r's fp32 master partition one
// contiguous slice), with the gradient buffers the engine reduces through.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "model/bert.h"
#include "strategies/master_weights.h"

namespace hpcbench::strategies::shard {

struct ShardState;

// The master flat (strategies/master_weights.h) of one unit's parameters of
// one weight-decay group, with what the engine adds around it. Its `full` is
// memory of its own where parameters are replicated, else a view of its
// unit's gather slot, which holds the unit's values only while the unit is
// gathered; its `shard` is the tensor the optimizer steps.
struct FlatParam : MasterFlat {
  std::vector<std::string> names;
  bool decay = true;               // in the optimizer's weight-decay group
  size_t unit = 0;
  at::Tensor grad_full;  // replicated gradients (all-reduced, persistent)
  // Views of the unit's gradient slot (buffers.h): the parameters' .grad
  // (compute dtype, the padding never written), what the reduction sends
  // (the same tensor when the reduce dtype is the compute dtype) and, for a
  // reduce-scatter, this rank's part.
  at::Tensor grads, send, part;
};

// Bytes actually held by `t`'s storage (0 when undefined).
size_t storage_bytes(const at::Tensor& t);

// The model's sharding units in forward order, as its wrap policy gives
// them, each's parameters flattened into a decayed and a non-decayed flat
// parameter (decayed first, as make_adamw orders its groups).
void flatten(ShardState& s, model::BertForQuestionAnswering& model);

// Rank 0's initial weights cut into this rank's partitions over the shard
// group (the fp32 master partition), and, where parameters are replicated,
// the full buffers the model computes with (the compute dtype): a
// collective (make_masters). Partitioned parameters' full buffers are
// buffers.h's.
void partition(ShardState& s);

// The module's parameters become views of the flat buffers the model
// computes with (compute dtype).
void use_compute_views(ShardState& s);

}  // namespace hpcbench::strategies::shard
