#pragma once
// What `sweep` and `plan` check before they write a sweep: every job's
// `hpcbench run` line, dry-run by the binary the jobs run.
#include <vector>

#include "sweep/plan.h"

namespace hpcbench::cli {

// Throws UserError naming the jobs whose flags `run --dry-run` refuses;
// nothing is written or submitted then.
void check_run_flags(const sweep::SweepOptions& o, const std::vector<sweep::SweepJob>& jobs);

}  // namespace hpcbench::cli
