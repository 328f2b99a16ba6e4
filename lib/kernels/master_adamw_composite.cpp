// The ATen composite of the master-weight AdamW step (master_adamw.h): the
// semantics the CUDA kernel shares, in fp32 as the kernel computes, the
// constants rounded to float the way the kernel holds them (1 - beta taken
// in double first, as torch.optim.AdamW takes it).
#include <ATen/ATen.h>

#include "kernels/master_adamw.h"

namespace hpcbench::kernels {

namespace {

int64_t numel_of(const MasterAdamW& s, size_t k) {
  return (k + 1 < s.offsets.size() ? s.offsets[k + 1] : s.numel) - s.offsets[k];
}

// Every gradient as fp32, end to end in the flat's layout (zeros for a
// parameter without one).
at::Tensor flat_grads(const MasterAdamW& s) {
  std::vector<at::Tensor> parts;
  for (size_t k = 0; k < s.grads.size(); ++k) {
    const auto& g = s.grads[k];
    TORCH_CHECK(!g.defined() || g.numel() == numel_of(s, k), "master_adamw: gradient ", k, " has ",
                g.defined() ? g.numel() : 0, " elements, its slot in the flat ", numel_of(s, k));
    parts.push_back(g.defined() ? g.reshape({-1}).to(at::kFloat)
                                : at::zeros({numel_of(s, k)}, s.master.options().dtype(at::kFloat)));
  }
  return at::cat(parts);
}

at::Tensor lr_of(const MasterAdamW& s, int group) {
  const auto gi = static_cast<size_t>(group);
  if (gi < s.lr.size() && s.lr[gi].defined()) return s.lr[gi].to(at::kFloat).reshape({});
  return at::scalar_tensor(static_cast<float>(s.lr_value.at(gi)), s.master.options().dtype(at::kFloat));
}

}  // namespace

namespace composite {

void grad_norm(const MasterAdamW& s, double max_norm, const at::Tensor& norm, const at::Tensor& coef) {
  auto n = at::linalg_vector_norm(flat_grads(s), 2);
  norm.copy_(n.reshape(norm.sizes()));
  if (coef.defined())
    coef.copy_((static_cast<float>(max_norm) / (n + 1e-6f)).clamp_max(1.0f).reshape(coef.sizes()));
}

void master_adamw(const MasterAdamW& s, const at::Tensor& coef) {
  const float b1 = static_cast<float>(s.beta1), b2 = static_cast<float>(s.beta2);
  auto g = flat_grads(s);
  if (coef.defined()) g.mul_(coef.to(at::kFloat).reshape({}));
  auto step = s.step.to(at::kDouble).reshape({});
  auto bc1 = (1.0 - at::pow(s.beta1, step)).to(at::kFloat);
  auto bc2_sqrt = (1.0 - at::pow(s.beta2, step)).sqrt().to(at::kFloat);
  auto master = s.master.narrow(0, 0, s.numel);
  auto m = s.exp_avg.narrow(0, 0, s.numel);
  auto v = s.exp_avg_sq.narrow(0, 0, s.numel);
  // Decoupled weight decay, per parameter from its group: master -= lr * wd * master.
  std::vector<at::Tensor> decay, step_size;
  for (size_t gi = 0; gi < s.weight_decay.size(); ++gi) {
    auto lr = lr_of(s, static_cast<int>(gi));
    decay.push_back(lr * static_cast<float>(s.weight_decay[gi]));
    step_size.push_back(lr / bc1);
  }
  for (size_t k = 0; k < s.offsets.size(); ++k) {
    auto p = master.narrow(0, s.offsets[k], numel_of(s, k));
    p.sub_(p * decay.at(static_cast<size_t>(s.groups[k])));
  }
  m.mul_(b1).add_(g, static_cast<float>(1.0 - s.beta1));
  v.mul_(b2).addcmul_(g, g, static_cast<float>(1.0 - s.beta2));
  auto update = m / (v.sqrt() / bc2_sqrt + static_cast<float>(s.eps));
  for (size_t k = 0; k < s.offsets.size(); ++k) {
    const auto n = numel_of(s, k);
    master.narrow(0, s.offsets[k], n).sub_(update.narrow(0, s.offsets[k], n) * step_size.at(static_cast<size_t>(s.groups[k])));
  }
  s.weight.narrow(0, 0, s.numel).copy_(master);
}

}  // namespace composite
}  // namespace hpcbench::kernels
