#include <fmt/format.h>

#include <ATen/Context.h>
#include <ATen/Parallel.h>
#include <torch/version.h>

#include "commands.h"
#include "core/hostinfo.h"
#include "core/version.h"
#include "device/device.h"
#include "hub/cache.h"
#include "kernels/fused.h"
#include "tensorboard/event_writer.h"

namespace hpcbench::cli {


namespace {
// LibTorch's CMake package says whether its c10d was built with NCCL.
constexpr bool nccl_compiled() {
#ifdef USE_C10D_NCCL
  return true;
#else
  return false;
#endif
}
}  // namespace

std::string version_text() {
  return fmt::format("hpcbench {} (commit {})\nLibTorch {}\nCUDA support: {}\nNCCL support: {}\n"
                     "TensorBoard writer: {}\nFused CUDA kernels: {}",
                     version(), git_commit(), TORCH_VERSION, torch_cuda_compiled() ? "yes" : "no",
                     torch_cuda_compiled() && nccl_compiled() ? "yes (c10d ProcessGroupNCCL)" : "no",
                     tensorboard::available() ? "yes (protobuf)" : "no (built without the protobuf library)",
                     kernels::cuda_built() ? "yes (" + kernels::cuda_archs() + ")"
                                           : std::string("no (built without nvcc or a CUDA LibTorch: ATen composites)"));
}

Action add_env(CLI::App& app) {
  app.add_subcommand("env", "Print what a cluster job needs to be debugged: host, "
                                        "devices, versions, threads, SLURM and rank variables");
  return [] {
    fmt::print("# hpcbench {} (commit {})\n", version(), git_commit());
    fmt::print("host              {}\n", hostname());
    fmt::print("hardware threads  {}\n", hardware_threads());
    fmt::print("torch threads     intra-op {} / inter-op {}\n", at::get_num_threads(),
               at::get_num_interop_threads());
    fmt::print("LibTorch          {}\n", TORCH_VERSION);
    fmt::print("CUDA compiled     {}\n", torch_cuda_compiled() ? "yes" : "no");
    fmt::print("CUDA usable       {}\n", at::hasCUDA() ? "yes" : "no (no driver or device)");
    int n = accelerator_count();
    fmt::print("accelerators      {}\n", n);
    auto cpu = describe(c10::Device(c10::kCPU));
    fmt::print("device cpu        {}\n", cpu.name);
    for (int i = 0; i < n; ++i) {
      auto d = describe(resolve_device("cuda:" + std::to_string(i)));
      fmt::print("device cuda:{}     {} ({:.1f} GiB)\n", i, d.name, d.total_memory / 1073741824.0);
    }
    // Where `run` looks for fetched models and SQuAD: a job that cannot find
    // them is most often looking in another cache than the login node filled.
    fmt::print("# caches\n");
    fmt::print("hub cache         {}\n", hub::hub_cache().string());
    fmt::print("datasets cache    {}\n", hub::datasets_cache().string());
    fmt::print("hub endpoint      {}{}\n", hub::endpoint(), hub::offline() ? " (offline: HF_HUB_OFFLINE)" : "");
    auto vars = job_environment();
    fmt::print("# job environment ({} variables)\n", vars.size());
    for (auto& [k, v] : vars) fmt::print("{:<24}  {}\n", k, v);
    return 0;
  };
}

}  // namespace hpcbench::cli
