#pragma once
// What a run would otherwise find only after training, when the allocation
// is spent and the figures lost with it: output files that cannot be
// written, an evaluation set that is missing, unreadable or empty. Checked
// before the first step (and by `run --dry-run`, which `sweep` runs for
// every job before it submits any).
#include <cstdint>
#include <string>

#include "train/config.h"

namespace hpcbench::preflight {

// Files a run writes besides its results folder (rank 0), as given.
struct RunOutputs {
  std::string save_checkpoint;          // --save-checkpoint: .safetensors file, else a folder
  std::string save_initial_checkpoint;  // --save-initial-checkpoint: likewise
  std::string dump_data;                // --dump-data: a .safetensors file
  // What one checkpoint takes on disk (checkpoint_bytes); 0: a probe's block.
  int64_t checkpoint_bytes = 0;
};

// A checkpoint of the model `cfg` names, as model::save_checkpoint writes it
// (every parameter in fp32, and its header): the space each one needs.
int64_t checkpoint_bytes(const train::TrainConfig& cfg);

// That `folder` (and the folders above it that are missing) can be made and
// take a file of `bytes` (allocated, as the run sets its space aside),
// leaving nothing behind. Throws UserError naming `flag`.
void check_folder_writable(const std::string& flag, const std::string& folder, int64_t bytes = 4096);

// Each output can be written where it is meant to go: the folders that
// would be made can be made (they are removed again) and take a file, and
// nothing in the way is of the wrong kind. Throws UserError naming the flag.
void check_outputs(const RunOutputs& outputs);

// The files the run reads exist and are files: --train-data (unless
// synthetic), --vocab, --checkpoint (a file or a folder). Throws UserError.
void check_input_files(const train::TrainConfig& cfg);

// A --vocab with more tokens than the model's embedding has rows: its ids
// from the model's vocab_size on would index past the embedding in the
// first forward (or in evaluation, after the whole run). Throws UserError.
void check_vocab_fits_model(const train::TrainConfig& cfg);

// --eval-data: a SQuAD file that reads, with at least one question, and a
// vocabulary that loads. An empty evaluation set is refused: it would be
// scored EM 0 and F1 0, a figure that looks measured. Throws UserError.
void check_eval_set(const train::TrainConfig& cfg);

}  // namespace hpcbench::preflight
