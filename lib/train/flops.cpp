#include "train/flops.h"

#include <array>

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

namespace {
struct Peak {
  const char* name;  // substring of the CUDA device name
  double fp32, tf32, half;  // dense TFLOP/s; half = BF16 and FP16
};
// NVIDIA datasheets (A100: 19.5 / 156 / 312; H100 SXM: 67 / 494.7 / 989.4;
// H100 PCIe: 51 / 378 / 756; H200 as H100 SXM). The TF32 and half rates are
// those of shared/docs/reference-figures.md. More specific names first.
constexpr std::array<Peak, 4> kPeaks = {{
    {"H100 PCIe", 51.0, 378.0, 756.0},
    {"H100", 67.0, 494.7, 989.4},
    {"H200", 67.0, 494.7, 989.4},
    {"A100", 19.5, 156.0, 312.0},
}};
}  // namespace

double peak_tflops(const std::string& device_name, const std::string& precision) {
  for (const auto& p : kPeaks) {
    if (device_name.find(p.name) == std::string::npos) continue;
    if (precision == "fp32") return p.fp32;
    if (precision == "tf32") return p.tf32;
    return p.half;
  }
  return 0;
}

}  // namespace hpcbench::train
