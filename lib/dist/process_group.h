#pragma once
// The job's communicator: c10d's TCPStore for the rendezvous and
// ProcessGroupGloo (CPU) or ProcessGroupNCCL (CUDA) for the collectives,
// behind a small interface in which every wait has a deadline and every
// failure is a UserError naming the collective and the rank.
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dist/launch_env.h"

namespace hpcbench::dist {

struct CommOptions {
  // How long one collective may take before the job is declared broken (a
  // dead or hung peer). Tests use a few seconds.
  std::chrono::milliseconds timeout{std::chrono::seconds(300)};
  // How long ranks wait for each other at the rendezvous.
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(120)};
};

// The device this rank computes on: "auto", "cpu", "cuda" take the local
// rank's accelerator (or the one GPU a task was bound to) and make it current.
c10::Device select_device(const std::string& spec, const RankLayout& layout);

class Comm {
 public:
  // Collective over all ranks of `layout`: returns once every rank has joined.
  Comm(const RankLayout& layout, c10::Device device, const CommOptions& options = {});
  ~Comm();
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  const c10::Device& device() const { return device_; }
  std::string backend_name() const;
  std::chrono::milliseconds timeout() const { return options_.timeout; }

  // Sum (or mean when `average`) over ranks, in place.
  void allreduce(at::Tensor& tensor, bool average = false);
  // `out` (contiguous, size() * input.numel() elements) receives every rank's
  // input in rank order.
  void allgather(at::Tensor& out, const at::Tensor& input);
  // Sums `input` (size() * out.numel() elements) over ranks; rank r keeps
  // chunk r in `out`.
  void reduce_scatter(at::Tensor& out, const at::Tensor& input);
  void broadcast(at::Tensor& tensor, int root = 0);
  void barrier();

  // Asynchronous all-reduce (sum) and all-gather for overlapping
  // communication with computation; finish them with wait(). The tensors
  // must stay alive and untouched until then.
  c10::intrusive_ptr<c10d::Work> allreduce_async(at::Tensor& tensor);
  c10::intrusive_ptr<c10d::Work> allgather_async(at::Tensor& out, const at::Tensor& input);
  c10::intrusive_ptr<c10d::Work> reduce_scatter_async(at::Tensor& out, const at::Tensor& input);
  void wait(const c10::intrusive_ptr<c10d::Work>& work, std::string_view what);

  // Every rank's `value` for `key`, in rank order, through the rendezvous
  // store (small metadata only: host names, device names).
  std::vector<std::string> exchange(const std::string& key, const std::string& value);

  c10d::Backend& backend() { return *backend_; }

  // A communicator over `members` (ranks of this one, in order, this rank
  // among them) for collectives inside a group: fsdp's hybrid sharding
  // shards over a node's ranks and all-reduces across nodes. Every member
  // calls it with the same `name` and `members`; groups with other members
  // need other names. Timeouts and failure messages are this one's, with the
  // group named.
  std::unique_ptr<Comm> subgroup(const std::string& name, const std::vector<int>& members);

 private:
  Comm() = default;
  [[noreturn]] void failed(std::string_view what, std::chrono::steady_clock::time_point t0,
                           const std::string& reason);

  int rank_ = 0;
  int size_ = 1;
  int global_rank_ = 0, global_size_ = 1;  // in the whole job (differs in subgroups)
  std::string group_;                       // "" for the whole job
  c10::Device device_{c10::kCPU};
  CommOptions options_;
  RankLayout layout_;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::Backend> backend_;
  bool broken_ = false;
};

}  // namespace hpcbench::dist
