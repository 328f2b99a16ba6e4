#include "distributed/process_group.h"

#include <ATen/DeviceAccelerator.h>
#include <c10/core/Event.h>
#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef HPCBENCH_DIST_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <spdlog/spdlog.h>

#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <thread>

#include "core/error.h"
#include "core/hostinfo.h"
#include "core/injection.h"
#include "core/split.h"
#include "core/stop_signal.h"
#include "device/device.h"
#include "distributed/hang_monitor.h"
#include "distributed/stall.h"
#include "monitor/nvtx.h"

namespace hpcbench::dist {

namespace {

using Clock = std::chrono::steady_clock;

// Whether a TCP connection to host:port is accepted within half a second.
bool port_accepts(const std::string& host, int port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &found) != 0) return false;
  bool ok = false;
  for (addrinfo* a = found; a && !ok; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
      ok = true;
    } else if (errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      int err = 0;
      socklen_t len = sizeof err;
      ok = ::poll(&p, 1, 500) == 1 && ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
    }
    ::close(fd);
  }
  ::freeaddrinfo(found);
  return ok;
}

double seconds(std::chrono::milliseconds ms) { return static_cast<double>(ms.count()) / 1000.0; }

std::string message_of(const std::exception& e) {
  if (auto c = dynamic_cast<const c10::Error*>(&e)) return c->what_without_backtrace();
  return e.what();
}

c10::intrusive_ptr<c10d::Backend> make_gloo(const c10::intrusive_ptr<c10d::Store>& store,
                                            const RankLayout& layout, const CommOptions& options) {
  auto opts = c10d::ProcessGroupGloo::Options::create(options.timeout);
  const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
  try {
    if (ifname && *ifname) {
      for (auto& name : split(ifname))
        if (!name.empty()) opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(name));
    } else if (layout.num_nodes == 1) {
      // All ranks on this host: loopback needs no interface name and cannot
      // pick a wrong network.
      opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    } else {
      opts->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    }
  } catch (const std::exception& e) {
    fail("Gloo could not open a network device{}: {} (set GLOO_SOCKET_IFNAME to the interface "
         "the nodes reach each other on)",
         ifname && *ifname ? fmt::format(" for GLOO_SOCKET_IFNAME={}", ifname) : "", message_of(e));
  }
  return c10::make_intrusive<c10d::ProcessGroupGloo>(store, layout.rank, layout.world_size, opts);
}

c10::intrusive_ptr<c10d::Backend> make_nccl(const c10::intrusive_ptr<c10d::Store>& store,
                                            const RankLayout& layout, const CommOptions& options) {
#ifdef HPCBENCH_DIST_NCCL
  // High priority: a collective's kernel is scheduled ahead of the compute
  // kernels queued beside it, so that a prefetch all-gather or a gradient
  // reduce-scatter does not wait for the backward's matmuls to drain (the
  // reason FSDP2 issues from high-priority streams; docs/gpu-validation.md).
  auto opts = c10d::ProcessGroupNCCL::Options::create(/*is_high_priority_stream=*/true);
  // The process group's watchdog is the backstop: Comm's HangMonitor, with
  // the timeout itself, fires first and names the collective by its purpose.
  opts->timeout = options.timeout + options.timeout / 10 + std::chrono::seconds(5);
  auto pg = c10::make_intrusive<c10d::ProcessGroupNCCL>(store, layout.rank, layout.world_size, opts);
  // Start and end events on the NCCL stream around every collective, so that
  // Work::getDuration() gives the time it took on the device.
  pg->enableCollectivesTiming();
  return pg;
#else
  fail("this hpcbench was built without NCCL (c10d ProcessGroupNCCL): run on --device cpu");
#endif
}

}  // namespace

WaitMode wait_mode(const std::string& backend) {
  return backend == "nccl" ? WaitMode::StreamOrdered : WaitMode::HostBlocking;
}

