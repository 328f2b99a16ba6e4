#pragma once
// The flat parameter of ZeRO and FSDP: the parameters of one unit (an encoder
// layer, the embeddings, the QA head) that share a weight-decay setting, laid
// end to end in one buffer padded to a multiple of the ranks it is cut over,
// so that rank r's partition is one contiguous slice and every collective
// moves one tensor. The module's parameters are views of that buffer
// (set_data), so a gather refreshes them in place.
#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

#include "model/bert.h"

namespace hpcbench::strategies::shard {

struct ShardState;

struct FlatParam {
  std::vector<at::Tensor> params;  // the module's parameters (views of `full`)
  std::vector<std::string> names;
  std::vector<int64_t> offsets;    // of each parameter in `full`
  int64_t numel = 0;               // without padding
  int64_t shard_numel = 0;         // padded numel / ranks
  bool decay = true;               // in the optimizer's weight-decay group
  size_t unit = 0;
  // [shard_numel * ranks] in the compute dtype: memory of its own where
  // parameters are replicated, else a view of its unit's gather slot, which
  // holds the unit's values only while the unit is gathered.
  at::Tensor full;
  at::Tensor shard;      // this rank's partition: the tensor the optimizer steps
  bool shard_is_view = true;  // a slice of `full` (params replicated) or its own memory (params sharded)
  at::Tensor grad_full;  // replicated gradients (all-reduced, persistent)
  // Views of the unit's gradient slot (buffers.h): the parameters' .grad
  // (compute dtype, the padding never written), what the reduction sends
  // (the same tensor when the reduce dtype is the compute dtype) and, for a
  // reduce-scatter, this rank's part.
  at::Tensor grads, send, part;
};

// Elements of a flat buffer of `numel` elements padded for `ranks` ranks.
inline int64_t padded_numel(int64_t numel, int ranks) { return (numel + ranks - 1) / ranks * ranks; }

// Bytes actually held by `t`'s storage (0 when undefined).
size_t storage_bytes(const at::Tensor& t);

// The model's sharding units in forward order, as its wrap policy gives
// them, each's parameters flattened into a decayed and a non-decayed flat
// parameter (decayed first, as make_adamw orders its groups).
void flatten(ShardState& s, model::BertForQuestionAnswering& model);

// Rank 0's initial weights cut into this rank's partitions over the shard
// group (the fp32 master partition), and, where parameters are replicated,
// the full buffers the model computes with (the compute dtype): a
// collective. Partitioned parameters' full buffers are buffers.h's.
void partition(ShardState& s);

// The module's parameters become views of the flat buffers the model
// computes with (compute dtype).
void use_compute_views(ShardState& s);

}  // namespace hpcbench::strategies::shard
