#pragma once
// --deterministic: kernels that give the same bits for the same inputs on
// every run, so that a captured step can be held to eager exactly rather
// than to a noise envelope (docs/gpu.md, "Deterministic mode"). On a GPU the
// cost is real (cuBLAS without split-K workspaces, attention's backward
// without split keys, no cuDNN autotuning, uninitialised memory filled), so
// it is a mode to check with, not to time.
#include <string>

namespace hpcbench::train {

// The cuBLAS workspace settings under which its GEMMs are reproducible
// (cuBLAS's "Results reproducibility"); ATen refuses any other in
// deterministic mode.
inline constexpr const char* kCublasWorkspaceConfig = ":4096:8";

// Makes this process's kernels deterministic: ATen's deterministic algorithms
// (an operation that has no deterministic kernel stops the run instead of
// warning: torch.use_deterministic_algorithms(True, warn_only=False)), cuDNN
// deterministic without benchmarking, and CUBLAS_WORKSPACE_CONFIG set to
// kCublasWorkspaceConfig where it is unset. cuBLAS reads that variable when
// its first handle is made, so this runs before anything touches a device,
// and the ranks a launcher starts inherit it. A CUBLAS_WORKSPACE_CONFIG set to
// a value that is not reproducible is a UserError naming it. Off: nothing is
// changed.
void use_deterministic_kernels(bool on);

// What this process runs under, read back from ATen and the environment
// (run.json's "deterministic"), so that the record shows what was in force,
// not what was asked for.
struct DeterminismState {
  bool algorithms = false;
  bool warn_only = false;
  bool cudnn_deterministic = false;
  bool cudnn_benchmark = false;
  std::string cublas_workspace_config;  // "" where unset
};
DeterminismState determinism_state();

}  // namespace hpcbench::train
