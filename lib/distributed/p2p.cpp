// Point-to-point sends and receives between two ranks of a Comm: what
// pipeline stages exchange (activations forward, their gradients backward).
// They go through the same issue/wait path as the collectives, so that the
// step timer counts them in comm_ms and comm_exposed_ms and the hang monitor
// names them.
#include "distributed/process_group.h"

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include "core/error.h"

namespace hpcbench::dist {

namespace {

void check_peer(const Comm& comm, int peer, const at::Tensor& tensor, const std::string& what) {
  if (peer < 0 || peer >= comm.size() || peer == comm.rank())
    fail("internal: {} on rank {} of {} names peer {}", what, comm.rank(), comm.size(), peer);
  // c10d's backends send a tensor's storage as it lies: a view with gaps
  // would send other elements than the ones it shows.
  if (!tensor.is_contiguous()) fail("internal: {} needs a contiguous tensor", what);
}

}  // namespace

bool p2p_stages_on_host(WaitMode mode, const c10::Device& device) {
  return mode == WaitMode::HostBlocking && !device.is_cpu();
}

Pending Comm::send_async(at::Tensor& tensor, int peer, int tag, std::string what) {
  check_peer(*this, peer, tensor, what);
  // The copy to the host waits for the kernels that wrote `tensor`, so the
  // message holds what the stream computed.
  at::Tensor host = p2p_stages_on_host(wait_mode(), tensor.device()) ? tensor.to(at::kCPU) : at::Tensor();
  std::vector<at::Tensor> ts{host.defined() ? host : tensor};
  auto p = issue_call(std::move(what), [&] { return backend_->send(ts, peer, tag); });
  p.host = std::move(host);
  return p;
}

Pending Comm::recv_async(at::Tensor& tensor, int peer, int tag, std::string what) {
  check_peer(*this, peer, tensor, what);
  at::Tensor host = p2p_stages_on_host(wait_mode(), tensor.device())
                        ? at::empty(tensor.sizes(), tensor.options().device(at::kCPU))
                        : at::Tensor();
  std::vector<at::Tensor> ts{host.defined() ? host : tensor};
  auto p = issue_call(std::move(what), [&] { return backend_->recv(ts, peer, tag); });
  if (host.defined()) {
    p.host = std::move(host);
    p.deliver_to = tensor;
  }
  return p;
}

}  // namespace hpcbench::dist
