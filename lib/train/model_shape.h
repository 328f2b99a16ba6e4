#pragma once
// The sizes the strategies' torch-free formulas and checks take
// (specs/model_shape.h), from a BERT configuration.
#include "model/bert_config.h"
#include "specs/model_shape.h"

namespace hpcbench::train {

strategies::ModelShape model_shape(const model::BertConfig& config);

}  // namespace hpcbench::train
