#include "train/model_shape.h"

namespace hpcbench::train {

strategies::ModelShape model_shape(const model::BertConfig& c) {
  return {c.vocab_size,        c.hidden_size,
          c.num_hidden_layers, c.num_attention_heads,
          c.intermediate_size, c.max_position_embeddings,
          c.type_vocab_size};
}

}  // namespace hpcbench::train
