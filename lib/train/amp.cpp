#include "train/amp.h"

#include <ATen/ATen.h>
#include <ATen/Context.h>
#include <ATen/autocast_mode.h>

#include <cmath>

namespace hpcbench::train {

void configure_precision(const std::string& precision) {
  bool tf32 = precision == "tf32";
  at::globalContext().setAllowTF32CuBLAS(tf32);
  at::globalContext().setAllowTF32CuDNN(tf32);
}

AutocastGuard::AutocastGuard(c10::DeviceType device, const std::string& precision) : device_(device) {
  if (precision != "bf16" && precision != "fp16") return;
  active_ = true;
  prev_enabled_ = at::autocast::is_autocast_enabled(device_);
  prev_dtype_ = at::autocast::get_autocast_dtype(device_);
  at::autocast::set_autocast_enabled(device_, true);
  at::autocast::set_autocast_dtype(device_, precision == "bf16" ? at::kBFloat16 : at::kHalf);
  at::autocast::increment_nesting();
}

AutocastGuard::~AutocastGuard() {
  if (!active_) return;
  // Casts of the weights are cached while nested; drop them on leaving the
  // outermost region, exactly as torch.autocast.__exit__ does.
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  at::autocast::set_autocast_enabled(device_, prev_enabled_);
  at::autocast::set_autocast_dtype(device_, prev_dtype_);
}

GradScaler::GradScaler(c10::Device device, bool enabled) : enabled_(enabled) {
  if (!enabled_) return;
  auto opts = at::TensorOptions().device(device).dtype(at::kFloat);
  inv_scale_ = at::full({}, 1.0 / scale_host_, opts);
  found_inf_ = at::zeros({}, opts);
}

// The scale changes only in update(), on a verdict the host already holds,
// so the host runs _amp_update_scale_'s rule itself (powers of two: no
// rounding) and the device copy of 1 / scale is written only when the scale
// changes (every 2000 clean steps, or on an overflow): reading the scale
// never waits for the device, and a clean step costs no scale update there.
double GradScaler::scale() const { return enabled_ ? scale_host_ : 1.0; }

bool GradScaler::unscale(const std::vector<at::Tensor>& params) {
  if (!enabled_) return true;
  std::vector<at::Tensor> grads;
  for (const auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  found_inf_.zero_();
  at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf_, inv_scale_);
  return found_inf_.item<float>() == 0.0f;
}

void GradScaler::update(bool found_inf) {
  if (!enabled_) return;
  // The caller's verdict, not this rank's own check: sharded ranks skip a
  // step together when any of them overflowed, and their scales must agree.
  const double before = scale_host_;
  if (found_inf) {
    scale_host_ *= kBackoff;
    growth_host_ = 0;
  } else if (++growth_host_ == kInterval) {
    // As _amp_update_scale_: a growth that would overflow fp32 is not taken.
    if (std::isfinite(static_cast<float>(scale_host_ * kGrowth))) scale_host_ *= kGrowth;
    growth_host_ = 0;
  }
  if (scale_host_ != before) inv_scale_.fill_(1.0 / scale_host_);
}

}  // namespace hpcbench::train
