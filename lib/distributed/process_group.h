#pragma once
// The job's communicator: c10d's TCPStore for the rendezvous and
// ProcessGroupGloo (CPU) or ProcessGroupNCCL (CUDA) for the collectives,
// behind a small interface in which every collective has a deadline and every
// failure names the collective and the rank.
//
// Waiting differs by backend, on purpose:
// - Gloo (CPU tensors): a wait blocks the host until the collective is done
//   or the timeout passes, then fails with a UserError.
// - NCCL (CUDA tensors): a wait only makes the current (compute) stream wait
//   for the collective's end event; the host runs on and queues more work.
//   c10d's WorkNCCL::wait(timeout) with a timeout would instead poll with
//   sleeps on the host, stalling every overlapped collective. Hangs are
//   caught by this Comm's HangMonitor (which names the collective) and, as a
//   backstop, by the process group's own watchdog and async error handling.
// A job of one rank runs no collective at all: the results are what one rank
// already holds, and a strategy at world size 1 measures its own overhead.
#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "distributed/comm_observer.h"
#include "distributed/launch_env.h"

namespace hpcbench::dist {

struct CommOptions {
  // How long one collective may take before the job is declared broken (a
  // dead or hung peer). Tests use a few seconds.
  std::chrono::milliseconds timeout{std::chrono::seconds(300)};
  // How long ranks wait for each other at the rendezvous.
  std::chrono::milliseconds connect_timeout{std::chrono::seconds(120)};
  // With one rank, collectives are skipped (see above). bench-comm turns this
  // off to time the backend's own single-rank path.
  bool elide_single_rank = true;
  // "auto" (NCCL for CUDA tensors, Gloo for CPU ones), "nccl" or "gloo".
  // Gloo also takes CUDA tensors (staging them through host memory), which
  // lets several ranks share one GPU, where NCCL refuses.
  std::string backend = "auto";
  // Ranks of one host may compute on the same GPU (Gloo only): the one-GPU
  // machine runs every multi-rank strategy's CUDA kernels this way.
  bool allow_shared_device = false;
};

// The backend `requested` resolves to on `device` ("nccl" or "gloo"); throws
// a UserError naming --backend / --allow-shared-gpu for combinations that
// cannot work.
std::string resolve_backend(const std::string& requested, const c10::Device& device, bool allow_shared_device);

// A collective in flight; Comm::wait finishes it. Holds no work when nothing
// had to run (one rank).
struct Pending {
  c10::intrusive_ptr<c10d::Work> work;
  size_t handle = 0;  // the observer's, when there is one
  // The observer that saw it issued, the only one told of its wait: the
  // loop switches observers between steps (a step timer each, run/loop.cpp).
  CommObserver* observer = nullptr;
  uint64_t watch = 0;  // the hang monitor's, when there is one
  uint64_t seq = 0;    // the collective's number on its communicator (1, 2, ...), the same on every rank
  std::string what;
  // A point-to-point message staged through host memory (p2p_stages_on_host):
  // the host copy the backend reads or fills, kept alive until the wait, and
  // for a receive the device tensor the wait copies it into.
  at::Tensor host;
  at::Tensor deliver_to;
};

// Whether a wait on `backend` ("gloo", "nccl") blocks the host or only orders
// the compute stream. Gloo blocks on any device: its CUDA path stages through
// host memory and its Work has no stream-ordered wait. Kept as a function so
// that a test can check the choice without a GPU.
enum class WaitMode { HostBlocking, StreamOrdered };
WaitMode wait_mode(const std::string& backend);

// Whether a point-to-point message of a `device` tensor goes through a host
// copy: Gloo's send and recv hand the tensor's pointer to the socket, so a CUDA
// tensor fails there ("writev: Bad address"); its collectives stage by
// themselves, its point to point does not. NCCL and host tensors go as they are.
bool p2p_stages_on_host(WaitMode mode, const c10::Device& device);

// Ranks on one host must not share an accelerator (NCCL refuses, with a
// "duplicate GPU" error that does not say what to change). `ids` holds each
// rank's "host/bus id"; throws a UserError naming the ranks and what to do.
void check_distinct_devices(const std::vector<std::string>& ids);

// The device this rank computes on: "auto", "cpu", "cuda" take the local
// rank's accelerator (or the one GPU a task was bound to; with
// `shared_device`, local rank modulo the visible GPUs) and make it current, so
// that no later call creates a context on another GPU.
c10::Device select_device(const std::string& spec, const RankLayout& layout, bool shared_device = false);

class HangMonitor;

// A CUDA graph capture of the training step is under way in this process
// (or no longer): collectives issued meanwhile are recorded into the graph,
// not run, so no Comm hands them to its hang monitor (whose queries are
// paused, HangMonitor::pause_all) or records an event behind their waits.
// Every rank captures the same step, so the collectives are issued
// identically on every rank (c10d's ProcessGroupNCCL captures them; it keeps
// works issued under capture out of its own watchdog).
void set_capturing(bool capturing);
bool capture_under_way();

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
  // The layout joined; a single process's free port is the one its store took.
  const RankLayout& layout() const { return layout_; }
  std::string backend_name() const;
  // Whether waits block the host (Gloo) or order the compute stream (NCCL).
  WaitMode wait_mode() const { return nccl_ ? WaitMode::StreamOrdered : WaitMode::HostBlocking; }
  std::chrono::milliseconds timeout() const { return options_.timeout; }

