#include "preflight/run_inputs.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

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
void check_writable_folder(const std::string& flag, const std::string& given, const fs::path& folder) {
  std::vector<fs::path> made;
  for (fs::path p = folder; !p.empty(); p = p.parent_path()) {
    std::error_code ec;
    auto st = fs::status(p, ec);
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
  int err = write_probe(folder);
  undo();
  if (err != 0)
    fail("{} {}: cannot write into {} ({}), so the file would be lost after the whole run", flag, given,
         folder.string(), std::strerror(err));
}

void check_output(const std::string& flag, const std::string& given, bool folder_unless_safetensors) {
  if (given.empty()) return;
  fs::path path = given;
  const bool file = !folder_unless_safetensors || path.extension() == ".safetensors";
  std::error_code ec;
  auto st = fs::status(path, ec);
  if (file) {
    if (fs::is_directory(st)) fail("{} {}: a folder is there, where the file would go", flag, given);
    fs::path parent = path.parent_path().empty() ? fs::path(".") : path.parent_path();
    check_writable_folder(flag, given, parent);
  } else {
    if (fs::exists(st) && !fs::is_directory(st))
      fail("{} {}: a file is there, where the checkpoint folder would go (name a .safetensors file for one file)",
           flag, given);
    check_writable_folder(flag, given, path);
  }
}

}  // namespace

void check_folder_writable(const std::string& flag, const std::string& folder) {
  if (folder.empty()) fail("{} '': needs a folder", flag);
  check_writable_folder(flag, folder, folder);
}

void check_outputs(const RunOutputs& o) {
  check_output("--save-checkpoint", o.save_checkpoint, true);
  check_output("--save-initial-checkpoint", o.save_initial_checkpoint, true);
  check_output("--dump-data", o.dump_data, false);
}

void check_input_files(const train::TrainConfig& cfg) {
  std::error_code ec;
  if (cfg.train_data != "synthetic") {
    if (!fs::exists(cfg.train_data, ec)) fail("--train-data {}: no such file", cfg.train_data);
    if (!fs::is_regular_file(cfg.train_data, ec)) fail("--train-data {}: not a file", cfg.train_data);
  }
  if (!cfg.vocab.empty() && !fs::is_regular_file(cfg.vocab, ec)) fail("--vocab {}: no such file", cfg.vocab);
  if (!cfg.checkpoint.empty() && !fs::exists(cfg.checkpoint, ec))
    fail("--checkpoint {}: no such file or folder", cfg.checkpoint);
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
  } catch (const UserError& e) {
    fail("--eval-data: {}", e.what());
  }
  if (squad.examples.empty())
    fail("--eval-data {}: no questions in it; an empty evaluation set would be scored EM 0 and F1 0", cfg.eval_data);
  if (!cfg.vocab.empty()) {
    std::unique_ptr<data::WordPieceTokenizer> tok;
    try {
      tok = std::make_unique<data::WordPieceTokenizer>(data::WordPieceTokenizer::from_file(cfg.vocab));
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
