// Evaluation after training, kept out of every training figure and timed on
// its own: validation loss over all windows, then SQuAD answers and the
// official EM/F1. Every rank of a job runs forward on its share of the
// windows: rank 0 evaluating alone would leave the others waiting at the
// job's final barrier under the collective timeout for the whole dev set.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <unistd.h>

#include <chrono>

#include "core/progress.h"
#include "core/stop_signal.h"
#include "data/features.h"
#include "data/squad.h"
#include "distributed/process_group.h"
#include "eval/postprocess.h"
#include "eval/squad_metrics.h"
#include "run/evaluate.h"
#include "train/amp.h"
#include "train/batch.h"
#include "train/setup.h"

namespace hpcbench::run {

using namespace hpcbench::train;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

Evaluation evaluate(const TrainConfig& cfg, model::BertForQuestionAnswering& model, c10::Device device,
                    const RunContext& ctx) {
  // dp drives its devices from one process, without a communicator: it
  // evaluates alone, as the baseline does.
  const int world = ctx.comm ? ctx.world_size : 1;
  const int rank = ctx.comm ? ctx.rank : 0;
  const bool leader = rank == 0;
  Evaluation res;

  auto t_load = Clock::now();
  data::SquadDataset squad;  // the questions and answers: rank 0's post-processing alone reads them
  if (leader) squad = data::load_squad(cfg.eval_data);
  auto features = data::load_or_build_features(cfg.eval_data, cfg.vocab, feature_config(cfg), /*train=*/false,
                                               feature_cache_dir(cfg));
  FeatureTensors tensors(features);
  const int64_t n = tensors.size();
  const int64_t seq = tensors.seq_len();
  res.load_s = seconds_since(t_load);

  auto t_forward = Clock::now();
  const auto [begin, end] = eval_share(n, rank, world);
  // Shares differ by one window at most; each is padded to the largest so
  // that one all-gather of equal blocks carries them all (at least one row:
  // no empty collectives).
  const int64_t block = std::max<int64_t>((n + world - 1) / world, 1);
  auto logits = at::zeros({block, 2, seq}, at::TensorOptions().dtype(at::kFloat).device(device));
  auto loss_sum = at::zeros({}, at::TensorOptions().dtype(at::kDouble).device(device));
  // Rank 0 shows its own share's progress: the ranks' shares are equal, so
  // it speaks for the job.
  const bool tty = ::isatty(STDERR_FILENO);
  LoopProgress progress(world > 1 ? fmt::format("evaluation (rank 0 of {})", world) : "evaluation", "windows",
                        end - begin, leader, tty, std::chrono::milliseconds(tty ? 200 : 5000));
  model->eval();
  // A stop signal ends this rank's share early; the ranks learn it from each
  // other below, and no metric is made of part of the dev set.
  bool stopped = false;
  {
    torch::NoGradGuard no_grad;
    for (int64_t b = begin; b < end; b += cfg.eval_batch_size) {
      if ((stopped = stop_signal() != 0)) break;
      int64_t e = std::min<int64_t>(b + cfg.eval_batch_size, end);
      auto batch = tensors.gather(at::arange(b, e, at::kLong)).to(device);
      model::QAOutput o;
      {
        AutocastGuard autocast(device.type(), cfg.precision);
        o = model->forward(batch.input_ids, batch.token_type_ids, batch.attention_mask, batch.start_positions,
                           batch.end_positions);
      }
      // The batch loss is a mean over its rows: weighted by them, the sum
      // over ranks divided by all rows is the mean over the whole dev set.
      loss_sum.add_(o.loss.to(at::kDouble) * static_cast<double>(e - b));
      auto rows = logits.slice(0, b - begin, e - begin);
      rows.select(1, 0).copy_(o.start_logits);
      rows.select(1, 1).copy_(o.end_logits);
      progress.update(e - begin);
    }
  }
  progress.finish();
  model->train();
  auto totals = at::stack({loss_sum, at::scalar_tensor(static_cast<double>(end - begin), loss_sum.options()),
                           at::scalar_tensor(stopped ? 1.0 : 0.0, loss_sum.options())});
  at::Tensor gathered = logits;  // [world * block, 2, seq], rank order
  if (world > 1) {
    gathered = at::empty({world * block, 2, seq}, logits.options());
    ctx.comm->allgather(gathered, logits);
    ctx.comm->allreduce(totals);
  }
  totals = totals.cpu();
  if (totals[2].item<double>() > 0) {
    res.interrupted = true;
    res.val_loss = -1;
    if (leader) {
      res.details = {{"file", cfg.eval_data}, {"interrupted", true}};
      spdlog::warn("evaluation on {} stopped by {} before the end of the dev set: no validation loss, EM or F1 "
                   "(the training figures are complete)", cfg.eval_data, signal_name(stop_signal()));
    }
    return res;
  }
  const double rows_total = totals[1].item<double>();
  res.val_loss = rows_total > 0 ? totals[0].item<double>() / rows_total : 0;
  if (!leader) return res;
  // The padding rows are dropped, as Accelerate's gather_for_metrics drops
  // its duplicated samples: the blocks in rank order are the windows in order.
  std::vector<at::Tensor> shares;
  for (int r = 0; r < world; ++r) {
    auto [b, e] = eval_share(n, r, world);
    shares.push_back(gathered.slice(0, r * block, r * block + (e - b)));
  }
  auto host = at::cat(shares).cpu();
  std::vector<float> start_logits(static_cast<size_t>(n * seq)), end_logits(static_cast<size_t>(n * seq));
  if (n > 0) {
    auto s = host.select(1, 0).contiguous(), en = host.select(1, 1).contiguous();
    std::copy_n(s.data_ptr<float>(), n * seq, start_logits.begin());
    std::copy_n(en.data_ptr<float>(), n * seq, end_logits.begin());
  }
  res.forward_s = seconds_since(t_forward);

  auto t_post = Clock::now();
  bool v2 = squad.version.find('2') != std::string::npos;
  eval::PostprocessConfig pcfg;
  pcfg.version_2_with_negative = v2;
  auto predictions = eval::postprocess_qa_predictions(squad.examples, features, start_logits, end_logits, pcfg);
  res.postprocess_s = seconds_since(t_post);

  auto t_metric = Clock::now();
  auto metrics = eval::evaluate(squad.examples, predictions, v2);
  res.metric_s = seconds_since(t_metric);

  res.exact_match = metrics.exact;
  res.f1 = metrics.f1;
  res.details = {{"file", cfg.eval_data},
                               {"examples", squad.examples.size()},
                               {"features", n},
                               {"ranks", world},
                               {"val_loss", res.val_loss},
                               {"metrics", eval::to_json(metrics)}};
  res.predictions = predictions;
  spdlog::info("evaluation on {} ({} questions, {} windows over {} rank(s); load {:.1f} s, forward {:.1f} s, "
               "post-processing {:.1f} s, metric {:.1f} s): loss {:.4f}, EM {:.2f}, F1 {:.2f}",
               cfg.eval_data, squad.examples.size(), n, world, res.load_s, res.forward_s, res.postprocess_s,
               res.metric_s, res.val_loss, res.exact_match, res.f1);
  return res;
}

}  // namespace hpcbench::run
