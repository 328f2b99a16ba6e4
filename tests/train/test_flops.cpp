#include "test_catch.h"

#include <fstream>
#include <iterator>
#include <set>
#include <string>

#include "device/device.h"
#include "model/bert.h"
#include "model/bert_modules.h"
#include "train/flops.h"

using namespace hpcbench;

namespace {
// The FLOP count done a second way, from the model lib/model builds rather
// than from its configuration: every torch::nn::Linear's weight is in·out
// multiply-adds per token, and every self-attention block adds Q·Kᵀ and P·V,
// s²·(query width) multiply-adds each. Training = 2 FLOPs x 3 (fwd + bwd).
// Also fails when a 2-D parameter is neither a Linear weight nor an embedding
// table, i.e. a matmul weight this walk (and the formula) would not see.
double flops_by_walking_the_model(const model::BertConfig& cfg, int64_t s) {
  model::BertForQuestionAnswering m(cfg);
  std::set<const void*> linear_weights;
  int64_t linear_macs = 0, attention_macs = 0;
  for (const auto& mod : m->modules(/*include_self=*/true)) {
    if (auto* lin = mod->as<torch::nn::Linear>()) {
      linear_macs += lin->weight.size(0) * lin->weight.size(1);
      linear_weights.insert(lin->weight.unsafeGetTensorImpl());
    } else if (auto* att = mod->as<model::BertSelfAttention>()) {
      attention_macs += 2 * s * s * att->query->weight.size(0);
    }
  }
  int64_t tables = 0;
  for (const auto& p : m->named_parameters()) {
    if (p.value().dim() != 2 || linear_weights.count(p.value().unsafeGetTensorImpl())) continue;
    INFO("2-D parameter that is not a Linear weight: " << p.key());
    CHECK(p.key().find(".embeddings.") != std::string::npos);
    ++tables;
  }
  CHECK(tables == 3);  // word, position, token type
  return 6.0 * static_cast<double>(linear_macs * s + attention_macs);
}
}  // namespace

TEST_CASE("the training FLOP formula matches a count over the model's own layers") {
  // Both sides are integers below 2^53 and exclude biases, so they agree
  // exactly. bert-base at 384 comes to 2.12e11, bert-large to 7.39e11; the
  // 2.7e11 of shared/docs/reference-figures.md counted the embedding tables
  // as matmul weights (6·N·s with all 108.9M parameters).
  for (const std::string name : {"bert-base-uncased", "bert-large-uncased"}) {
    INFO(name);
    auto cfg = model::BertConfig::preset(name);
    CHECK(train::training_flops_per_sequence(cfg, 384) == flops_by_walking_the_model(cfg, 384));
  }
  // An FFN width that is not 4·h, an odd layer count and a second length
  // separate the h·i, h² and s² terms, which the presets' proportions could
  // let a wrong formula hide.
  model::BertConfig odd = model::BertConfig::preset("bert-tiny");
  odd.intermediate_size = 200;
  odd.num_hidden_layers = 3;
  for (int64_t s : {7, 128}) {
    INFO("seq " << s);
    CHECK(train::training_flops_per_sequence(odd, s) == flops_by_walking_the_model(odd, s));
  }
}

TEST_CASE("with recomputation the hardware FLOPs add the encoder layers' forward once more") {
  // The walk's count less the QA head (not recomputed) is the layers'
  // training count, three times their forward.
  model::BertConfig odd = model::BertConfig::preset("bert-tiny");
  odd.intermediate_size = 200;
  odd.num_hidden_layers = 3;
  for (int64_t s : {7, 128}) {
    INFO("seq " << s);
    const double all = flops_by_walking_the_model(odd, s);
    const double head = 6.0 * 2.0 * static_cast<double>(odd.hidden_size * s);
    CHECK(train::hardware_flops_per_sequence(odd, s, false) == train::training_flops_per_sequence(odd, s));
    CHECK(train::hardware_flops_per_sequence(odd, s, true) == all + (all - head) / 3);
  }
}

