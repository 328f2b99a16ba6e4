#pragma once
// The model's wrap policy: the units that FSDP and ZeRO-3 shard and gather as
// a whole, in forward order (the embeddings, each encoder layer, the QA head,
// as FSDP's transformer auto-wrap policy with BertLayer does), and hooks the
// model's own forward calls around each of them. A sharded strategy gathers a
// unit before it runs and frees it after; it never re-implements the forward.
#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <string>
#include <vector>

namespace hpcbench::model {

class BertForQuestionAnsweringImpl;

struct ShardingUnit {
  std::string name;    // "embeddings", "layer.3", "head"
  std::string prefix;  // its parameters' names in the model start with this ("bert.encoder.layer.3.")
  torch::nn::Module* module = nullptr;
};
std::vector<ShardingUnit> sharding_units(BertForQuestionAnsweringImpl& model);

// Called by BertForQuestionAnsweringImpl::forward around each unit, with the
// unit's index in sharding_units().
class UnitHooks {
 public:
  virtual ~UnitHooks() = default;
  virtual void before(size_t unit) = 0;
  // `output` is the unit's output (a backward hook may be registered on it).
  virtual void after(size_t unit, const at::Tensor& output) = 0;
};

}  // namespace hpcbench::model
