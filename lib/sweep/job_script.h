#pragma once
// The sbatch script of one sweep job. Self-contained (absolute paths, no
// reference back to the source tree) so that it can be resubmitted by hand.
#include <string>
#include <string_view>

#include "sweep/plan.h"

namespace hpcbench::sweep {

// `sweep_dir` is the absolute sweep folder the job's paths are resolved in.
std::string render_job_script(const SweepOptions& opts, const SweepJob& job,
                              const std::filesystem::path& sweep_dir);

// Quotes a word for bash when it needs it ("a b" -> 'a b').
std::string shell_quote(std::string_view word);

}  // namespace hpcbench::sweep
