#include "train/flops.h"

#include <array>
#include <string_view>

#include "model/bert.h"

namespace hpcbench::train {

int64_t matmul_weights(const model::BertConfig& c) {
  const int64_t h = c.hidden_size, i = c.intermediate_size;
  return c.num_hidden_layers * (4 * h * h + 2 * h * i) + 2 * h;
}

double training_flops_per_sequence(const model::BertConfig& c, int64_t seq) {
  // In doubles: bert-large at s = 512 is already 1e12, and every term is an
  // integer far below 2^53, so the products stay exact.
  const double s = static_cast<double>(seq);
  return 6.0 * static_cast<double>(matmul_weights(c)) * s +
         12.0 * static_cast<double>(c.num_hidden_layers) * static_cast<double>(c.hidden_size) * s * s;
}

double hardware_flops_per_sequence(const model::BertConfig& c, int64_t seq, bool recompute) {
  const double model = training_flops_per_sequence(c, seq);
  if (!recompute) return model;
  const double s = static_cast<double>(seq), h = static_cast<double>(c.hidden_size),
               i = static_cast<double>(c.intermediate_size), layers = static_cast<double>(c.num_hidden_layers);
  return model + 2.0 * layers * (4.0 * h * h + 2.0 * h * i) * s + 4.0 * layers * h * s * s;
}

namespace {
struct Peak {
  std::string_view name;          // exact CUDA device name
  double fp32, tf32, bf16, fp16;  // dense TFLOP/s; 0: no such rate
};

// NVIDIA datasheets print tensor-core rates "with sparsity" (2:4 structured);
// the dense rate, the one a dense matmul can reach, is half of it. Where the
// architecture whitepaper gives the dense figure to more digits it is used.
// One row per name, memory size and form factor included, because these
// differ in clocks and power: H100 PCIe reaches 76% of H100 SXM.
constexpr std::array<Peak, 15> kPeaks = {{
    // "NVIDIA A100 Tensor Core GPU" datasheet: the same rates for SXM4 and
    // PCIe, 40 and 80 GB: FP32 19.5, TF32 156, BF16 / FP16 312.
    {"NVIDIA A100-SXM4-40GB", 19.5, 156.0, 312.0, 312.0},
    {"NVIDIA A100-SXM4-80GB", 19.5, 156.0, 312.0, 312.0},
    {"NVIDIA A100-PCIE-40GB", 19.5, 156.0, 312.0, 312.0},
    {"NVIDIA A100 80GB PCIe", 19.5, 156.0, 312.0, 312.0},
    // "NVIDIA H100 Tensor Core GPU" datasheet, SXM: FP32 67, TF32 989,
    // BF16 / FP16 1,979 with sparsity; dense 494.7 / 989.4 from the "NVIDIA
    // H100 Tensor Core GPU Architecture" whitepaper (H100 SXM5).
    {"NVIDIA H100 80GB HBM3", 67.0, 494.7, 989.4, 989.4},
    // Same datasheet, PCIe: FP32 51, TF32 756, BF16 / FP16 1,513 with
    // sparsity; dense 378 / 756 in the whitepaper.
    {"NVIDIA H100 PCIe", 51.0, 378.0, 756.0, 756.0},
    // Same datasheet, NVL (per GPU): FP32 60, TF32 835, BF16 / FP16 1,671
    // with sparsity.
    {"NVIDIA H100 NVL", 60.0, 417.5, 835.5, 835.5},
    // "NVIDIA H200 Tensor Core GPU" datasheet: H200 SXM has H100 SXM's rates
    // (FP32 67, TF32 989, BF16 / FP16 1,979 with sparsity), H200 NVL H100
    // NVL's (60, 835, 1,671): the same GH100 at the same clocks, only the
    // memory differs.
    {"NVIDIA H200", 67.0, 494.7, 989.4, 989.4},
    {"NVIDIA H200 NVL", 60.0, 417.5, 835.5, 835.5},
    // "NVIDIA L40S" datasheet: FP32 91.6; TF32 183, BF16 / FP16 362.05
    // dense (366 / 733 with sparsity).
    {"NVIDIA L40S", 91.6, 183.0, 362.05, 362.05},
    // "NVIDIA Tesla V100 GPU Accelerator" datasheet: single precision 15.7
    // (SXM2), 14 (PCIe), 16.4 (V100S PCIe); tensor performance (FP16) 125,
    // 112, 130; the same for 16 and 32 GB. Volta has no TF32 mode: with
    // --precision tf32 PyTorch's allow_tf32 changes nothing and the matmuls
    // run in FP32, so the FP32 rate is the honest peak. It has no BF16 tensor
    // cores either, and BF16 matmuls there have no datasheet rate: 0, MFU n/a.
    {"Tesla V100-SXM2-16GB", 15.7, 15.7, 0.0, 125.0},
    {"Tesla V100-SXM2-32GB", 15.7, 15.7, 0.0, 125.0},
    {"Tesla V100-PCIE-16GB", 14.0, 14.0, 0.0, 112.0},
    {"Tesla V100-PCIE-32GB", 14.0, 14.0, 0.0, 112.0},
    {"Tesla V100S-PCIE-32GB", 16.4, 16.4, 0.0, 130.0},
}};
}  // namespace

double peak_tflops(const std::string& device_name, const std::string& precision) {
  for (const auto& p : kPeaks) {
    if (device_name != p.name) continue;
    if (precision == "fp32") return p.fp32;
    if (precision == "tf32") return p.tf32;
    if (precision == "bf16") return p.bf16;
    if (precision == "fp16") return p.fp16;
    return 0;
  }
  return 0;
}

}  // namespace hpcbench::train
