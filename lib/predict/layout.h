#pragma once
// The model's parameter layout as the strategies see it: the sharded engine's
// units (model/sharding_units.h), the parameters in the model's order (what
// ddp's buckets are cut from), and each unit's share of the step's matmul
// work (train/flops.h's count, split by unit).
#include <cstdint>
#include <string>
#include <vector>

#include "specs/schedule.h"

namespace hpcbench::model {
struct BertConfig;
}

namespace hpcbench::predict {

using Layout = strategies::ModelLayout;

// From the configuration alone (model/parameter_shapes.h: the parameters the
// model's constructor registers, in its order, under its sharding units), so
// that BERT-large's layout takes no allocation and no random draws.
Layout model_layout(const model::BertConfig& config, int64_t seq_length);

}  // namespace hpcbench::predict
