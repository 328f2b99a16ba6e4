// `hpcbench data`: load SQuAD, build run_qa.py features, print what came out
// and how long it took. Also the benchmark driver (bench/bench_features.py).
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "core/atomic_file.h"
#include "core/error.h"
#include "data/features.h"
#include "data/squad.h"
#include "train/names.h"
#include "data/tokenizer.h"

namespace hpcbench::cli {

namespace {

struct DataOptions {
  std::string squad, vocab, out, cache_dir;
  data::FeatureConfig cfg;
  bool eval = false;
  bool no_cache = false;
  int repeat = 0;
  unsigned threads = 0;
  size_t synthetic = 1000;
  uint64_t seed = 0;
};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

size_t count_impossible_labels(const data::Features& f) {
  size_t n = 0;
  for (size_t i = 0; i < f.size(); ++i) n += f.start_positions[i] == 0 && f.end_positions[i] == 0;
  return n;
}

int run_data(DataOptions o) {
  data::validate(o.cfg);
  // The names `run` takes work here too: squad_v2, bert-base-uncased.
  train::resolve_dataset(o.squad, "--squad", o.eval ? "dev" : "train");
  train::resolve_vocab(o.vocab, "--vocab");
  if (o.repeat < 0) fail("--repeat {} must be 0 or more", o.repeat);
  nlohmann::json report;
  report["max_seq_length"] = o.cfg.max_seq_length;
  report["doc_stride"] = o.cfg.doc_stride;
  report["max_query_length"] = o.cfg.max_query_length;
  report["split"] = o.eval ? "eval" : "train";
  data::Features features;

  if (o.squad.empty()) {
    int64_t vocab_size = 30522;
    if (!o.vocab.empty()) vocab_size = data::WordPieceTokenizer::from_file(o.vocab).vocab_size();
    auto t0 = std::chrono::steady_clock::now();
    features = data::synthetic_features(o.synthetic, o.cfg, vocab_size, o.seed);
    report["dataset"] = "synthetic";
    report["examples"] = o.synthetic;
    report["build_seconds"] = seconds_since(t0);
  } else {
    if (o.vocab.empty()) fail("--squad {} needs --vocab (a BERT vocab.txt)", o.squad);
    report["dataset"] = o.squad;
    if (o.repeat > 0) {
      // Benchmark: parse once, then time tokenization + feature building.
      auto tok = data::WordPieceTokenizer::from_file(o.vocab);
      auto t0 = std::chrono::steady_clock::now();
      auto ds = data::load_squad(o.squad);
      report["load_seconds"] = seconds_since(t0);
      std::vector<double> times;
      for (int r = 0; r < o.repeat; ++r) {
        auto t1 = std::chrono::steady_clock::now();
        features = data::build_features(ds.examples, tok, o.cfg, !o.eval, o.threads);
        times.push_back(seconds_since(t1));
      }
      size_t impossible = 0;
      for (auto& e : ds.examples) impossible += e.is_impossible;
      report["examples"] = ds.examples.size();
      report["impossible"] = impossible;
      report["mismatched_answers"] = ds.mismatched_answers;
      report["build_seconds"] = *std::min_element(times.begin(), times.end());
      report["build_seconds_all"] = times;
      report["threads"] = o.threads;
    } else {
      std::filesystem::path cache;
      if (!o.no_cache) cache = o.cache_dir.empty() ? data::default_feature_cache_dir() : std::filesystem::path(o.cache_dir);
      auto t0 = std::chrono::steady_clock::now();
      auto sf = data::load_or_build_squad_features(o.squad, o.vocab, o.cfg, !o.eval, cache);
      report["build_seconds"] = seconds_since(t0);
      report["from_cache"] = sf.from_cache;
      report["examples"] = sf.examples;
      report["impossible"] = sf.impossible;
      report["mismatched_answers"] = sf.mismatched_answers;
      features = std::move(sf.features);
    }
  }
  report["features"] = features.size();
  report["features_without_answer"] = count_impossible_labels(features);

  fmt::print("dataset              {}\n", report["dataset"].get<std::string>());
  fmt::print("examples             {}\n", report["examples"].get<size_t>());
  if (report.contains("impossible")) fmt::print("impossible           {}\n", report["impossible"].get<size_t>());
  if (report.contains("mismatched_answers"))
    fmt::print("mismatched answers   {}\n", report["mismatched_answers"].get<size_t>());
  fmt::print("features             {} ({} labelled CLS: no answer in the window)\n", features.size(),
             report["features_without_answer"].get<size_t>());
  if (report.contains("from_cache")) fmt::print("from cache           {}\n", report["from_cache"].get<bool>() ? "yes" : "no");
  fmt::print("time                 {:.3f} s\n", report["build_seconds"].get<double>());
  if (!o.out.empty()) write_file_atomic(o.out, report.dump(1) + "\n");
  return 0;
}

}  // namespace

Action add_data(CLI::App& app) {
  auto o = std::make_shared<DataOptions>();
  auto* cmd = app.add_subcommand("data", "Load SQuAD and build BERT training/evaluation features (run_qa.py's); "
                                         "without --squad, synthetic features");
  cmd->add_option("--squad", o->squad, "SQuAD v1.1/v2.0 JSON file, or squad / squad_v2 (fetched)");
  cmd->add_option("--vocab", o->vocab, "BERT WordPiece vocab.txt, or a fetched model (bert-base-uncased)");
  cmd->add_option("--max-seq-length", o->cfg.max_seq_length, "Tokens per feature")->capture_default_str();
  cmd->add_option("--doc-stride", o->cfg.doc_stride, "Overlap of consecutive context windows")->capture_default_str();
  cmd->add_option("--max-query-length", o->cfg.max_query_length, "Question tokens kept")->capture_default_str();
  cmd->add_flag("--eval", o->eval, "Evaluation features (with offsets) instead of training ones");
  cmd->add_option("--cache-dir", o->cache_dir, "Feature cache folder (default $XDG_CACHE_HOME/hpcbench/features)");
  cmd->add_flag("--no-cache", o->no_cache, "Neither read nor write the feature cache");
  cmd->add_option("--repeat", o->repeat, "Benchmark: build N times without the cache, report the fastest");
  cmd->add_option("--threads", o->threads, "Threads building features (0: all)")->capture_default_str();
  cmd->add_option("--synthetic", o->synthetic, "Synthetic features when no --squad")->capture_default_str();
  cmd->add_option("--seed", o->seed, "Seed of the synthetic features")->capture_default_str();
  cmd->add_option("--out", o->out, "Write the counts and times as JSON here");
  return [o] { return run_data(*o); };
}

}  // namespace hpcbench::cli
