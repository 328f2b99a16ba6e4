#include "dist/process_group.h"

#include <ATen/DeviceAccelerator.h>
#include <c10/util/Exception.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#ifdef HPCBENCH_DIST_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <algorithm>
#include <cstdlib>

#include "core/error.h"
#include "device/device.h"

namespace hpcbench::dist {

namespace {

using Clock = std::chrono::steady_clock;

double seconds(std::chrono::milliseconds ms) { return static_cast<double>(ms.count()) / 1000.0; }

std::string message_of(const std::exception& e) {
  if (auto c = dynamic_cast<const c10::Error*>(&e)) return c->what_without_backtrace();
  return e.what();
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    if (comma > pos) out.push_back(s.substr(pos, comma - pos));
    pos = comma + 1;
  }
  return out;
}

c10::intrusive_ptr<c10d::Backend> make_gloo(const c10::intrusive_ptr<c10d::Store>& store,
                                            const RankLayout& layout, const CommOptions& options) {
  auto opts = c10d::ProcessGroupGloo::Options::create(options.timeout);
  const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
  try {
    if (ifname && *ifname) {
      for (auto& name : split_commas(ifname))
        opts->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(name));
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
  auto opts = c10d::ProcessGroupNCCL::Options::create();
  opts->timeout = options.timeout;
  return c10::make_intrusive<c10d::ProcessGroupNCCL>(store, layout.rank, layout.world_size, opts);
#else
  fail("this hpcbench was built without NCCL (c10d ProcessGroupNCCL): run on --device cpu");
#endif
}

}  // namespace

c10::Device select_device(const std::string& spec, const RankLayout& layout) {
  if (spec == "auto" || spec == "cuda") {
    int visible = accelerator_count();
    if (visible == 0) return resolve_device(spec, 0);  // CPU for auto, a clear error for cuda
    int index = device_index_for(layout, visible);
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

Comm::Comm(const RankLayout& layout, c10::Device device, const CommOptions& options)
    : rank_(layout.rank), size_(layout.world_size), global_rank_(layout.rank), global_size_(layout.world_size),
      device_(device), options_(options), layout_(layout) {
  c10d::TCPStoreOptions so;
  so.port = static_cast<std::uint16_t>(layout.master_port);
  so.isServer = layout.rank == 0;
  so.numWorkers = static_cast<size_t>(layout.world_size);
  so.waitWorkers = true;
  so.timeout = options.connect_timeout;
  try {
    store_ = c10::make_intrusive<c10d::TCPStore>(layout.master_addr, so);
  } catch (const std::exception& e) {
    fail("rank {} of {} could not {} the rendezvous store at {}:{} within {:.0f} s: {} (check "
         "MASTER_ADDR/MASTER_PORT and that every rank started)",
         rank_, size_, rank_ == 0 ? "open" : "reach", layout.master_addr, layout.master_port,
         seconds(options.connect_timeout), message_of(e));
  }
  // Later lookups (exchange) may wait as long as a collective.
  store_->setTimeout(options.timeout);
  auto pg_store = c10::make_intrusive<c10d::PrefixStore>("hpcbench/pg", store_);
  try {
    backend_ = device.is_cpu() ? make_gloo(pg_store, layout, options) : make_nccl(pg_store, layout, options);
  } catch (const UserError&) {
    throw;
  } catch (const std::exception& e) {
    fail("rank {} of {} could not set up the {} process group: {}", rank_, size_,
         device.is_cpu() ? "Gloo" : "NCCL", message_of(e));
  }
}

Comm::~Comm() {
  // A backend whose collective failed may still have a worker blocked on a
  // dead peer; destroying it would join that thread and hang the exit that
  // is meant to report the failure. The process is ending anyway.
  if (broken_) {
    (void)backend_.release();
    (void)store_.release();
  }
}

std::string Comm::backend_name() const { return backend_->getBackendName(); }

void Comm::failed(std::string_view what, Clock::time_point t0, const std::string& reason) {
  broken_ = true;
  double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  std::string where = group_.empty() ? fmt::format("rank {} of {}", rank_, size_)
                                     : fmt::format("rank {} of {} (rank {} of {} in group {})", global_rank_,
                                                   global_size_, rank_, size_, group_);
  fail("{} failed on {} after {:.1f} s (collective timeout {:.0f} s): {}; another rank probably died or hangs",
       what, where, elapsed, seconds(options_.timeout), reason);
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
  g->options_ = options_;
  g->layout_ = layout_;
  g->layout_.rank = g->rank_;
  g->layout_.world_size = g->size_;
  g->store_ = c10::make_intrusive<c10d::PrefixStore>("hpcbench/group/" + g->group_, store_);
  auto pg_store = c10::make_intrusive<c10d::PrefixStore>("pg", g->store_);
  try {
    g->backend_ = device_.is_cpu() ? make_gloo(pg_store, g->layout_, options_) : make_nccl(pg_store, g->layout_, options_);
  } catch (const UserError&) {
    throw;
  } catch (const std::exception& e) {
    g->failed(fmt::format("setting up the {} process group", device_.is_cpu() ? "Gloo" : "NCCL"),
              Clock::now(), message_of(e));
  }
  return g;
}

void Comm::wait(const c10::intrusive_ptr<c10d::Work>& work, std::string_view what) {
  auto t0 = Clock::now();
  try {
    work->wait(options_.timeout);
  } catch (const std::exception& e) {
    failed(what, t0, message_of(e));
  }
}

namespace {
// Issues a c10d call, turning errors raised while enqueuing into the same
// UserError as errors raised while waiting.
template <typename F>
c10::intrusive_ptr<c10d::Work> issue(F&& f, std::string& error) {
  try {
    return f();
  } catch (const std::exception& e) {
    error = message_of(e);
    return {};
  }
}
}  // namespace

c10::intrusive_ptr<c10d::Work> Comm::allreduce_async(at::Tensor& tensor) {
  std::string error;
  std::vector<at::Tensor> ts{tensor};
  auto work = issue([&] { return backend_->allreduce(ts); }, error);
  if (!work) failed("all_reduce", Clock::now(), error);
  return work;
}

void Comm::allreduce(at::Tensor& tensor, bool average) {
  wait(allreduce_async(tensor), "all_reduce");
  if (average) tensor.div_(size_);
}

c10::intrusive_ptr<c10d::Work> Comm::allgather_async(at::Tensor& out, const at::Tensor& input) {
  if (out.numel() != input.numel() * size_)
    fail("all_gather: output has {} elements, expected {} x {}", out.numel(), size_, input.numel());
  std::string error;
  at::Tensor in = input;
  auto work = issue([&] { return backend_->_allgather_base(out, in); }, error);
  if (!work) failed("all_gather", Clock::now(), error);
  return work;
}

void Comm::allgather(at::Tensor& out, const at::Tensor& input) { wait(allgather_async(out, input), "all_gather"); }

c10::intrusive_ptr<c10d::Work> Comm::reduce_scatter_async(at::Tensor& out, const at::Tensor& input) {
  if (input.numel() != out.numel() * size_)
    fail("reduce_scatter: input has {} elements, expected {} x {}", input.numel(), size_, out.numel());
  std::string error;
  at::Tensor in = input;
  auto work = issue([&] { return backend_->_reduce_scatter_base(out, in); }, error);
  if (!work) failed("reduce_scatter", Clock::now(), error);
  return work;
}

void Comm::reduce_scatter(at::Tensor& out, const at::Tensor& input) {
  wait(reduce_scatter_async(out, input), "reduce_scatter");
}

void Comm::broadcast(at::Tensor& tensor, int root) {
  std::string error;
  std::vector<at::Tensor> ts{tensor};
  c10d::BroadcastOptions opts;
  opts.rootRank = root;
  auto work = issue([&] { return backend_->broadcast(ts, opts); }, error);
  if (!work) failed("broadcast", Clock::now(), error);
  wait(work, "broadcast");
}

void Comm::barrier() {
  std::string error;
  auto work = issue([&] { return backend_->barrier(); }, error);
  if (!work) failed("barrier", Clock::now(), error);
  wait(work, "barrier");
}

std::vector<std::string> Comm::exchange(const std::string& key, const std::string& value) {
  std::string prefix = "hpcbench/exchange/" + key + "/";
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
