#pragma once
// Mixed precision: autocast for bf16/fp16, dynamic loss scaling for fp16
// (torch.amp.GradScaler's algorithm on the same ATen kernels), TF32 switches.
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/ScalarType.h>

#include <optional>
#include <string>
#include <vector>

namespace hpcbench::train {

// Applies process-wide precision settings (TF32 matmuls for "tf32").
void configure_precision(const std::string& precision);

// RAII autocast region, as `with torch.autocast(device_type, dtype)`.
class AutocastGuard {
 public:
  AutocastGuard(c10::DeviceType device, const std::string& precision);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  c10::DeviceType device_;
  bool active_ = false;
  bool prev_enabled_ = false;
  c10::ScalarType prev_dtype_{};
};

// Dynamic loss scaling: init 2^16, x2 every 2000 clean steps, x0.5 on inf/nan.
class GradScaler {
 public:
  GradScaler(c10::Device device, bool enabled);
  bool enabled() const { return enabled_; }
  double scale() const;  // current scale (1 when disabled)
  // Divides the gradients by the scale in place; returns true when all are finite.
  bool unscale(const std::vector<at::Tensor>& params);
  // Halves the scale when `found_inf` (on any rank), else grows it on schedule.
  void update(bool found_inf);

 private:
  static constexpr double kGrowth = 2.0, kBackoff = 0.5;
  static constexpr int64_t kInterval = 2000;
  bool enabled_;
  // 1 / scale on the device, rewritten only when the scale changes.
  at::Tensor inv_scale_, found_inf_;
  double scale_host_ = 65536.0;
  int64_t growth_host_ = 0;
};

}  // namespace hpcbench::train
