#include "run/fault_hook.h"

#include "core/injection.h"

namespace hpcbench::run {

std::function<void(int64_t)> fault_hook(int rank) {
  auto fault = injected_fault({"kill", "abort", "exit", "hang", "stop", "term"});
  if (!fault || fault->rank != rank) return {};
  return [f = *fault, fired = false](int64_t step) mutable {
    if (step < f.after || fired) return;
    fired = true;
    carry_out(f, "steps");
  };
}

}  // namespace hpcbench::run
