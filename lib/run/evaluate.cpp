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
#include "run/build.h"
#include "train/amp.h"
#include "train/batch.h"
#include "train/setup.h"

namespace hpcbench::run {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The dev set as this rank needs it: the windows, and on rank 0 the
// questions and answers its post-processing alone reads.
struct DevSet {
  data::SquadDataset squad;
  data::Features features;
  std::unique_ptr<train::FeatureTensors> tensors;
};

// This rank's forward over its share of the windows, on the device: the
// logits in a block padded to the largest share, and (loss sum, rows,
// whether a stop signal cut it short).
struct ShareOutput {
  at::Tensor logits;  // [block, 2, seq]
  at::Tensor totals;  // [3] double
};

DevSet load_dev_set(const Run& run, bool leader) {
  const auto& cfg = run.cfg;
  DevSet d;
  if (leader) d.squad = data::load_squad(cfg.eval_data);
  d.features = data::load_or_build_features(cfg.eval_data, cfg.vocab, run.features, /*train=*/false,
                                            train::feature_cache_dir(cfg));
  d.tensors = std::make_unique<train::FeatureTensors>(d.features);
  return d;
}

ShareOutput forward_share(const Run& run, const train::FeatureTensors& tensors, int rank, int world) {
  const auto& cfg = run.cfg;
  const auto device = run.device;
  auto model = run.model;
  const int64_t n = tensors.size();
  const auto [begin, end] = train::eval_share(n, rank, world);
  // Shares differ by one window at most; each is padded to the largest so
  // that one all-gather of equal blocks carries them all (at least one row:
  // no empty collectives).
  const int64_t block = std::max<int64_t>((n + world - 1) / world, 1);
  auto logits = at::zeros({block, 2, tensors.seq_len()}, at::TensorOptions().dtype(at::kFloat).device(device));
  auto loss_sum = at::zeros({}, at::TensorOptions().dtype(at::kDouble).device(device));
  // Rank 0 shows its own share's progress: the ranks' shares are equal, so
  // it speaks for the job.
  const bool tty = ::isatty(STDERR_FILENO);
  LoopProgress progress(world > 1 ? fmt::format("evaluation (rank 0 of {})", world) : "evaluation", "windows",
                        end - begin, rank == 0, tty, std::chrono::milliseconds(tty ? 200 : 5000));
  model->eval();
  // A stop signal ends this rank's share early; the ranks learn it from each
  // other (the totals), and no metric is made of part of the dev set.
  bool stopped = false;
  {
    torch::NoGradGuard no_grad;
    for (int64_t b = begin; b < end; b += cfg.eval_batch_size) {
      if ((stopped = stop_signal() != 0)) break;
      int64_t e = std::min<int64_t>(b + cfg.eval_batch_size, end);
      auto batch = tensors.gather(at::arange(b, e, at::kLong)).to(device);
      model::QAOutput o;
      {
        train::AutocastGuard autocast(device.type(), cfg.precision);
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
  return {logits, totals};
}

// Rank 0: every rank's blocks in rank order, the padding rows dropped (as
// Accelerate's gather_for_metrics drops its duplicated samples), as host
// start and end logits, window after window.
std::pair<std::vector<float>, std::vector<float>> host_logits(const at::Tensor& gathered, int64_t n, int64_t seq,
                                                              int world) {
  const int64_t block = std::max<int64_t>((n + world - 1) / world, 1);
  std::vector<at::Tensor> shares;
  for (int r = 0; r < world; ++r) {
    auto [b, e] = train::eval_share(n, r, world);
    shares.push_back(gathered.slice(0, r * block, r * block + (e - b)));
  }
  auto host = at::cat(shares).cpu();
  std::vector<float> start_logits(static_cast<size_t>(n * seq)), end_logits(static_cast<size_t>(n * seq));
  if (n > 0) {
    auto s = host.select(1, 0).contiguous(), en = host.select(1, 1).contiguous();
    std::copy_n(s.data_ptr<float>(), n * seq, start_logits.begin());
    std::copy_n(en.data_ptr<float>(), n * seq, end_logits.begin());
  }
  return {std::move(start_logits), std::move(end_logits)};
}

// Rank 0: answers from the logits, the official EM/F1, and the record of both.
void score(Evaluation& res, const Run& run, const DevSet& dev, const std::vector<float>& start_logits,
           const std::vector<float>& end_logits, int world) {
  const auto& squad = dev.squad;
  const int64_t n = dev.tensors->size();
  auto t_post = Clock::now();
  bool v2 = squad.version.find('2') != std::string::npos;
  eval::PostprocessConfig pcfg;
  pcfg.version_2_with_negative = v2;
  auto predictions = eval::postprocess_qa_predictions(squad.examples, dev.features, start_logits, end_logits, pcfg);
  res.postprocess_s = seconds_since(t_post);

  auto t_metric = Clock::now();
  auto metrics = eval::evaluate(squad.examples, predictions, v2);
  res.metric_s = seconds_since(t_metric);

  res.exact_match = metrics.exact;
  res.f1 = metrics.f1;
  res.details = {{"file", run.cfg.eval_data},
                 {"examples", squad.examples.size()},
                 {"features", n},
                 {"ranks", world},
                 {"val_loss", res.val_loss},
                 {"metrics", eval::to_json(metrics)}};
  res.predictions = predictions;
  spdlog::info("evaluation on {} ({} questions, {} windows over {} rank(s); load {:.1f} s, forward {:.1f} s, "
               "post-processing {:.1f} s, metric {:.1f} s): loss {:.4f}, EM {:.2f}, F1 {:.2f}",
               run.cfg.eval_data, squad.examples.size(), n, world, res.load_s, res.forward_s, res.postprocess_s,
               res.metric_s, res.val_loss, res.exact_match, res.f1);
}

}  // namespace

Evaluation evaluate(const Run& run, const RunContext& ctx) {
  // dp drives its devices from one process, without a communicator: it
  // evaluates alone, as the baseline does.
  const int world = ctx.comm ? ctx.world_size : 1;
  const int rank = ctx.comm ? ctx.rank : 0;
  const bool leader = rank == 0;
  Evaluation res;

  auto t_load = Clock::now();
  const auto dev = load_dev_set(run, leader);
  const int64_t n = dev.tensors->size();
  const int64_t seq = dev.tensors->seq_len();
  res.load_s = seconds_since(t_load);

  auto t_forward = Clock::now();
  auto [logits, totals] = forward_share(run, *dev.tensors, rank, world);
  at::Tensor gathered = logits;  // [world * block, 2, seq], rank order
  if (world > 1) {
    gathered = at::empty({world * logits.size(0), 2, seq}, logits.options());
    ctx.comm->allgather(gathered, logits);
    ctx.comm->allreduce(totals);
  }
  totals = totals.cpu();
  if (totals[2].item<double>() > 0) {
    res.interrupted = true;
    res.val_loss = -1;
    if (leader) {
      res.details = {{"file", run.cfg.eval_data}, {"interrupted", true}};
      spdlog::warn("evaluation on {} stopped by {} before the end of the dev set: no validation loss, EM or F1 "
                   "(the training figures are complete)", run.cfg.eval_data, signal_name(stop_signal()));
    }
    return res;
  }
  const double rows_total = totals[1].item<double>();
  res.val_loss = rows_total > 0 ? totals[0].item<double>() / rows_total : 0;
  if (!leader) return res;
  auto [start_logits, end_logits] = host_logits(gathered, n, seq, world);
  res.forward_s = seconds_since(t_forward);
  score(res, run, dev, start_logits, end_logits, world);
  return res;
}

}  // namespace hpcbench::run
