#pragma once
// Evaluation after training, kept out of every training figure and timed on
// its own: validation loss over all windows, then SQuAD answers and the
// official EM/F1.
#include <nlohmann/json.hpp>

#include "run/context.h"

namespace hpcbench::run {

struct Evaluation {
  double val_loss = -1, exact_match = -1, f1 = -1;
  // Its own clock: loading the dev set's windows; forward over every rank's
  // share until rank 0 holds all the logits; post-processing; EM/F1.
  double load_s = -1, forward_s = -1, postprocess_s = -1, metric_s = -1;
  // A stop signal ended it before the end of the dev set (on any rank):
  // no loss or metric is made of part of it.
  bool interrupted = false;
  nlohmann::json details;      // run.json's "evaluation" (rank 0)
  nlohmann::json predictions;  // predictions.json (rank 0)
};

struct Run;

// The run's model on run.cfg.eval_data, its windows cut as the training
// features were (run.features). Collective when ctx has a communicator:
// every rank must call it, with whole parameters; each runs forward on its
// eval_share (train/setup.h) and rank 0 alone post-processes and scores (the
// others get the loss only).
Evaluation evaluate(const Run& run, const RunContext& ctx);

}  // namespace hpcbench::run