  // Sum (or mean when `average`) over ranks, in place.
  void allreduce(at::Tensor& tensor, bool average = false, std::string_view what = "all_reduce");
  // `out` (contiguous, size() * input.numel() elements) receives every rank's
  // input in rank order.
  void allgather(at::Tensor& out, const at::Tensor& input, std::string_view what = "all_gather");
  // Sums `input` (size() * out.numel() elements) over ranks; rank r keeps
  // chunk r in `out`.
  void reduce_scatter(at::Tensor& out, const at::Tensor& input, std::string_view what = "reduce_scatter");
  void broadcast(at::Tensor& tensor, int root = 0);
  void barrier();

  // Asynchronous all-reduce (sum), all-gather and reduce-scatter for
  // overlapping communication with computation; finish them with wait().
  // `what` names the collective in failure messages. The tensors must stay
  // alive and untouched until the wait; after it they may be freed or
  // reused by the compute stream (on NCCL the stream is then ordered after
  // the collective, so the caching allocator cannot hand their blocks to
  // anything that runs earlier).
  Pending allreduce_async(at::Tensor& tensor, std::string what = "all_reduce");
  Pending allgather_async(at::Tensor& out, const at::Tensor& input, std::string what = "all_gather");
  Pending reduce_scatter_async(at::Tensor& out, const at::Tensor& input, std::string what = "reduce_scatter");
  void wait(Pending& pending);

  // Point to point, for pipeline stages (p2p.cpp): `tensor` (contiguous,
  // untouched until the wait) goes to, or is filled from, rank `peer` of this
  // communicator. Messages between two ranks pair up in the order they were
  // issued for each `tag`. Timed and watched as the collectives are.
  Pending send_async(at::Tensor& tensor, int peer, int tag, std::string what);
  Pending recv_async(at::Tensor& tensor, int peer, int tag, std::string what);

  // Told of every collective this Comm and its subgroups issue (the step
  // timer); null to stop. Not owned.
  void set_observer(CommObserver* observer);

  // Every rank's `value` for `key`, in rank order, through the rendezvous
  // store (small metadata only: host names, device names). Collective: every
  // rank calls it in the same order; a key used again gets fresh store keys,
  // so no rank can read another's value from an earlier call.
  std::vector<std::string> exchange(const std::string& key, const std::string& value);

  c10d::Backend& backend() { return *backend_; }
  // The rendezvous store (stopping at a step boundary agrees through it).
  const c10::intrusive_ptr<c10d::Store>& store() const { return store_; }

  // A communicator over `members` (ranks of this one, in order, this rank
  // among them) for collectives inside a group: fsdp's hybrid sharding
  // shards over a node's ranks and all-reduces across nodes. Every member
  // calls it with the same `name` and `members`; groups with other members
  // need other names. Timeouts and failure messages are this one's, with the
  // group named.
  std::unique_ptr<Comm> subgroup(const std::string& name, const std::vector<int>& members);

 private:
  Comm() = default;
  // seq > 0: a collective, whose missing ranks are asked of the store.
  [[noreturn]] void failed(std::string_view what, std::chrono::steady_clock::time_point t0,
                           const std::string& reason, uint64_t seq = 0);
  // "rank 2 did not arrive: ..." for a failed collective (distributed/stall.h);
  // also tells the built-in launcher. "" when the store knows nothing.
  std::string missing_ranks(uint64_t seq, std::string_view what);
  std::string where() const;
  bool elided() const { return size_ == 1 && options_.elide_single_rank; }
  template <typename Issue>
  Pending issue(std::string what, Issue&& call);
  // issue() for callers in other files (p2p.cpp).
  Pending issue_call(std::string what, const std::function<c10::intrusive_ptr<c10d::Work>()>& call);
  c10::intrusive_ptr<c10d::Backend> make_backend(const c10::intrusive_ptr<c10d::Store>& store,
                                                 const RankLayout& layout);
  void start_monitor();
  // The rendezvous, in the constructor's order: the store opened (rank 0) or
  // reached, then every rank's arrival settled in it, both by `deadline`
  // (--connect-timeout) and ended by a stop signal through
  // stop_at_rendezvous, which says what the rank was waiting for.
  void connect_store(std::chrono::steady_clock::time_point deadline);
  void settle_rendezvous(std::chrono::steady_clock::time_point deadline);
  void stop_at_rendezvous(const std::string& waiting_for) const;

  int rank_ = 0;
  int size_ = 1;
  int global_rank_ = 0, global_size_ = 1;  // in the whole job (differs in subgroups)
  std::string group_;                       // "" for the whole job
  c10::Device device_{c10::kCPU};
  bool nccl_ = false;
  CommOptions options_;
  RankLayout layout_;
  c10::intrusive_ptr<c10d::Store> store_;
  c10::intrusive_ptr<c10d::Backend> backend_;
  bool broken_ = false;
  // Shared with subgroups, so that setting it on the job's Comm reaches them.
  std::shared_ptr<CommObserver*> observer_ = std::make_shared<CommObserver*>(nullptr);
  std::unique_ptr<HangMonitor> monitor_;  // NCCL only
  std::map<std::string, int64_t> exchanges_;  // calls of exchange() so far, by key
  uint64_t issued_ = 0;  // collectives issued so far
  std::vector<int> members_;  // a subgroup's ranks in the whole job (empty: the whole job)
};

}  // namespace hpcbench::dist
