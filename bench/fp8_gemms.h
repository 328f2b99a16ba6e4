#pragma once
// bench_kernels --fp8: the 12 GEMMs of a bert-base encoder layer (forward,
// dgrad and wgrad of its four linears) in bf16 against FP8 through
// at::_scaled_mm, with dynamic per-tensor and row-wise scales and the cost of
// the casts, each GEMM's SQNR against bf16, and the decision rule's verdict
// (docs/gpu.md, "FP8"). Returns the number of failed checks.
#include <cstdint>

namespace hpcbench::bench {

struct Fp8Options {
  int64_t m = 0;    // tokens (rows); 0: 12,288 (32 x 384) on a GPU, 64 with --dry or on a CPU
  int iters = 20;   // timed calls per repeat
  bool dry = false; // the logic only, on the CPU: no timing
};

int run_fp8(const Fp8Options& o);

}  // namespace hpcbench::bench
