#include "launch_flags.h"

#include "core/error.h"

namespace hpcbench::cli {

void LaunchFlags::check() const {
  if (!(connect_timeout_s > 0)) fail("--connect-timeout {}: must be positive", connect_timeout_s);
}

void add_launch_flags(CLI::App* sub, LaunchFlags& f) {
  sub->add_option("--nproc-per-node", f.nproc_per_node, "Start this many local ranks (built-in launcher)");
  sub->add_option("--nodes", f.nodes, "Expected number of nodes (checked against the job)");
  sub->add_option("--gpus-per-node", f.gpus_per_node, "Expected ranks (GPUs) per node (checked against the job)");
  sub->add_option("--connect-timeout", f.connect_timeout_s, "Seconds to wait for all ranks at the rendezvous")
      ->capture_default_str();
}

}  // namespace hpcbench::cli
