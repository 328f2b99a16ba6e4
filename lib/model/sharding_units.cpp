#include "model/sharding_units.h"

#include "model/bert.h"
#include "model/bert_modules.h"
#include "model/parameter_shapes.h"

namespace hpcbench::model {

std::vector<ShardingUnit> sharding_unit_names(int64_t layers) {
  std::vector<ShardingUnit> units;
  units.push_back({"embeddings", "bert.embeddings.", nullptr});
  for (int64_t i = 0; i < layers; ++i)
    units.push_back({"layer." + std::to_string(i), "bert.encoder.layer." + std::to_string(i) + ".", nullptr});
  units.push_back({"head", "qa_outputs.", nullptr});
  return units;
}

std::vector<ShardingUnit> sharding_units(BertForQuestionAnsweringImpl& model) {
  auto& bert = *model.bert();
  auto units = sharding_unit_names(static_cast<int64_t>(bert.layer->size()));
  units.front().module = bert.embeddings.get();
  for (size_t i = 0; i < bert.layer->size(); ++i) units[i + 1].module = bert.layer[i].get();
  units.back().module = model.qa_outputs().ptr().get();
  return units;
}

}  // namespace hpcbench::model