std::string resolve_backend(const std::string& requested, const c10::Device& device, bool allow_shared_device) {
  if (requested != "auto" && requested != "nccl" && requested != "gloo")
    fail("--backend {}: unknown (use auto, nccl or gloo)", requested);
  if (requested == "nccl" && !device.is_cuda())
    fail("--backend nccl needs CUDA devices, but this rank computes on {} (use --backend gloo, or --device cuda)",
         device.str());
  std::string backend = requested == "auto" ? (device.is_cuda() ? "nccl" : "gloo") : requested;
  if (allow_shared_device && backend == "nccl")
    fail("--allow-shared-gpu needs --backend gloo: NCCL refuses two ranks on one GPU (\"duplicate GPU\" at its "
         "first collective), while Gloo stages CUDA tensors through host memory and lets ranks share a GPU");
  return backend;
}

void check_distinct_devices(const std::vector<std::string>& ids) {
  std::map<std::string, int> first;
  for (int r = 0; r < static_cast<int>(ids.size()); ++r) {
    const auto& id = ids[size_t(r)];
    if (id.empty() || id.back() == '/') continue;  // the driver could not say
    auto [it, added] = first.emplace(id, r);
    if (!added)
      fail("ranks {} and {} would share the GPU {}: hpcbench runs one rank per GPU (NCCL refuses two on one "
           "device). Start at most as many ranks per node as it has GPUs (--nproc-per-node, --gpus-per-node); "
           "on a machine with one GPU run the strategy at world size 1 (--nproc-per-node 1), which measures "
           "its overhead against the baseline", it->second, r, id);
  }
}

c10::Device select_device(const std::string& spec, const RankLayout& layout, bool shared_device) {
  if (spec == "auto" || spec == "cuda") {
    int visible = accelerator_count();
    if (visible == 0) return resolve_device(spec, 0);  // CPU for auto, a clear error for cuda
    int index = device_index_for(layout, visible, one_visible_device_named(current_environment()), shared_device);
    if (index < 0)
      fail("rank {} (local rank {} of {}) sees {} accelerator(s): start at most one task per GPU "
           "(check --gpus-per-node and CUDA_VISIBLE_DEVICES)", layout.rank, layout.local_rank,
           layout.local_world_size, visible);
    auto device = resolve_device("cuda:" + std::to_string(index), 0);
    at::accelerator::setDeviceIndex(device.index());
    return device;
  }
  auto device = resolve_device(spec, layout.local_rank);
  if (!device.is_cpu()) at::accelerator::setDeviceIndex(device.index());
  return device;
}

void Comm::stop_at_rendezvous(const std::string& waiting_for) const {
  if (int sig = stop_signal())
    throw Interrupted(sig, fmt::format("rank {} of {}: interrupted by {} while waiting at the rendezvous ({}:{}) {}; "
                                       "nothing was measured", rank_, size_, signal_name(sig), layout_.master_addr,
                                       layout_.master_port, waiting_for));
}

void Comm::connect_store(Clock::time_point deadline) {
  const auto& layout = layout_;
  const auto& options = options_;
  c10d::TCPStoreOptions so;
  so.port = static_cast<std::uint16_t>(layout.master_port);
  so.isServer = layout.rank == 0;
  so.numWorkers = static_cast<size_t>(layout.world_size);
  // The store's own wait for the workers blocks, deaf to signals, until
  // --connect-timeout: connecting in short tries and the arrival (settle_rendezvous) poll
  // instead, so that SIGTERM/SIGINT (a time limit, scancel, Ctrl-C) end the
  // wait at once and say what it waited for.
  so.waitWorkers = false;
  // A worker first waits for rank 0's port to accept, in short polls of its
  // own: the store's connect would retry deaf to signals (and log a stack
  // trace each try).
  while (rank_ != 0 && !port_accepts(layout.master_addr, static_cast<int>(layout.master_port))) {
    stop_at_rendezvous("for rank 0's store");
    if (Clock::now() >= deadline)
      fail("rank {} of {} could not reach the rendezvous store at {}:{} within {:.0f} s (check MASTER_ADDR/"
           "MASTER_PORT and that rank 0 started)", rank_, size_, layout.master_addr, layout.master_port,
           seconds(options.connect_timeout));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  so.timeout = std::max(std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()),
                        std::chrono::milliseconds(1000));
  try {
    auto tcp = c10::make_intrusive<c10d::TCPStore>(layout.master_addr, so);
    if (layout_.master_port == 0) layout_.master_port = tcp->getPort();  // the free port it took
    store_ = std::move(tcp);
  } catch (const std::exception& e) {
    stop_at_rendezvous("for rank 0's store");
    fail("rank {} of {} could not {} the rendezvous store at {}:{} within {:.0f} s: {} (check "
         "MASTER_ADDR/MASTER_PORT and that every rank started)",
         rank_, size_, rank_ == 0 ? "open" : "reach", layout.master_addr, layout.master_port,
         seconds(options.connect_timeout), message_of(e));
  }
}

