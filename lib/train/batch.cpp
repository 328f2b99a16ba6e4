#include "train/batch.h"

#include <ATen/ATen.h>

namespace hpcbench::train {

namespace {
at::Tensor rows(const std::vector<int32_t>& v, int64_t n, int64_t seq) {
  // Copied once into int64, the dtype the embedding lookup wants, so that a
  // batch costs one index_select per field and no conversion.
  return at::from_blob(const_cast<int32_t*>(v.data()), {n, seq}, at::kInt).to(at::kLong);
}
}  // namespace

FeatureTensors::FeatureTensors(const data::Features& f) {
  int64_t n = static_cast<int64_t>(f.size());
  ids_ = rows(f.input_ids, n, f.seq_len);
  types_ = rows(f.token_type_ids, n, f.seq_len);
  mask_ = rows(f.attention_mask, n, f.seq_len);
  start_ = rows(f.start_positions, n, 1).view({n});
  end_ = rows(f.end_positions, n, 1).view({n});
}

Batch FeatureTensors::gather(const at::Tensor& idx) const {
  return Batch{ids_.index_select(0, idx), types_.index_select(0, idx), mask_.index_select(0, idx),
               start_.index_select(0, idx), end_.index_select(0, idx)};
}

Batch Batch::to(c10::Device device) const {
  if (device.is_cpu()) return *this;
  auto mv = [&](const at::Tensor& t) {
    if (!t.defined()) return t;
    return (t.is_cpu() ? t.pin_memory() : t).to(device, /*non_blocking=*/true);
  };
  // Whether the batch has padding is decided on the host copy, where it
  // costs nothing; an all-ones mask is not sent, so the model never asks
  // the device (a synchronisation in every forward) and attention may take
  // its fused kernels, as Hugging Face does when it drops such a mask.
  bool padded = attention_mask.defined() && (!attention_mask.is_cpu() || !attention_mask.ne(0).all().item<bool>());
  return Batch{mv(input_ids), mv(token_type_ids), padded ? mv(attention_mask) : at::Tensor(), mv(start_positions),
               mv(end_positions)};
}

Batch Batch::slice(int64_t b, int64_t e) const {
  auto cut = [&](const at::Tensor& t) { return t.defined() ? t.slice(0, b, e) : t; };
  return Batch{cut(input_ids), cut(token_type_ids), cut(attention_mask), cut(start_positions), cut(end_positions)};
}

}  // namespace hpcbench::train
