#pragma once
// sbatch --time, read as SLURM reads it, so that a limit sbatch would refuse
// fails the sweep before any job is written, and so that the signal asked
// for ahead of the limit (--signal) fits inside it.
#include <cstdint>
#include <optional>
#include <string>

namespace hpcbench::sweep {

// Seconds of a --time value: "minutes", "minutes:seconds",
// "hours:minutes:seconds", "days-hours", "days-hours:minutes",
// "days-hours:minutes:seconds"; nullopt for no limit ("0", "UNLIMITED",
// "INFINITE", or none given). Throws UserError naming --time otherwise.
std::optional<int64_t> parse_slurm_time(const std::string& text);

// Seconds before the limit that SLURM signals the job steps (--signal), so
// that the ranks stop at a step boundary and write what they measured: 120,
// or a quarter of a shorter limit (a signal time beyond the limit would be
// sent at once).
int64_t stop_signal_margin_s(const std::string& time);

}  // namespace hpcbench::sweep