void Comm::settle_rendezvous(Clock::time_point deadline) {
  const auto& layout = layout_;
  const auto& options = options_;
  // Every rank says it is here, then the job settles once, in the store,
  // whether it goes on ("go": every rank arrived) or stops ("stop": a stop
  // signal came while one was missing): no rank may stop here while another
  // has gone on into the backend's setup, which would then fail instead of
  // being interrupted. A stop after "go" is the step loop's, as any other.
  const std::string arrived = "hpcbench/rendezvous/arrived", outcome = "hpcbench/rendezvous/outcome";
  auto missing_ranks = [&] {
    std::string out;
    for (int64_t r = 0; r < size_; ++r)
      if (!store_->check({arrived + "/" + std::to_string(r)}))
        out += (out.empty() ? "" : ", ") + std::to_string(r);
    return out;
  };
  auto settle = [&](const char* mine) {
    auto v = store_->compareSet(outcome, {}, std::vector<uint8_t>(mine, mine + std::strlen(mine)));
    return std::string(v.begin(), v.end());
  };
  std::string decided, missing;
  try {
    store_->set(arrived + "/" + std::to_string(rank_), std::vector<uint8_t>{1});
    store_->add(arrived, 1);
    for (;;) {
      if (store_->check({outcome})) {
        auto v = store_->get(outcome);
        decided.assign(v.begin(), v.end());
      } else if (store_->add(arrived, 0) >= size_) {
        decided = settle("go");
      } else if (stop_signal()) {
        missing = missing_ranks();
        decided = settle("stop");
      }
      if (!decided.empty()) break;
      if (Clock::now() >= deadline)
        fail("rank {} of {}: rank(s) {} did not arrive at the rendezvous ({}:{}) within {:.0f} s (--connect-timeout; "
             "check that every rank started and reaches MASTER_ADDR)", rank_, size_, missing_ranks(),
             layout.master_addr, layout.master_port, seconds(options.connect_timeout));
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  } catch (const UserError&) {
    throw;
  } catch (const std::exception& e) {
    stop_at_rendezvous("for the other ranks");
    fail("rank {} of {}: the rendezvous store at {}:{} went away while the ranks gathered: {} (rank 0 ended?)", rank_,
         size_, layout.master_addr, layout.master_port, message_of(e));
  }
  if (decided == "stop") {
    if (!stop_signal()) note_stop(SIGTERM);  // another rank's request: stopped like it
    stop_at_rendezvous(missing.empty() ? std::string("(another rank was asked to stop there)")
                            : fmt::format("for rank(s) {}", missing));
  }
}

Comm::Comm(const RankLayout& layout, c10::Device device, const CommOptions& options)
    : rank_(layout.rank), size_(layout.world_size), global_rank_(layout.rank), global_size_(layout.world_size),
      device_(device), options_(options), layout_(layout) {
  const auto deadline = Clock::now() + options.connect_timeout;
  connect_store(deadline);
  settle_rendezvous(deadline);
  // Later lookups (exchange) may wait as long as a collective.
  store_->setTimeout(options.timeout);
  nccl_ = resolve_backend(options.backend, device, options.allow_shared_device) == "nccl";
  if (!device.is_cpu() && size_ > 1 && !options.allow_shared_device) {
    auto ids = exchange("device", hostname() + "/" + device_identity(device));
    check_distinct_devices(ids);
  }
  backend_ = make_backend(c10::make_intrusive<c10d::PrefixStore>("hpcbench/pg", store_), layout_);
  start_monitor();
}

c10::intrusive_ptr<c10d::Backend> Comm::make_backend(const c10::intrusive_ptr<c10d::Store>& store,
                                                     const RankLayout& layout) {
  c10::intrusive_ptr<c10d::Backend> b;
  try {
    b = nccl_ ? make_nccl(store, layout, options_) : make_gloo(store, layout, options_);
    // Bound to its device at once, as init_process_group(device_id=...) does:
    // NCCL then neither guesses a device (rank % device count) for a barrier
    // before the first collective nor creates a context on another GPU.
    if (device_.is_cuda()) b->setBoundDeviceId(device_);
  } catch (const UserError&) {
    throw;
  } catch (const std::exception& e) {
    failed(fmt::format("setting up the {} process group", nccl_ ? "NCCL" : "Gloo"), Clock::now(), message_of(e));
  }
  return b;
}

void Comm::start_monitor() {
  if (wait_mode() != WaitMode::StreamOrdered || elided()) return;
  std::string where = this->where();
  auto timeout = options_.timeout;
  monitor_ = std::make_unique<HangMonitor>(timeout, [this, where, timeout](const std::string& what, double secs) {
    // The issuing thread may sit in a device synchronisation that never
    // returns: report from here and end the process, as a failed wait does.
    // The monitor knows the collective by name, not by number: every rank
    // that posts counts as waiting.
    std::string missing = missing_ranks(0, what);
    spdlog::error("{} failed on {} after {:.1f} s (collective timeout {:.0f} s): it has not finished on the "
                  "device; {}",
                  what, where, secs, seconds(timeout),
                  missing.empty() ? "another rank probably died or hangs" : missing);
    std::fflush(nullptr);
    std::_Exit(1);
  });
}

namespace {
// The injected abort_throws=1 (core/injection.h) makes the abort of a broken
// backend throw, as ProcessGroupNCCL's may (a communicator that cannot be
// aborted within the group's timeout), so that CPU runs exercise that path.
void abort_backend(c10d::Backend& backend) {
  if (injected("abort_throws") == "1")
    throw std::runtime_error(fmt::format("{} abort_throws=1: the backend's abort failed", kInjectVariable));
  backend.abort();
}

// Logs what the exception being handled says; throws nothing, as it runs in
// a destructor.
void warn_current(const std::string& where, const char* doing) noexcept {
  try {
    std::string what;
    try {
      throw;
    } catch (const std::exception& e) {
      what = message_of(e);
    } catch (...) {
      what = "an exception that is not a std::exception";
    }
    spdlog::warn("{}: {}: {}", where, doing, what);
  } catch (...) {
  }
}
}  // namespace

// Never throws: a Comm is often destroyed while the job's first error
// unwinds the stack, and an exception leaving a destructor then ends in
// std::terminate, which hides that error. Whatever fails here is only
// logged, as the lesser news.
Comm::~Comm() {
  std::string here;
  try {
    here = where();
    monitor_.reset();
  } catch (...) {
    warn_current(here, "stopping the hang monitor");
  }
  // A backend whose collective failed may still have a worker blocked on a
  // dead peer; destroying it would join that thread and hang the exit that
  // is meant to report the failure. The process is ending anyway. (Gloo's
  // abort does nothing.)
  if (broken_) {
    if (backend_) {
      try {
        abort_backend(*backend_);
      } catch (...) {
        // The collective's own failure, which broke it, is the job's error.
        warn_current(here, "aborting the process group after a failed collective");
      }
    }
    (void)backend_.release();
    (void)store_.release();
    return;
  }
  // ProcessGroupNCCL warns when destroyed without a shutdown, and only a
  // shutdown waits for its watchdog to finish cleanly. Gloo's is a no-op.
  if (backend_) {
    try {
      backend_->shutdown();
    } catch (...) {
      warn_current(here, "shutting down the process group");
    }
  }
}

namespace {
std::atomic<bool> g_capturing{false};
}  // namespace

void set_capturing(bool capturing) {
  // Paused before the capture starts, resumed after it ended.
  if (capturing) HangMonitor::pause_all(true);
  g_capturing = capturing;
  if (!capturing) HangMonitor::pause_all(false);
}

bool capture_under_way() { return g_capturing.load(); }

void Comm::set_observer(CommObserver* observer) { *observer_ = observer; }

std::string Comm::backend_name() const { return backend_->getBackendName(); }

std::string Comm::where() const {
  return group_.empty() ? fmt::format("rank {} of {}", rank_, size_)
                        : fmt::format("rank {} of {} (rank {} of {} in group {})", global_rank_, global_size_,
                                      rank_, size_, group_);
}

void Comm::failed(std::string_view what, Clock::time_point t0, const std::string& reason, uint64_t seq) {
  broken_ = true;
  double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  std::string missing = seq > 0 ? missing_ranks(seq, what) : "";
  fail("{} failed on {} after {:.1f} s (collective timeout {:.0f} s): {}; {}", what, where(), elapsed,
       seconds(options_.timeout), reason, missing.empty() ? "another rank probably died or hangs" : missing);
}

std::string Comm::missing_ranks(uint64_t seq, std::string_view what) {
  if (size_ <= 1 || !store_) return "";
  // Long enough for every rank that waited at the same collective to time
  // out too (they began waiting within a step of each other), short against
  // the timeout that already passed.
  auto window = std::clamp<std::chrono::milliseconds>(options_.timeout / 2, std::chrono::seconds(1),
                                                      std::chrono::seconds(10));
  auto report = find_stalled(*store_, "hpcbench/stalled/", rank_, size_, seq, std::string(what), window);
  std::vector<int> global = members_;
  if (global.empty())
    for (int r = 0; r < size_; ++r) global.push_back(r);
  std::vector<int> silent;
  for (int r : report.silent) silent.push_back(global[size_t(r)]);
  if (report.store_unreachable) silent = {global[0]};
  tell_launcher(global_rank_, silent);
  return describe(report, global, window);
}

std::unique_ptr<Comm> Comm::subgroup(const std::string& name, const std::vector<int>& members) {
  auto me = std::find(members.begin(), members.end(), rank_);
  if (me == members.end()) fail("internal: rank {} creates group {} without being a member", rank_, name);
  for (int m : members)
    if (m < 0 || m >= size_) fail("internal: group {} names rank {} of a job of {}", name, m, size_);
  std::unique_ptr<Comm> g(new Comm());
  g->rank_ = static_cast<int>(me - members.begin());
  g->size_ = static_cast<int>(members.size());
  g->global_rank_ = global_rank_;
  g->global_size_ = global_size_;
  g->group_ = group_.empty() ? name : group_ + "/" + name;
  g->device_ = device_;
  g->nccl_ = nccl_;
  g->options_ = options_;
  g->layout_ = layout_;
  g->layout_.rank = g->rank_;
  g->layout_.world_size = g->size_;
  g->observer_ = observer_;
  for (int m : members) g->members_.push_back(members_.empty() ? m : members_[size_t(m)]);
  g->store_ = c10::make_intrusive<c10d::PrefixStore>("hpcbench/group/" + g->group_, store_);
  g->backend_ = g->make_backend(c10::make_intrusive<c10d::PrefixStore>("pg", g->store_), g->layout_);
  g->start_monitor();
  return g;
}

namespace {
std::string message_of_current() {
  try {
    throw;
  } catch (const std::exception& e) {
    return message_of(e);
  }
}
}  // namespace

// Errors raised while enqueuing become the same failure as errors raised
// while waiting; the observer and the monitor see every collective issued.
template <typename Issue>
Pending Comm::issue(std::string what, Issue&& call) {
  Pending p;
  p.what = std::move(what);
  CommObserver* obs = *observer_;
  if (obs) {
    p.handle = obs->issuing(backend_.get());
    p.observer = obs;
  }
  p.seq = ++issued_;
  const bool watched = monitor_ && !capture_under_way();
  p.watch = watched ? monitor_->watch(p.what) : 0;
  auto t0 = Clock::now();
  try {
    monitor::nvtx::Scope range(!device_.is_cpu(), p.what.c_str());
    p.work = call();
  } catch (...) {
    failed(p.what, t0, message_of_current(), p.seq);
  }
  if (!p.work) failed(p.what, t0, "the backend returned no work", p.seq);
  if (watched) monitor_->attach(p.watch, p.work);
  if (obs) obs->issued(p.handle, p.work);
  return p;
}

Pending Comm::issue_call(std::string what, const std::function<c10::intrusive_ptr<c10d::Work>()>& call) {
  return issue(std::move(what), call);
}

void Comm::wait(Pending& p) {
  if (!p.work) return;  // nothing ran
  // Only the observer that saw the issue, while it still observes (a wait
  // in a later step, or after the loop, is not that step's to time).
  CommObserver* obs = p.observer == *observer_ ? p.observer : nullptr;
  if (obs) obs->waiting(p.handle);
  auto t0 = Clock::now();
  const std::string range_name = device_.is_cpu() ? std::string() : "wait " + p.what;
  monitor::nvtx::Scope range(!device_.is_cpu(), range_name.c_str());
  try {
    if (wait_mode() == WaitMode::HostBlocking) {
      p.work->wait(options_.timeout);  // Gloo: the host blocks, with the deadline
    } else {
      p.work->wait();  // NCCL: the compute stream waits; the host does not
      // Done once the compute stream has passed its wait: the monitor lets
      // go of the work (and its tensors) now, as the caller does.
      if (monitor_ && !capture_under_way())
        monitor_->settle_after(p.watch, at::accelerator::getCurrentStream(device_.index()));
    }
  } catch (const std::exception& e) {
    failed(p.what, t0, message_of(e), p.seq);
  }
  if (obs) obs->waited(p.handle);
  p.work.reset();
  // A host-staged receive is complete now (Gloo's wait blocks the host).
  if (p.deliver_to.defined()) p.deliver_to.copy_(p.host);
  p.host.reset();
  p.deliver_to.reset();
}

Pending Comm::allreduce_async(at::Tensor& tensor, std::string what) {
  if (elided()) return {};
  std::vector<at::Tensor> ts{tensor};
  return issue(std::move(what), [&] { return backend_->allreduce(ts); });
}

void Comm::allreduce(at::Tensor& tensor, bool average, std::string_view what) {
  auto p = allreduce_async(tensor, std::string(what));
  wait(p);
  if (average && size_ > 1) tensor.div_(size_);
}

Pending Comm::allgather_async(at::Tensor& out, const at::Tensor& input, std::string what) {
  if (out.numel() != input.numel() * size_)
    fail("{}: output has {} elements, expected {} x {}", what, out.numel(), size_, input.numel());
  if (elided()) {
    if (!out.is_same(input)) out.view(input.sizes()).copy_(input);
    return {};
  }
  at::Tensor in = input;
  return issue(std::move(what), [&] { return backend_->_allgather_base(out, in); });
}

void Comm::allgather(at::Tensor& out, const at::Tensor& input, std::string_view what) {
  auto p = allgather_async(out, input, std::string(what));
  wait(p);
}

Pending Comm::reduce_scatter_async(at::Tensor& out, const at::Tensor& input, std::string what) {
  if (input.numel() != out.numel() * size_)
    fail("{}: input has {} elements, expected {} x {}", what, input.numel(), size_, out.numel());
  if (elided()) {
    if (!out.is_same(input)) out.copy_(input.view(out.sizes()));
    return {};
  }
  at::Tensor in = input;
  return issue(std::move(what), [&] { return backend_->_reduce_scatter_base(out, in); });
}

void Comm::reduce_scatter(at::Tensor& out, const at::Tensor& input, std::string_view what) {
  auto p = reduce_scatter_async(out, input, std::string(what));
  wait(p);
}

void Comm::broadcast(at::Tensor& tensor, int root) {
  if (elided()) return;
  std::vector<at::Tensor> ts{tensor};
  c10d::BroadcastOptions opts;
  opts.rootRank = root;
  auto p = issue("broadcast", [&] { return backend_->broadcast(ts, opts); });
  wait(p);
}

void Comm::barrier() {
  if (elided()) return;
  auto p = issue("barrier", [&] { return backend_->barrier(); });
  wait(p);
  // c10d's NCCL barrier is an all-reduce ordered on the current stream; a
  // barrier is meant for the host.
  if (nccl_) synchronize(device_);
}

std::vector<std::string> Comm::exchange(const std::string& key, const std::string& value) {
  std::string prefix = fmt::format("hpcbench/exchange/{}/{}/", key, exchanges_[key]++);
  auto t0 = Clock::now();
  std::vector<std::string> out;
  try {
    store_->set(prefix + std::to_string(rank_), value);
    for (int r = 0; r < size_; ++r) {
      auto bytes = store_->get(prefix + std::to_string(r));
      out.emplace_back(bytes.begin(), bytes.end());
    }
  } catch (const std::exception& e) {
    failed(fmt::format("exchanging '{}' through the store", key), t0, message_of(e));
  }
  return out;
}

}  // namespace hpcbench::dist
