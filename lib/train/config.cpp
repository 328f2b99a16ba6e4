#include "train/config.h"

#include <set>

#include "core/error.h"
#include "specs/registry.h"
#include "train/gemm_tuning.h"
#include "train/names.h"
#include "train/profile_steps.h"

namespace hpcbench::train {

namespace {

// Tuning times every candidate of every GEMM shape in step 1, which must
// therefore be a step the figures leave out; PyTorch's own variables would
// override when it tunes and where it writes (gemm_tuning.h).
void validate_tunableop(const TrainConfig& c) {
  if (c.timing_warmup_steps < kTunedSteps)
    fail("--tunableop with --timing-warmup-steps {}: the GEMMs are tuned in step 1, which must not be timed (use "
         "--timing-warmup-steps 1 or more)", c.timing_warmup_steps);
  if (auto v = tunableop_override_in_environment(); !v.empty())
    fail("--tunableop with {} set in the environment: PyTorch reads it over the run's own tuning settings; unset it",
         v);
}

}  // namespace

// long: the settings' one table, a setting an entry; cut in pieces it would
// no longer be the single list the TOML reader, the CLI and the header walk.
std::vector<Setting> settings_of(TrainConfig& c) {
  return {
      {"model.name", "--model", "Preset (bert-tiny, bert-base-uncased, ...) or a Hugging Face config.json", &c.model},
      {"model.checkpoint", "--checkpoint", "Hugging Face checkpoint (model.safetensors, pytorch_model.bin or their folder)", &c.checkpoint},
      {"data.train", "--train-data", "SQuAD JSON to train on, or 'synthetic'", &c.train_data},
      {"data.eval", "--eval-data", "SQuAD JSON for validation loss and EM/F1", &c.eval_data},
      {"data.vocab", "--vocab", "WordPiece vocab.txt for real SQuAD data", &c.vocab},
      {"data.synthetic_samples", "--synthetic-samples", "Number of synthetic training features", &c.synthetic_samples},
      {"data.max_seq_length", "--max-seq-length", "Tokens per feature", &c.max_seq_length},
      {"data.doc_stride", "--doc-stride", "Overlap between context windows", &c.doc_stride},
      {"data.max_query_length", "--max-query-length", "Question tokens kept", &c.max_query_length},
      {"data.cache_dir", "--cache-dir", "Feature cache folder ('none' disables it)", &c.cache_dir},
      {"train.strategy", "--strategy",
       "One of " + strategies::spec_names() + " (default: " + strategies::reference_spec().name() +
           ", one device), optionally with options: zero:stage=3,prefetch=off (the flags below set them too)",
       &c.strategy},
      {"train.batch_size", "--batch-size", "Sequences per device per micro-step", &c.batch_size},
      {"train.grad_accum", "--grad-accum", "Micro-steps per optimizer step", &c.grad_accum},
      {"train.epochs", "--epochs", "Passes over the training data", &c.epochs},
      {"train.max_steps", "--max-steps", "Optimizer steps (overrides --epochs when > 0)", &c.max_steps},
      {"train.lr", "--lr", "Peak learning rate", &c.lr},
      {"train.weight_decay", "--weight-decay", "AdamW weight decay (not on biases and LayerNorm)", &c.weight_decay},
      {"train.adam_beta1", "--adam-beta1", "AdamW beta1", &c.adam_beta1},
      {"train.adam_beta2", "--adam-beta2", "AdamW beta2", &c.adam_beta2},
      {"train.adam_eps", "--adam-eps", "AdamW epsilon", &c.adam_eps},
      {"train.warmup_ratio", "--warmup-ratio", "Fraction of steps with linear lr warm-up", &c.warmup_ratio},
      {"train.max_grad_norm", "--max-grad-norm", "Gradient clipping norm (<= 0: off)", &c.max_grad_norm},
      {"train.seed", "--seed", "Seed for initialisation, data order and dropout", &c.seed},
      {"train.precision", "--precision", "fp32, tf32, fp16 (dynamic loss scaling) or bf16 (autocast)", &c.precision},
      {"train.activation_checkpointing", "--activation-checkpointing",
       "Recompute each encoder layer's forward in its backward (keeps only the layer's input; every strategy)",
       &c.activation_checkpointing},
      {"train.cuda_graph", "--cuda-graph",
       "Capture the whole optimizer step in one CUDA graph and replay it (on a CPU: the same graph-ready step, "
       "not captured)", &c.cuda_graph},
      {"train.fused", "--fused",
       "Fused model: one QKV GEMM, fused bias-GELU and dropout-residual-LayerNorm kernels, bf16-resident weights "
       "with fp32 master weights in the optimizer", &c.fused},
      {"train.engine", "--engine",
       "auto: on a CUDA device, the graph and the fused model wherever the strategy declares them, once a GPU "
       "run has shown them equal to eager (until then eager; the choice and why are in run.json); eager: only "
       "what --cuda-graph and --fused ask for", &c.engine},
      {"train.deterministic", "--deterministic",
       "Deterministic kernels (torch.use_deterministic_algorithms(True), CUBLAS_WORKSPACE_CONFIG=:4096:8, cuDNN "
       "deterministic, no benchmarking): the same losses bit for bit on every run and between the graph and eager "
       "where the kernels allow; slower on a GPU, so a mode to check with, not to time", &c.deterministic},
      {"train.batch_prefetch", "--no-batch-prefetch",
       "Gather and send each step's batches after the previous step's synchronisation instead of while the "
       "previous step runs (double-buffered, on a side stream on a GPU), and read each step at its end instead "
       "of after the next step is queued", &c.batch_prefetch},
      {"train.residual_fold", "--no-residual-fold",
       "Under --fused, let autograd add each residual join's two gradients in a kernel of its own instead of the "
       "branch's GEMM accumulating one into the other (beta = 1)", &c.residual_fold},
      {"train.fused_embedding", "--no-fused-embedding",
       "Under --fused, run the embeddings' three lookups, their sum and LayerNorm as ATen's operations instead "
       "of one kernel", &c.fused_embedding},
      {"train.fused_adamw", "--no-fused-adamw",
       "Under --fused with bf16-resident weights, step the fp32 masters op by op (fp32 gradient copies, "
       "clip_grad_norm_, fused AdamW, the copy into bf16) instead of one clip-and-AdamW kernel over the flat",
       &c.fused_adamw},
      {"train.tunableop", "--tunableop",
       "Choose each GEMM shape's implementation by timing in step 1 (ATen's TunableOp; CUDA only, where PyTorch "
       "2.11 offers one candidate: docs/gpu.md), the choices in tunableop_results.csv in the results folder; on "
       "another device nothing is tuned and run.json says so", &c.tunableop},
      {"train.dropout", "--dropout", "Dropout probability (< 0: the model configuration's)", &c.dropout},
      {"timing.warmup_steps", "--timing-warmup-steps", "Steps excluded from the timing figures", &c.timing_warmup_steps},
      {"timing.log_every", "--log-every", "Log a line every N optimizer steps", &c.log_every},
      {"timing.peak_tflops", "--peak-tflops", "Peak TFLOP/s for MFU (overrides the device table)", &c.peak_tflops},
      {"timing.sample_ms", "--sample-ms",
       "Sample GPU utilisation, memory, power (NVML) or the ranks' CPU use (/proc) every N ms into "
       "utilisation.csv (0: off)", &c.sample_ms},
      {"run.device", "--device", "auto, cpu, cuda or cuda:N", &c.device},
      {"run.results_dir", "--results-dir", "Folder that receives one sub-folder per run", &c.results_dir},
      {"run.name", "--run-name", "Name of this run's folder (default: strategy, size and time)", &c.run_name},
      {"run.threads", "--threads", "Intra-op CPU threads (0: LibTorch's default)", &c.threads},
      {"run.eval_batch_size", "--eval-batch-size", "Sequences per evaluation batch", &c.eval_batch_size},
      {"run.tensorboard", "--tensorboard", "on: TensorBoard event files in the results folder, flushed as the run "
       "goes (tensorboard --logdir results/); off: none", &c.tensorboard},
      {"run.profile", "--profile",
       "Profile optimizer steps N or A-B (Kineto; rank 0): a Chrome trace (Perfetto, TensorBoard's profile view) "
       "and a kernel table in the results folder; their times include the profiler's cost", &c.profile},
  };
}

void load_toml(TrainConfig& cfg, const TomlFile& file) {
  auto settings = settings_of(cfg);
  std::set<std::string> known;
  for (auto& s : settings) known.insert(s.key);
  for (auto& k : strategies::toml_keys()) known.insert(k);
  // Unknown keys are typos until proven otherwise: refuse them.
  for (auto& key : file.keys())
    if (!known.count(key)) fail("{}: unknown setting '{}'", file.path().string(), key);
  file.apply(settings);
}

void load_toml(TrainConfig& cfg, const std::filesystem::path& path) { load_toml(cfg, TomlFile(path)); }

void validate(const TrainConfig& c) {
  static const std::set<std::string> precisions = {"fp32", "tf32", "fp16", "bf16"};
  if (!precisions.count(c.precision))
    fail("--precision {}: unknown (use fp32, tf32, fp16 or bf16)", c.precision);
  if (c.engine != "auto" && c.engine != "eager") fail("--engine {}: unknown (use auto or eager)", c.engine);
  if (c.batch_size < 1) fail("--batch-size {}: must be at least 1", c.batch_size);
  if (c.eval_batch_size < 1) fail("--eval-batch-size {}: must be at least 1", c.eval_batch_size);
  if (c.grad_accum < 1) fail("--grad-accum {}: must be at least 1", c.grad_accum);
  if (c.epochs < 1 && c.max_steps < 1) fail("--epochs {} with --max-steps {}: nothing to train", c.epochs, c.max_steps);
  if (c.max_steps < 0) fail("--max-steps {}: must not be negative", c.max_steps);
  if (!(c.lr > 0)) fail("--lr {}: must be positive", c.lr);
  if (c.weight_decay < 0) fail("--weight-decay {}: must not be negative", c.weight_decay);
  if (c.warmup_ratio < 0 || c.warmup_ratio >= 1) fail("--warmup-ratio {}: must be in [0, 1)", c.warmup_ratio);
  if (c.dropout >= 1) fail("--dropout {}: must be below 1", c.dropout);
  if (c.max_seq_length < 8) fail("--max-seq-length {}: too short for [CLS] q [SEP] c [SEP]", c.max_seq_length);
  if (c.doc_stride < 1 || c.doc_stride >= c.max_seq_length)
    fail("--doc-stride {}: must be between 1 and --max-seq-length ({})", c.doc_stride, c.max_seq_length);
  if (c.max_query_length < 1) fail("--max-query-length {}: must be at least 1", c.max_query_length);
  if (c.synthetic_samples < 1) fail("--synthetic-samples {}: must be at least 1", c.synthetic_samples);
  if (c.timing_warmup_steps < 0) fail("--timing-warmup-steps {}: must not be negative", c.timing_warmup_steps);
  if (c.tunableop) validate_tunableop(c);
  if (c.log_every < 1) fail("--log-every {}: must be at least 1", c.log_every);
  if (c.peak_tflops < 0) fail("--peak-tflops {}: must not be negative", c.peak_tflops);
  if (c.sample_ms < 0) fail("--sample-ms {}: must not be negative (0 turns sampling off)", c.sample_ms);
  if (c.tensorboard != "on" && c.tensorboard != "off") fail("--tensorboard {}: use on or off", c.tensorboard);
  if (c.threads < 0) fail("--threads {}: must not be negative", c.threads);
  // The range against the run's steps where they are known already; an
  // epoch-long run's count is checked once its data is read (run/loop.cpp).
  auto profile = parse_profile_steps(c.profile);
  if (c.max_steps > 0) check_profile_steps(profile, c.profile, c.max_steps, 0);
  // A fetched hub model brings its vocab.txt (train/names.h).
  bool vocab_given = !c.vocab.empty() || model_brings_vocab(c.model);
  if (c.train_data != "synthetic" && !vocab_given)
    fail("--train-data {}: real SQuAD data needs --vocab (a WordPiece vocab.txt)", c.train_data);
  if (!c.eval_data.empty() && !vocab_given)
    fail("--eval-data {}: needs --vocab (a WordPiece vocab.txt)", c.eval_data);
}

std::vector<std::pair<std::string, std::string>> describe(const TrainConfig& cfg) {
  auto copy = cfg;
  std::vector<std::pair<std::string, std::string>> out;
  for (auto& s : settings_of(copy)) out.emplace_back(s.key, value_text(s));
  return out;
}

}  // namespace hpcbench::train
