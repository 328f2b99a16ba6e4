#include "train/gemm_tuning.h"

#include "core/error.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#if HPCBENCH_TRAIN_CUDA
#include <ATen/cuda/tunable/Tunable.h>
#endif

namespace hpcbench::train {

std::string tunableop_override_in_environment() {
  for (const char* v : {"PYTORCH_TUNABLEOP_ENABLED", "PYTORCH_TUNABLEOP_TUNING", "PYTORCH_TUNABLEOP_FILENAME",
                        "PYTORCH_TUNABLEOP_RECORD_UNTUNED"})
    if (std::getenv(v) != nullptr) return v;
  return "";
}

GemmTuning::GemmTuning(bool requested, const c10::Device& device) {
  rec_.requested = requested;
  if (!requested) return;
  if (!device.is_cuda()) {
    rec_.reason = fmt::format("the device is {}: TunableOp chooses among CUDA GEMM implementations; nothing was tuned",
                              device.str());
    return;
  }
#if HPCBENCH_TRAIN_CUDA
  // PyTorch appends each result to its file as it tunes, and reads that file
  // back first: a file of this process's own, so that nothing from another
  // run is loaded and nothing lands in the working folder (its default,
  // tunableop_results<device>.csv). The run's file is written from the
  // results themselves, with the run folder.
  std::error_code ec;
  const auto tmp = std::filesystem::temp_directory_path(ec);
  if (ec)
    fail("--tunableop: no temporary folder for TunableOp's scratch file ({}); set TMPDIR to a writable folder",
         ec.message());
  scratch_ = (tmp / fmt::format("hpcbench-tunableop-{}.csv", ::getpid())).string();
  std::filesystem::remove(scratch_, ec);
  auto* ctx = at::cuda::tunable::getTuningContext();
  ctx->SetFilename(scratch_, false);
  ctx->EnableTuning(true);
  ctx->EnableTunableOp(true);
  rec_.on = true;
#else
  rec_.reason = "this build's LibTorch has no CUDA";
#endif
}

GemmTuning::~GemmTuning() {
#if HPCBENCH_TRAIN_CUDA
  if (rec_.on) {
    auto* ctx = at::cuda::tunable::getTuningContext();
    ctx->EnableTunableOp(false);
    ctx->EnableTuning(true);  // PyTorch's default
    ctx->GetTuningResultsManager().CloseRealtimeAppend();
  }
#endif
  if (!scratch_.empty()) {
    std::error_code ec;
    std::filesystem::remove(scratch_, ec);
  }
}

void GemmTuning::after_step(int64_t step) {
#if HPCBENCH_TRAIN_CUDA
  if (rec_.on && step == kTunedSteps) at::cuda::tunable::getTuningContext()->EnableTuning(false);
#else
  (void)step;
#endif
}

GemmTuningRecord GemmTuning::take() {
#if HPCBENCH_TRAIN_CUDA
  if (rec_.on) {
    auto* ctx = at::cuda::tunable::getTuningContext();
    // The lines PyTorch's own results file holds (TuningContext's writer):
    // the validators, then operation, shape, implementation, its time in ms.
    std::ostringstream out;
    for (const auto& [key, value] : ctx->GetTuningResultsValidator().GetAllValidators())
      out << "Validator," << key << "," << value << "\n";
    for (const auto& [op, kernels] : ctx->GetTuningResultsManager().Dump())
      for (const auto& [shape, result] : kernels) {
        out << op << "," << shape << "," << result.GetKey() << "," << result.GetTime() << "\n";
        ++rec_.gemms;
        ++rec_.chosen[result.GetKey()];
      }
    rec_.results = out.str();
  }
#endif
  return rec_;
}

}  // namespace hpcbench::train
