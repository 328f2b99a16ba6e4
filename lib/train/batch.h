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

// A batch of `rows` rows as one flat int64 buffer (one copy sends it): the
// token ids, token types and mask [rows, seq] each, then the start and end
// positions [rows]; cut_fields gives the five fields as views of it.
inline int64_t flat_batch_numel(int64_t rows, int64_t seq) { return 3 * rows * seq + 2 * rows; }
Batch cut_fields(const at::Tensor& flat, int64_t rows, int64_t seq);

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
  // The rows into `out`'s tensors (every field, sized for them), in place.
  void gather_into(const at::Tensor& indices, const Batch& out) const;
  // Whether any of the rows has padding, read from the host copy (no
  // tensor operation): a batch without any may leave its mask out.
  bool any_padded(const at::Tensor& indices) const;

 private:
  at::Tensor ids_, types_, mask_, start_, end_;
  std::vector<char> row_padded_;  // per feature: its mask has a zero
};

// The batches of a step captured in a CUDA graph (docs/gpu.md): fixed
// tensors, one set per micro-step of an optimizer step, that each step's rows
// are copied into, since a replay reads the addresses its capture read. Every
// field is always there, the attention mask too: whether a batch has padding
// would otherwise change the captured work. On an accelerator each slot has
// its own pinned staging buffer, reused: a step's copy has run before the
// step's synchronisation, so the next step may overwrite its source.
class StaticBatches {
 public:
  StaticBatches(int64_t slots, int64_t rows, int64_t seq, c10::Device device);
  // Rows `indices` (exactly rows() of them) into slot `k`.
  const Batch& load(const FeatureTensors& features, const at::Tensor& indices, int64_t k);
  // Slot `k` filled from a flat batch laid out as these slots are (a
  // BatchRing entry's, train/batch_ring.h) by one copy on the current
  // stream, which the caller has made wait for `flat`'s own copy.
  const Batch& assign(int64_t k, const at::Tensor& flat);
  const Batch& slot(int64_t k) const { return device_[static_cast<size_t>(k)]; }
  int64_t rows() const { return rows_; }

 private:
  int64_t rows_;
  std::vector<at::Tensor> staging_, flat_;  // accelerator: pinned host, device; CPU: flat_ is the host buffer
  std::vector<Batch> host_, device_;        // on a CPU the same tensors
};

}  // namespace hpcbench::train
