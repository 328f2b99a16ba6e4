#include "model/sharding_units.h"

#include "model/bert.h"
#include "model/bert_modules.h"

namespace hpcbench::model {

std::vector<ShardingUnit> sharding_units(BertForQuestionAnsweringImpl& model) {
  auto& bert = *model.bert();
  std::vector<ShardingUnit> units;
  units.push_back({"embeddings", "bert.embeddings.", bert.embeddings.get()});
  for (size_t i = 0; i < bert.layer->size(); ++i)
    units.push_back({"layer." + std::to_string(i), "bert.encoder.layer." + std::to_string(i) + ".", bert.layer[i].get()});
  units.push_back({"head", "qa_outputs.", model.qa_outputs().ptr().get()});
  return units;
}

}  // namespace hpcbench::model
