#pragma once
// FLOP count of BERT training and the peak rates MFU is measured against.
#include <string>

namespace hpcbench::train {

// Training FLOPs (forward + backward) per sequence of length s for a model of
// N parameters, L layers and hidden size h: 6*N*s + 12*L*h*s^2. The first
// term is the matmuls with the weights (2 FLOPs per multiply-add, backward
// twice the forward), the second the attention scores and their weighted sum
// (PaLM, Chowdhery et al. 2022, appendix B). Embedding lookups are counted in
// N as PaLM does; for bert-base at s = 384 this gives 2.7e11, the figure in
// shared/docs/reference-figures.md.
double training_flops_per_sequence(double num_parameters, double layers, double hidden, double seq);

// Dense peak TFLOP/s of a device for a precision ("fp32", "tf32", "fp16",
// "bf16"), matched on the device's name (A100, H100, H200); 0 when unknown
// (CPUs, other GPUs): then MFU is not reported unless --peak-tflops is given.
double peak_tflops(const std::string& device_name, const std::string& precision);

}  // namespace hpcbench::train
