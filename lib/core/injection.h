#pragma once
// Faults and stand-in facts put into a run from outside, so that the paths
// that handle them can be exercised where they cannot be provoked: a rank
// that dies, hangs or is slowed at a chosen point, a backend whose abort
// fails, a node's memory, GPU bus ids on a machine without GPUs. One
// variable carries them all, and this is the one place that reads it:
//
//   HPCBENCH_INJECT="<key>=<value>[;<key>=<value>...]"
//
//   fault=<rank>:<after>:<mode>  that rank fails after <after> optimizer steps
//                                (run) or timed collectives (bench-comm):
//                                kill (SIGKILL), abort, exit (status 3), hang,
//                                stop (SIGSTOP: it stays in the process table
//                                and never arrives again), term (run only:
//                                SIGTERM once, at a point a signal from outside
//                                cannot be timed to)
//   slow_rank=<rank>:<ms>        that rank sleeps <ms> ms in each step's forward
//                                phase, as a busy neighbour on its core would
//   abort_throws=1               aborting a broken process group throws, as
//                                ProcessGroupNCCL's abort may
//   memory_bytes=<bytes>         the node's available memory for the preflight
//   rename_delay_ms=<ms>         the results folder's rename waits that long
//                                (two runs of one name then overlap there)
//   slow_read=<name>:<ms>        each chunk read of a file called <name> (its
//                                last path component) waits that long first,
//                                as a slow shared file system would
//   stop_read=<name>:<TERM|INT|USR1>  the process sends itself that signal,
//                                once, before the first chunk of a file called
//                                <name> (a stop that a catch site must not
//                                swallow, timed where a real one cannot be)
//   bus_ids=<id>,<id>,...        local rank k's GPU bus id for the sampler (CPU
//                                ranks have none)
//
// Unset, nothing is injected; an item that is not one of these is an error
// naming the variable, so that a misspelt drill does not pass for a clean run.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hpcbench {

inline constexpr const char* kInjectVariable = "HPCBENCH_INJECT";

// The value given for `key` (one of the keys above), nullopt when none; a
// key given twice is an error.
std::optional<std::string> injected(std::string_view key);

// Every item of the variable against its key's form, before a run's first
// step, so that a drill written wrong fails at once instead of at the end
// (rename_delay_ms). A well-formed fault or slow_rank for a rank the job
// does not have (with `world_size` known; 0 when not) is returned as a note
// to warn with, not refused: one variable reaches every job of a sweep, and
// a drill on a 2-rank job must not stop its 1-rank baseline.
[[nodiscard]] std::string check_injection(int world_size);

// A number given for `key`: decimal digits only, at most `max`; anything
// else is an error naming the variable (never "off"). nullopt when none.
std::optional<uint64_t> injected_number(std::string_view key, uint64_t max);

// slow_read's delay for a file of that name (nullopt for other files);
// a malformed value is an error naming the variable.
std::optional<uint64_t> injected_read_delay_ms(const std::string& file_name);

// slow_rank=<rank>:<ms>.
struct InjectedRankDelay {
  int rank = -1;
  uint64_t ms = 0;
};
std::optional<InjectedRankDelay> injected_slow_rank();

// fault=<rank>:<after>:<mode>, with `mode` among `modes`.
struct InjectedFault {
  int rank = -1;
  long after = 0;
  std::string mode;
};
std::optional<InjectedFault> injected_fault(const std::vector<std::string>& modes);

// Says on stderr "HPCBENCH_INJECT fault: rank R goes 'MODE' after N <unit>"
// and does it. Returns only for term (after sending SIGTERM to itself).
void carry_out(const InjectedFault& fault, const char* unit);

}  // namespace hpcbench