TEST_CASE("peak rates are looked up by the exact CUDA device name") {
  // Transcribed again from the datasheets (dense: half the "with sparsity"
  // figures), so that a swapped column or a mistyped name in the table fails.
  struct Row {
    const char* name;
    double fp32, tf32, bf16, fp16;
  };
  const Row rows[] = {
      {"NVIDIA A100-SXM4-40GB", 19.5, 156, 312, 312},
      {"NVIDIA A100-SXM4-80GB", 19.5, 156, 312, 312},
      {"NVIDIA A100-PCIE-40GB", 19.5, 156, 312, 312},
      {"NVIDIA A100 80GB PCIe", 19.5, 156, 312, 312},
      {"NVIDIA H100 80GB HBM3", 67, 494.7, 989.4, 989.4},
      {"NVIDIA H100 PCIe", 51, 378, 756, 756},
      {"NVIDIA H100 NVL", 60, 417.5, 835.5, 835.5},
      {"NVIDIA H200", 67, 494.7, 989.4, 989.4},
      {"NVIDIA H200 NVL", 60, 417.5, 835.5, 835.5},
      {"NVIDIA L40S", 91.6, 183, 362.05, 362.05},
      // Volta: tf32 runs as fp32; no bf16 rate (MFU n/a).
      {"Tesla V100-SXM2-16GB", 15.7, 15.7, 0, 125},
      {"Tesla V100-SXM2-32GB", 15.7, 15.7, 0, 125},
      {"Tesla V100-PCIE-16GB", 14, 14, 0, 112},
      {"Tesla V100-PCIE-32GB", 14, 14, 0, 112},
      {"Tesla V100S-PCIE-32GB", 16.4, 16.4, 0, 130},
  };
  for (const auto& r : rows) {
    INFO(r.name);
    CHECK(train::peak_tflops(r.name, "fp32") == r.fp32);
    CHECK(train::peak_tflops(r.name, "tf32") == r.tf32);
    CHECK(train::peak_tflops(r.name, "bf16") == r.bf16);
    CHECK(train::peak_tflops(r.name, "fp16") == r.fp16);
    CHECK(train::peak_tflops(r.name, "fp8") == 0);
  }
  // Near-misses are not guessed: the substring match this replaced gave an
  // H100 NVL the SXM's peak (989.4 instead of 835.5), and would give any
  // future H100 variant one too.
  for (const char* name : {"NVIDIA A100", "H100", "NVIDIA H100", "NVIDIA A10", "NVIDIA A100-PCIE-40GB ",
                           "nvidia h100 pcie", "NVIDIA H100 PCIe MIG 1g.10gb", "NVIDIA H20", "Tesla V100",
                           "AMD EPYC 7763 64-Core Processor", "cpu", ""}) {
    INFO(name);
    CHECK(train::peak_tflops(name, "bf16") == 0);
    CHECK(train::peak_tflops(name, "fp32") == 0);
  }
}

TEST_CASE("a CPU without native fp16/bf16 matrix kernels gets a warning that says what to use") {
  CHECK(slow_precision_warning(c10::Device(c10::kCPU), "fp32").empty());
  CHECK(slow_precision_warning(c10::Device(c10::kCPU), "tf32").empty());
  CHECK(slow_precision_warning(c10::Device(c10::kCUDA, 0), "fp16").empty());
  // Whether this CPU has the kernels decides; both answers are checked.
  std::ifstream in("/proc/cpuinfo");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (std::string kind : {"fp16", "bf16"}) {
    bool native = text.find("avx512_" + kind + " ") != std::string::npos ||
                  text.find("avx512_" + kind + "\n") != std::string::npos ||
                  text.find("amx_" + kind) != std::string::npos;
    auto w = slow_precision_warning(c10::Device(c10::kCPU), kind);
    INFO(kind << ": " << w);
    CHECK(w.empty() == native);
    if (!native) CHECK(w.find("use fp32") != std::string::npos);
  }
}
