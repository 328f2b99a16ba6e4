#include "preflight/run_inputs.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <memory>
#include <vector>

#include "core/bounded_read.h"
#include "core/error.h"
#include "core/write_probe.h"
#include "data/features.h"
#include "data/squad.h"
#include "data/tokenizer.h"
#include "train/setup.h"

namespace hpcbench::preflight {

namespace fs = std::filesystem;

namespace {

// Proves that `folder` can be made (with its parents) and take a new file,
// and leaves the file system as it found it.
void check_writable_folder(const std::string& flag, const std::string& given, const fs::path& folder,
                           int64_t bytes) {
  std::vector<fs::path> made;
  for (fs::path p = folder; !p.empty(); p = p.parent_path()) {
    std::error_code ec;
    auto st = fs::status(p, ec);
    // A loop of links or a folder it may not look into: said as such, not
    // as the "File exists" that creating it would answer.
    if (ec && ec != std::errc::no_such_file_or_directory)
      fail("{} {}: cannot look at {}: {}", flag, given, p.string(), ec.message());
    if (fs::exists(st)) {
      if (!fs::is_directory(st)) fail("{} {}: {} is not a folder", flag, given, p.string());
      break;
    }
    made.insert(made.begin(), p);
    if (p == p.parent_path()) break;
  }
  auto undo = [&] {
    for (auto it = made.rbegin(); it != made.rend(); ++it) ::rmdir(it->c_str());
  };
  for (auto& p : made) {
    std::error_code ec;
    fs::create_directory(p, ec);
    if (ec) {
      undo();
      fail("{} {}: cannot create {}: {}", flag, given, p.string(), ec.message());
    }
  }
  int err = write_probe(folder, std::max<int64_t>(bytes, kWriteProbeBytes));
  undo();
  if (err == ENOSPC || err == EDQUOT)
    fail("{} {}: cannot set aside the {:.1f} MiB the run will write into {} ({}), so it would be lost after the "
         "whole run; free some space there or choose another folder",
         flag, given, static_cast<double>(bytes) / 1048576.0, folder.string(), std::strerror(err));
  if (err != 0)
    fail("{} {}: cannot write into {} ({}), so the file would be lost after the whole run", flag, given,
         folder.string(), std::strerror(err));
}

void check_output(const std::string& flag, const std::string& given, bool folder_unless_safetensors,
                  int64_t bytes) {
  if (given.empty()) return;
  fs::path path = given;
  const bool file = !folder_unless_safetensors || path.extension() == ".safetensors";
  std::error_code ec;
  auto st = fs::status(path, ec);
  if (file) {
    if (fs::is_directory(st)) fail("{} {}: a folder is there, where the file would go", flag, given);
    fs::path parent = path.parent_path().empty() ? fs::path(".") : path.parent_path();
    check_writable_folder(flag, given, parent, bytes);
  } else {
    if (fs::exists(st) && !fs::is_directory(st))
      fail("{} {}: a file is there, where the checkpoint folder would go (name a .safetensors file for one file)",
           flag, given);
    check_writable_folder(flag, given, path, bytes);
  }
}

// What the reader (core/bounded_read.h) would say of `path`, now, naming
// the flag: a FIFO, a device, a loop of links or a file past its kind's
// limit is refused before the first step.
void check_readable(const char* flag, const std::string& path, size_t limit) {
  try {
    (void)open_regular_file(path, limit);
  } catch (const Interrupted&) {
    throw;
  } catch (const UserError& e) {
    fail("{} {}: {}", flag, path, e.what());
  }
}

}  // namespace

void check_folder_writable(const std::string& flag, const std::string& folder, int64_t bytes) {
  if (folder.empty()) fail("{} '': needs a folder", flag);
  check_writable_folder(flag, folder, folder, bytes);
}

int64_t checkpoint_bytes(const train::TrainConfig& cfg) {
  // The header names each tensor, its shape and offsets: under 64 KiB for BERT.
  return train::model_shape(train::model_config(cfg)).parameters() * 4 + (int64_t{64} << 10);
}

void check_outputs(const RunOutputs& o) {
  // Both checkpoints on one disk need the space of both.
  const bool same_disk = !o.save_checkpoint.empty() && !o.save_initial_checkpoint.empty();
  check_output("--save-checkpoint", o.save_checkpoint, true, o.checkpoint_bytes * (same_disk ? 2 : 1));
  check_output("--save-initial-checkpoint", o.save_initial_checkpoint, true, o.checkpoint_bytes);
  check_output("--dump-data", o.dump_data, false, kWriteProbeBytes);
}

void check_input_files(const train::TrainConfig& cfg) {
  if (cfg.train_data != "synthetic") check_readable("--train-data", cfg.train_data, file_limit::kDataset);
  if (!cfg.vocab.empty()) check_readable("--vocab", cfg.vocab, file_limit::kVocabulary);
  if (cfg.checkpoint.empty()) return;
  std::error_code ec;
  if (fs::symlink_status(cfg.checkpoint, ec).type() == fs::file_type::not_found)
    fail("--checkpoint {}: no such file or folder", cfg.checkpoint);
  // A folder's weights are found, and checked, by the loader; a file is
  // checked now as the reader will take it.
  if (!fs::is_directory(cfg.checkpoint, ec)) check_readable("--checkpoint", cfg.checkpoint, file_limit::kCheckpoint);
}

void check_vocab_fits_model(const train::TrainConfig& cfg) {
  if (cfg.vocab.empty() || (cfg.train_data == "synthetic" && cfg.eval_data.empty())) return;
  const auto mcfg = train::model_config(cfg);
  const auto tokens = data::WordPieceTokenizer::from_file(cfg.vocab).vocab_size();
  if (tokens > mcfg.vocab_size)
    fail("--vocab {} has {} tokens, but the model's vocabulary holds {} (--model {}): ids from {} on would index past "
         "its embedding; use the model's own vocab.txt",
         cfg.vocab, tokens, mcfg.vocab_size, cfg.model, mcfg.vocab_size);
}

void check_eval_set(const train::TrainConfig& cfg) {
  if (cfg.eval_data.empty()) return;
  std::error_code ec;
  if (!fs::exists(cfg.eval_data, ec)) fail("--eval-data {}: no such file", cfg.eval_data);
  if (!fs::is_regular_file(cfg.eval_data, ec)) fail("--eval-data {}: not a file", cfg.eval_data);
  data::SquadDataset squad;
  try {
    squad = data::load_squad(cfg.eval_data);
  } catch (const Interrupted&) {
    throw;
  } catch (const UserError& e) {
    fail("--eval-data: {}", e.what());
  }
  if (squad.examples.empty())
    fail("--eval-data {}: no questions in it; an empty evaluation set would be scored EM 0 and F1 0", cfg.eval_data);
  if (!cfg.vocab.empty()) {
    std::unique_ptr<data::WordPieceTokenizer> tok;
    try {
      tok = std::make_unique<data::WordPieceTokenizer>(data::WordPieceTokenizer::from_file(cfg.vocab));
    } catch (const Interrupted&) {
      throw;
    } catch (const UserError& e) {
      fail("--vocab (for --eval-data): {}", e.what());
    }
    // The evaluation's windows, built now rather than after training: a
    // --doc-stride or --max-seq-length that some question leaves no room for
    // would otherwise fail once the allocation is spent (a dev set builds in
    // well under a second).
    try {
      (void)data::build_features(squad.examples, *tok, train::feature_config(cfg), /*train=*/false);
    } catch (const UserError& e) {
      fail("--eval-data {}: {}", cfg.eval_data, e.what());
    }
  }
}

}  // namespace hpcbench::preflight
