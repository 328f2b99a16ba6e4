#include "strategies/strategy.h"

#include "train/setup.h"

namespace hpcbench::strategies {

std::unique_ptr<torch::optim::AdamW> Strategy::make_optimizer(model::BertForQuestionAnswering& model,
                                                              const train::OptimizerConfig& cfg) {
  return train::make_adamw(*model, cfg);
}

std::vector<at::Tensor> Strategy::optimizer_params(model::BertForQuestionAnswering& model) const {
  return model->parameters();
}

at::Tensor Strategy::clip_grad_norm(model::BertForQuestionAnswering& model, double max_norm) {
  return train::clip_grad_norm(optimizer_params(model), max_norm);
}

size_t Strategy::model_state_bytes(model::BertForQuestionAnswering& model, const torch::optim::Optimizer& opt) const {
  return train::model_state_bytes(model->parameters(), opt);
}

}  // namespace hpcbench::strategies
