#pragma once
// The training data and every data rank's sample order, as a safetensors
// file: tests and the PyTorch comparisons (tests/reference/) train on
// exactly what a run trained on. `run --dump-data FILE` hands this to the
// trainer as its after-training hook (trainer.h); the trainer itself knows
// nothing of it.
#include <filesystem>

#include "run/trainer.h"

namespace hpcbench::run {

// "input_ids", "token_type_ids", "attention_mask", "start_positions",
// "end_positions": every training feature; "order_rank<r>": data rank r's
// samples over the steps run, [steps, grad_accum, rows], a short last
// micro-batch padded with -1.
void dump_data(const SampleOrder& order, const std::filesystem::path& file);

}  // namespace hpcbench::run
