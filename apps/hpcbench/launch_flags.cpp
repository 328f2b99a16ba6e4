#include "launch_flags.h"

#include <cerrno>
#include <cstdlib>

#include "core/error.h"

namespace hpcbench::cli {

void LaunchFlags::check() const {
  if (!(connect_timeout_s > 0)) fail("--connect-timeout {}: must be positive", connect_timeout_s);
}

namespace {

// A count given on the command line is at least 1: 0 or less is what "not
// given" looks like inside, and would silently run (or check) one process.
const CLI::Validator kAtLeastOne(
    [](std::string& text) -> std::string {
      char* end = nullptr;
      errno = 0;
      const long v = std::strtol(text.c_str(), &end, 10);
      if (text.empty() || *end != '\0' || errno == ERANGE || v < 1)
        return "'" + text + "' must be a whole number of at least 1";
      return "";
    },
    "INT>=1");

}  // namespace

void add_launch_flags(CLI::App* sub, LaunchFlags& f) {
  sub->add_option("--nproc-per-node", f.nproc_per_node, "Start this many local ranks (built-in launcher)")
      ->check(kAtLeastOne);
  sub->add_option("--nodes", f.nodes, "Expected number of nodes (checked against the job)")->check(kAtLeastOne);
  sub->add_option("--gpus-per-node", f.gpus_per_node, "Expected ranks (GPUs) per node (checked against the job)")
      ->check(kAtLeastOne);
  sub->add_option("--connect-timeout", f.connect_timeout_s, "Seconds to wait for all ranks at the rendezvous")
      ->capture_default_str();
}

}  // namespace hpcbench::cli
