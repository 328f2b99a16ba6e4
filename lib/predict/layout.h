#pragma once
// The model's parameter layout as the strategies see it, taken from the code
// that uses it rather than described again: the sharded engine's units
// (model/sharding_units.h), the parameters in the model's order (what ddp's
// buckets are cut from), and each unit's share of the step's matmul work
// (train/flops.h's count, split by unit).
#include <cstdint>
#include <string>
#include <vector>

#include "specs/schedule.h"

namespace hpcbench::model {
struct BertConfig;
}

namespace hpcbench::predict {

using Layout = strategies::ModelLayout;

// Builds the model on the CPU (its parameters are what is counted) and asks
// its code for the sharding units.
Layout model_layout(const model::BertConfig& config, int64_t seq_length);

}  // namespace hpcbench::predict
