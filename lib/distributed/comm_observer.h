#pragma once
// What a Comm tells whoever times a step (train::StepTimer): where each
// collective was issued and where computation waited for one. The observer
// decides how to time them (events on the device's current stream, or host
// clocks on CPU); the Comm only says where. Calls may come from autograd's
// threads (the strategies' gradient hooks), so implementations lock.
#include <c10/util/intrusive_ptr.h>
#include <torch/csrc/distributed/c10d/Work.hpp>

#include <cstddef>

namespace hpcbench::dist {

class CommObserver {
 public:
  virtual ~CommObserver() = default;
  // Just before a collective is enqueued on `queue` (one per process group:
  // collectives of one group run one after another on its stream). Returns
  // a handle for issued().
  virtual size_t issuing(const void* queue) = 0;
  // The collective is enqueued; `work` completes when it has run.
  virtual void issued(size_t handle, const c10::intrusive_ptr<c10d::Work>& work) = 0;
  // Around the point where computation waits for the collective `handle`.
  virtual void waiting(size_t handle) = 0;
  virtual void waited(size_t handle) = 0;
};

}  // namespace hpcbench::dist
