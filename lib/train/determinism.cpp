#include "train/determinism.h"

#include <ATen/Context.h>

#include <cstdlib>

#include "core/error.h"
#include "core/printable.h"

namespace hpcbench::train {

namespace {

std::string cublas_config() {
  const char* v = std::getenv("CUBLAS_WORKSPACE_CONFIG");
  return v ? v : "";
}

}  // namespace

void use_deterministic_kernels(bool on) {
  if (!on) return;
  // ":16:8" is the other setting cuBLAS documents as reproducible (smaller,
  // slower); a user's choice of it stands.
  const std::string given = cublas_config();
  if (given.empty()) {
    ::setenv("CUBLAS_WORKSPACE_CONFIG", kCublasWorkspaceConfig, 1);
  } else if (given != kCublasWorkspaceConfig && given != ":16:8") {
    fail("--deterministic with CUBLAS_WORKSPACE_CONFIG={}: cuBLAS's GEMMs are reproducible only with {} or :16:8; "
         "unset it (--deterministic sets {}) or give one of those",
         printable(given, 64), kCublasWorkspaceConfig, kCublasWorkspaceConfig);
  }
  auto& ctx = at::globalContext();
  ctx.setDeterministicAlgorithms(true, /*warn_only=*/false);
  ctx.setDeterministicCuDNN(true);
  ctx.setBenchmarkCuDNN(false);
}

DeterminismState determinism_state() {
  const auto& ctx = at::globalContext();
  return {ctx.deterministicAlgorithms(), ctx.deterministicAlgorithmsWarnOnly(), ctx.deterministicCuDNN(),
          ctx.benchmarkCuDNN(), cublas_config()};
}

}  // namespace hpcbench::train
