// Evaluation after training, kept out of every training figure: validation
// loss over all windows, then SQuAD answers and the official EM/F1.
#include <spdlog/spdlog.h>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <chrono>

#include "data/features.h"
#include "data/squad.h"
#include "eval/postprocess.h"
#include "eval/squad_metrics.h"
#include "train/amp.h"
#include "train/batch.h"
#include "train/setup.h"
#include "train/trainer.h"

namespace hpcbench::train {

void evaluate_into(const TrainConfig& cfg, model::BertForQuestionAnswering& model, c10::Device device,
                   TrainOutput& out) {
  auto t0 = std::chrono::steady_clock::now();
  auto squad = data::load_squad(cfg.eval_data);
  auto features = data::load_or_build_features(cfg.eval_data, cfg.vocab, feature_config(cfg), /*train=*/false,
                                               feature_cache_dir(cfg));
  FeatureTensors tensors(features);
  const int64_t n = tensors.size();
  const int64_t seq = tensors.seq_len();

  model->eval();
  torch::NoGradGuard no_grad;
  double loss_sum = 0;
  std::vector<float> start_logits(static_cast<size_t>(n * seq)), end_logits(static_cast<size_t>(n * seq));
  for (int64_t b = 0; b < n; b += cfg.eval_batch_size) {
    int64_t e = std::min<int64_t>(b + cfg.eval_batch_size, n);
    auto batch = tensors.gather(at::arange(b, e, at::kLong)).to(device);
    model::QAOutput o;
    {
      AutocastGuard autocast(device.type(), cfg.precision);
      o = model->forward(batch.input_ids, batch.token_type_ids, batch.attention_mask, batch.start_positions,
                         batch.end_positions);
    }
    loss_sum += o.loss.item<double>() * static_cast<double>(e - b);
    auto s = o.start_logits.to(at::kFloat).cpu().contiguous();
    auto en = o.end_logits.to(at::kFloat).cpu().contiguous();
    std::copy_n(s.data_ptr<float>(), (e - b) * seq, start_logits.begin() + b * seq);
    std::copy_n(en.data_ptr<float>(), (e - b) * seq, end_logits.begin() + b * seq);
  }
  model->train();

  auto& res = out.result;
  res.val_loss = n > 0 ? loss_sum / static_cast<double>(n) : 0;
  bool v2 = squad.version.find('2') != std::string::npos;
  eval::PostprocessConfig pcfg;
  pcfg.version_2_with_negative = v2;
  auto predictions = eval::postprocess_qa_predictions(squad.examples, features, start_logits, end_logits, pcfg);
  auto metrics = eval::evaluate(squad.examples, predictions, v2);
  res.exact_match = metrics.exact;
  res.f1 = metrics.f1;
  out.details["evaluation"] = {{"file", cfg.eval_data},
                               {"examples", squad.examples.size()},
                               {"features", n},
                               {"val_loss", res.val_loss},
                               {"metrics", eval::to_json(metrics)}};
  out.details["predictions"] = predictions;
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  spdlog::info("evaluation on {} ({} questions, {} windows, {:.1f} s): loss {:.4f}, EM {:.2f}, F1 {:.2f}",
               cfg.eval_data, squad.examples.size(), n, secs, res.val_loss, res.exact_match, res.f1);
}

}  // namespace hpcbench::train
