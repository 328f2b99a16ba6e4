#pragma once
// Double-buffered batches (docs/gpu.md, "Batches ahead of the step"): the
// next optimizer step's micro-batches are gathered on the host and sent to
// the device while the current step runs, so that after a step's one
// synchronisation the next starts at once instead of idling through the
// gather and the copy.
//
// Two entries, each with a slot per micro-step, alternate: step k reads one
// while step k + 1's rows go into the other. On an accelerator a slot is a
// pinned host buffer and a device buffer, both made once; the copy runs on a
// side stream and records an event, which the compute stream waits for
// before its first use of the batch. The caching allocator's cross-stream
// rule (a block is reused as soon as its allocation stream frees it, whatever
// another stream still does with it) cannot bite: nothing here is freed
// until the ring is destroyed, which first waits for its copies. Reuse is
// ordered by events, not by the step's synchronisation, since the loop reads
// a step only after the next one is queued: an entry's device buffers are
// written again only after the compute stream has passed the step that read
// them (an event recorded when that step's work is queued, which the copy
// stream waits for), and its pinned buffers only after their last copy is
// done (a host wait on the copy's event). On a CPU the same calls run
// without a stream: the rows are gathered straight into the slot, and
// waiting is nothing.
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <c10/core/Event.h>
#include <c10/core/Stream.h>

#include <array>
#include <memory>
#include <optional>
#include <vector>

#include "train/batch.h"

namespace hpcbench::train {

class BatchRing {
 public:
  // `micro_steps` slots of `rows` rows of `seq` tokens in each entry.
  BatchRing(int64_t micro_steps, int64_t rows, int64_t seq, c10::Device device);
  ~BatchRing();
  BatchRing(const BatchRing&) = delete;
  BatchRing& operator=(const BatchRing&) = delete;

  // The rows of each micro-batch of the next step (contiguous CPU int64, at
  // most rows() each; a short one, an epoch's last, fills the slot's first
  // rows) into the free entry, and on its way to the device.
  void stage(const FeatureTensors& features, const std::vector<at::Tensor>& rows);
  bool staged() const { return staged_; }
  // The staged step's micro-batches, usable on the current stream (which
  // waits for their copy). The mask is left out where no row of a batch has
  // padding, as FeatureTensors::gather_to does. They stay valid until the
  // step after next is staged.
  std::vector<Batch> take();
  // Micro-batch k of the step take() returned, as its whole flat buffer
  // (laid out as StaticBatches' slots: train/batch.h's cut_fields), and how
  // many of its rows are real.
  const at::Tensor& taken_flat(int64_t k) const;
  int64_t taken_rows(int64_t k) const;
  int64_t rows() const { return rows_; }

 private:
  struct Slot {
    at::Tensor host, device;  // one tensor on a CPU
    Batch host_fields, device_fields;
    int64_t n = 0;
    bool padded = false;
  };
  struct Entry {
    std::vector<Slot> slots;
    std::unique_ptr<c10::Event> copied;  // accelerator: recorded on the copy stream
    std::unique_ptr<c10::Event> used;    // accelerator: the compute stream past the step that read it
  };

  c10::Device device_;
  int64_t rows_;
  std::optional<c10::Stream> copy_stream_;
  std::array<Entry, 2> entries_;
  int next_ = 0;    // the entry the next stage() fills
  int taken_ = -1;  // the entry take() last returned
  bool staged_ = false;
};

}  // namespace hpcbench::train
