#pragma once
// Every setting of a training run, with one table that maps each to its key
// in a TOML file ("train.lr") and its command-line flag ("--lr"). The table is
// the single source of truth: the TOML reader, the CLI and the run header
// all walk it, so a setting cannot exist in one and be missing in another.
#include <cstdint>
#include <filesystem>
#include <string>
#include <variant>
#include <vector>

#include "core/settings.h"

namespace hpcbench::train {

struct TrainConfig {
  // [model]
  std::string model = "bert-tiny";  // a preset name or a Hugging Face config.json
  std::string checkpoint;           // Hugging Face checkpoint (file or folder); empty: random init
  // [data]
  std::string train_data = "synthetic";  // "synthetic" or a SQuAD JSON file
  std::string eval_data;                 // SQuAD JSON for validation loss and EM/F1; empty: none
  std::string vocab;                     // vocab.txt for real SQuAD data
  int64_t synthetic_samples = 512;
  int64_t max_seq_length = 128;
  int64_t doc_stride = 32;
  int64_t max_query_length = 64;
  std::string cache_dir;  // feature cache; empty: the default under ~/.cache
  // [train]
  std::string strategy;  // a label (specs/spec.h); empty: the one-device reference
  int64_t batch_size = 8;  // per device
  int64_t grad_accum = 1;
  int64_t epochs = 1;
  int64_t max_steps = 0;  // optimizer steps; > 0 overrides epochs
  double lr = 5e-5;
  double weight_decay = 0.01;
  double adam_beta1 = 0.9;
  double adam_beta2 = 0.999;
  double adam_eps = 1e-8;
  double warmup_ratio = 0.0;  // of the optimizer steps, linear warm-up of the lr
  double max_grad_norm = 1.0;  // <= 0 disables clipping
  int64_t seed = 42;
  std::string precision = "fp32";  // fp32, tf32, fp16, bf16
  bool activation_checkpointing = false;  // each encoder layer's forward recomputed in backward
  double dropout = -1;             // < 0: the model configuration's
  // The fast engine (docs/gpu.md): the whole optimizer step captured once in
  // a CUDA graph and replayed; and the fused model (one QKV GEMM, fused
  // bias-GELU and dropout-residual-LayerNorm kernels, bf16-resident weights
  // with fp32 masters). Asked for by these flags; `engine` "auto" also turns
  // them on where a GPU run has shown them equal (train/engine.h), "eager"
  // only where asked. The eager path stays as the like-for-like comparison.
  bool cuda_graph = false;
  bool fused = false;
  std::string engine = "auto";
  // Deterministic kernels (train/determinism.h): the same bits on every run,
  // so that the graph is checked against eager exactly.
  bool deterministic = false;
  // The next step's batches gathered and sent to the device while the
  // current step runs (train/batch_ring.h); off: each step gathers and
  // sends its own after the previous step's synchronisation. On, each step
  // is also read one step late (run/loop.cpp); off, at its end.
  bool batch_prefetch = true;
  // Under the fused model, each residual join's gradient accumulated by the
  // branch's GEMM (EnginePolicy::Residual); off: added by autograd.
  bool residual_fold = true;
  // Under the fused kernels, the embeddings' and the master step's own
  // kernels (EnginePolicy::embedding_kernel, adamw_kernel); off: ATen's ops.
  bool fused_embedding = true;
  bool fused_adamw = true;
  // GEMM implementations chosen by timing in step 1 (train/gemm_tuning.h).
  bool tunableop = false;
  // [timing]
  int64_t timing_warmup_steps = 3;  // excluded from the figures
  int64_t log_every = 10;
  double peak_tflops = 0;  // > 0 overrides the device table for MFU
  int64_t sample_ms = 100;  // device/process sampling interval (lib/monitor); 0: off
  // [run]
  std::string device = "auto";
  std::string results_dir = "results/runs";
  std::string run_name;  // default: <strategy>-<world>x-<time>
  int64_t threads = 0;   // intra-op threads; 0: torch's default
  int64_t eval_batch_size = 32;
  std::string tensorboard = "on";  // TensorBoard event files in the results folder (rank 0); "off": none
  std::string profile;  // steps to profile, "N" or "A-B" (train/profile_steps.h); empty: none
};

using hpcbench::set_from_string;
using hpcbench::Setting;

// The table for one config object (targets point into `cfg`).
std::vector<Setting> settings_of(TrainConfig& cfg);

// Reads a TOML file into cfg; an unknown key, a wrong type or a syntax error
// is a UserError naming the file, the key and (for syntax) line and column.
// The strategies' sections ([zero], ...) are known keys too; their values
// are the strategy's to read (strategies::configure).
void load_toml(TrainConfig& cfg, const TomlFile& file);
void load_toml(TrainConfig& cfg, const std::filesystem::path& path);

// Checks combinations that cannot run (unknown precision, batch 0, seq longer
// than the position table is checked where the model config is known, ...).
void validate(const TrainConfig& cfg);

// "key = value" lines of every setting, for the run header and the JSON.
std::vector<std::pair<std::string, std::string>> describe(const TrainConfig& cfg);

}  // namespace hpcbench::train
