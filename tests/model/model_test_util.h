#pragma once
// Shared helpers of the model tests: the reference files and tensor distances.
#include <ATen/ATen.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

#include "model/checkpoint.h"
#include "test_env.h"

namespace hpcbench::test {

// ||a - b|| / ||b|| over the whole tensor, in double.
inline double rel_diff(const at::Tensor& a, const at::Tensor& b) {
  auto bd = b.to(at::kDouble);
  double denom = bd.norm().item<double>();
  double num = (a.to(at::kDouble) - bd).norm().item<double>();
  return denom == 0 ? num : num / denom;
}

inline double max_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a.to(at::kDouble) - b.to(at::kDouble)).abs().max().item<double>();
}

inline std::map<std::string, at::Tensor> ref_tensors(const std::string& file) {
  return model::read_safetensors(reference_dir() / file);
}

}  // namespace hpcbench::test
