#include "train/batch_ring.h"

#include <ATen/ATen.h>
#include <ATen/DeviceAccelerator.h>
#include <c10/core/StreamGuard.h>
#include <c10/core/impl/VirtualGuardImpl.h>

namespace hpcbench::train {

BatchRing::BatchRing(int64_t micro_steps, int64_t rows, int64_t seq, c10::Device device)
    : device_(device), rows_(rows) {
  const bool accelerator = !device.is_cpu();
  // A pool stream of normal priority: the copy is small and must not push
  // the step's kernels aside.
  if (accelerator)
    copy_stream_ = c10::impl::VirtualGuardImpl(device.type()).getStreamFromGlobalPool(device, /*isHighPriority=*/false);
  const int64_t numel = flat_batch_numel(rows, seq);
  for (auto& e : entries_) {
    for (int64_t k = 0; k < micro_steps; ++k) {
      Slot s;
      s.host = at::zeros({numel}, at::TensorOptions().dtype(at::kLong).pinned_memory(accelerator));
      s.device = accelerator ? at::zeros({numel}, at::TensorOptions().dtype(at::kLong).device(device)) : s.host;
      s.host_fields = cut_fields(s.host, rows, seq);
      s.device_fields = cut_fields(s.device, rows, seq);
      e.slots.push_back(std::move(s));
    }
    if (accelerator) {
      e.copied = std::make_unique<c10::Event>(device.type(), c10::EventFlag::BACKEND_DEFAULT);
      e.used = std::make_unique<c10::Event>(device.type(), c10::EventFlag::BACKEND_DEFAULT);
    }
  }
}

// The last copies may still be running when the loop ends (a step staged
// that never ran): they finish before their buffers go back to the caching
// allocator, which would otherwise hand them to the compute stream at once.
BatchRing::~BatchRing() {
  for (auto& e : entries_)
    if (e.copied && e.copied->was_marked_for_recording()) e.copied->synchronize();
}

void BatchRing::stage(const FeatureTensors& features, const std::vector<at::Tensor>& rows) {
  TORCH_CHECK(!staged_, "BatchRing: a step staged twice before it was taken (internal)");
  // The step that took the other entry has queued all its work (stage()
  // comes after it): the compute stream marks where it stops reading it.
  if (taken_ >= 0 && copy_stream_)
    entries_[static_cast<size_t>(taken_)].used->record(at::accelerator::getCurrentStream(device_.index()));
  auto& e = entries_[static_cast<size_t>(next_)];
  // The step that last read this entry may still run: the loop reads a step
  // only after the next one is queued (run/loop.cpp). Its pinned buffers
  // are free once their last copy is done (a wait the host makes long after
  // it: that copy ran before that step began).
  if (e.copied && e.copied->was_marked_for_recording()) e.copied->synchronize();
  TORCH_CHECK(rows.size() <= e.slots.size(), "BatchRing: ", rows.size(), " micro-batches for ", e.slots.size(),
              " slots (internal)");
  for (size_t k = 0; k < rows.size(); ++k) {
    auto& s = e.slots[k];
    s.n = rows[k].numel();
    TORCH_CHECK(s.n <= rows_, "BatchRing: ", s.n, " rows for slots of ", rows_, " (internal)");
    s.padded = features.any_padded(rows[k]);
    features.gather_into(rows[k], s.host_fields.slice(0, s.n));
  }
  for (size_t k = rows.size(); k < e.slots.size(); ++k) e.slots[k].n = 0;
  if (copy_stream_) {
    // The copy stream first waits for the step that last read the entry's
    // device buffers (still running, or queued, when the host gets here).
    if (e.used->was_marked_for_recording()) e.used->block(*copy_stream_);
    c10::StreamGuard on_copy_stream(*copy_stream_);
    for (size_t k = 0; k < rows.size(); ++k) e.slots[k].device.copy_(e.slots[k].host, /*non_blocking=*/true);
    e.copied->record(*copy_stream_);
  }
  staged_ = true;
}

std::vector<Batch> BatchRing::take() {
  TORCH_CHECK(staged_, "BatchRing: nothing staged (internal)");
  auto& e = entries_[static_cast<size_t>(next_)];
  if (e.copied) e.copied->block(at::accelerator::getCurrentStream(device_.index()));
  std::vector<Batch> out;
  for (auto& s : e.slots) {
    if (s.n == 0) break;
    auto b = s.device_fields.slice(0, s.n);
    if (!s.padded) b.attention_mask = at::Tensor();
    out.push_back(std::move(b));
  }
  taken_ = next_;
  next_ = 1 - next_;
  staged_ = false;
  return out;
}

const at::Tensor& BatchRing::taken_flat(int64_t k) const {
  TORCH_CHECK(taken_ >= 0, "BatchRing: nothing taken (internal)");
  return entries_[static_cast<size_t>(taken_)].slots[static_cast<size_t>(k)].device;
}

int64_t BatchRing::taken_rows(int64_t k) const {
  TORCH_CHECK(taken_ >= 0, "BatchRing: nothing taken (internal)");
  return entries_[static_cast<size_t>(taken_)].slots[static_cast<size_t>(k)].n;
}

}  // namespace hpcbench::train
