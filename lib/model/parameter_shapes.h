#pragma once
// BertForQuestionAnswering's trainable parameters as its constructor
// registers them (names, shapes, named_parameters() order, sharding unit),
// worked out from the configuration alone: what `plan` and `predict` need of
// the model without drawing BERT-large's 335 M random weights (10-15 s on a
// loaded CPU). tests/predict/test_layout.cpp holds it equal to a built model.
#include <cstdint>
#include <string>
#include <vector>

#include "core/engine_policy.h"

namespace hpcbench::model {

struct BertConfig;

struct ParameterShape {
  std::string name;            // "bert.encoder.layer.0.attention.self.query.weight"
  std::vector<int64_t> shape;  // [out, in] for a Linear's weight
  size_t unit = 0;             // its sharding unit's index (sharding_units.h)
  int64_t numel() const;
};

// `qkv`: query, key and value as three projections or one (the engine's).
// `config` as BertConfig::preset and from_json return it (checked there).
std::vector<ParameterShape> parameter_shapes(const BertConfig& config, EnginePolicy::Qkv qkv = EnginePolicy::Qkv::Split);

// The sharding units' names and prefixes (sharding_units.h) of a model of
// `layers` encoder layers, without a model: their `module`s null.
struct ShardingUnit;
std::vector<ShardingUnit> sharding_unit_names(int64_t layers);

}  // namespace hpcbench::model
