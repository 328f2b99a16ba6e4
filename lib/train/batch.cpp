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
  row_padded_.assign(static_cast<size_t>(n), 0);
  for (size_t i = 0; i < f.attention_mask.size(); ++i)
    if (f.attention_mask[i] == 0) row_padded_[i / static_cast<size_t>(f.seq_len)] = 1;
}

Batch FeatureTensors::gather(const at::Tensor& idx) const {
  return Batch{ids_.index_select(0, idx), types_.index_select(0, idx), mask_.index_select(0, idx),
               start_.index_select(0, idx), end_.index_select(0, idx)};
}

Batch FeatureTensors::gather_to(const at::Tensor& idx, c10::Device device) const {
  if (device.is_cpu()) return gather(idx);
  return gather_staged(idx, device, /*pin=*/true);
}

// One pinned buffer and one host-to-device copy per micro-batch instead of
// a pinned copy and a transfer per field (ten operations, five small
// copies): the step's first micro-batch is sent right after the previous
// step's synchronisation, when every launch is on the critical path.
Batch FeatureTensors::gather_staged(const at::Tensor& idx, c10::Device device, bool pin) const {
  const int64_t b = idx.numel(), seq = seq_len();
  TORCH_CHECK(idx.scalar_type() == at::kLong && idx.is_contiguous() && idx.is_cpu(),
              "gather_staged: the indices must be a contiguous CPU int64 tensor");
  // Decided on the host, where it costs no operation (see Batch::to).
  const bool padded = any_padded(idx);
  std::vector<const at::Tensor*> fields{&ids_, &types_, &mask_, &start_, &end_};
  if (!padded) fields.erase(fields.begin() + 2);
  std::vector<int64_t> sizes;
  for (auto* f : fields) sizes.push_back(f->dim() == 2 ? b * seq : b);
  auto staging = at::empty({(padded ? 3 : 2) * b * seq + 2 * b},
                           at::TensorOptions().dtype(at::kLong).pinned_memory(pin));
  auto parts = at::split_with_sizes(staging, sizes);
  for (size_t k = 0; k < fields.size(); ++k) {
    auto out = fields[k]->dim() == 2 ? parts[k].view({b, seq}) : parts[k];
    at::index_select_out(out, *fields[k], 0, idx);
  }
  parts = at::split_with_sizes(staging.to(device, /*non_blocking=*/true), sizes);
  auto grid = [&](size_t k) { return parts[k].view({b, seq}); };
  Batch out;
  out.input_ids = grid(0);
  out.token_type_ids = grid(1);
  if (padded) out.attention_mask = grid(2);
  out.start_positions = parts[parts.size() - 2];
  out.end_positions = parts[parts.size() - 1];
  return out;
}

bool FeatureTensors::any_padded(const at::Tensor& idx) const {
  const auto* ix = idx.const_data_ptr<int64_t>();
  for (int64_t i = 0; i < idx.numel(); ++i)
    if (row_padded_[static_cast<size_t>(ix[i])] != 0) return true;
  return false;
}

void FeatureTensors::gather_into(const at::Tensor& idx, const Batch& out) const {
  at::index_select_out(const_cast<at::Tensor&>(out.input_ids), ids_, 0, idx);
  at::index_select_out(const_cast<at::Tensor&>(out.token_type_ids), types_, 0, idx);
  at::index_select_out(const_cast<at::Tensor&>(out.attention_mask), mask_, 0, idx);
  at::index_select_out(const_cast<at::Tensor&>(out.start_positions), start_, 0, idx);
  at::index_select_out(const_cast<at::Tensor&>(out.end_positions), end_, 0, idx);
}

Batch cut_fields(const at::Tensor& flat, int64_t b, int64_t seq) {
  auto parts = at::split_with_sizes(flat, {b * seq, b * seq, b * seq, b, b});
  return Batch{parts[0].view({b, seq}), parts[1].view({b, seq}), parts[2].view({b, seq}), parts[3], parts[4]};
}

StaticBatches::StaticBatches(int64_t slots, int64_t rows, int64_t seq, c10::Device device) : rows_(rows) {
  const int64_t numel = flat_batch_numel(rows, seq);
  for (int64_t k = 0; k < slots; ++k) {
    auto host = at::zeros({numel}, at::TensorOptions().dtype(at::kLong).pinned_memory(!device.is_cpu()));
    host_.push_back(cut_fields(host, rows, seq));
    if (device.is_cpu()) {
      flat_.push_back(host);
      device_.push_back(host_.back());
      continue;
    }
    auto flat = at::zeros({numel}, at::TensorOptions().dtype(at::kLong).device(device));
    staging_.push_back(host);
    flat_.push_back(flat);
    device_.push_back(cut_fields(flat, rows, seq));
  }
}

const Batch& StaticBatches::load(const FeatureTensors& features, const at::Tensor& indices, int64_t k) {
  TORCH_CHECK(indices.numel() == rows_, "StaticBatches: ", indices.numel(), " rows for slots of ", rows_);
  const auto i = static_cast<size_t>(k);
  features.gather_into(indices, host_[i]);
  if (!staging_.empty()) flat_[i].copy_(staging_[i], /*non_blocking=*/true);
  return device_[i];
}

const Batch& StaticBatches::assign(int64_t k, const at::Tensor& flat) {
  const auto i = static_cast<size_t>(k);
  TORCH_CHECK(flat.sizes() == flat_[i].sizes(), "StaticBatches: a flat batch of ", flat.numel(), " for slots of ",
              flat_[i].numel());
  flat_[i].copy_(flat, /*non_blocking=*/true);
  return device_[i];
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
