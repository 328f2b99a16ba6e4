#pragma once
// Features as tensors, and micro-batches cut from them.
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <vector>

#include "data/features.h"

namespace hpcbench::train {

struct Batch {
  at::Tensor input_ids, token_type_ids, attention_mask;  // [b, seq] int64
  at::Tensor start_positions, end_positions;             // [b] int64
  int64_t size() const { return input_ids.size(0); }
  Batch to(c10::Device device) const;
  // Rows [begin, end) of this batch: dp scatters a batch this way.
  Batch slice(int64_t begin, int64_t end) const;
};

// The features held once as CPU tensors; batches are index_select'ed rows.
class FeatureTensors {
 public:
  explicit FeatureTensors(const data::Features& f);
  int64_t size() const { return ids_.size(0); }
  int64_t seq_len() const { return ids_.size(1); }
  Batch gather(const at::Tensor& indices) const;  // CPU batch
  // The batch on `device`: gather() on CPU; on an accelerator the rows are
  // gathered into one pinned staging buffer and sent in one copy
  // (gather_staged with pin).
  Batch gather_to(const at::Tensor& indices, c10::Device device) const;
  // Rows gathered into one staging buffer (pinned with `pin`), copied to
  // `device` in one non-blocking copy and cut into the fields there. The
  // attention mask is left out when no row has padding, as Batch::to does.
  Batch gather_staged(const at::Tensor& indices, c10::Device device, bool pin) const;

 private:
  at::Tensor ids_, types_, mask_, start_, end_;
  std::vector<char> row_padded_;  // per feature: its mask has a zero
};

}  // namespace hpcbench::train
