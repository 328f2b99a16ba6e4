#pragma once

namespace hpcbench {
// Defined in the generated version.cpp (cmake/version.cpp.in).
const char* version();
const char* git_commit();
// Whether the LibTorch we link was built with CUDA (so NCCL can be used).
bool torch_cuda_compiled();
}  // namespace hpcbench
