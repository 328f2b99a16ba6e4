#pragma once
// Which rank a failed collective waited for. A collective that times out
// says only that it timed out, on every rank that waited, and a launcher
// that names the first rank to exit names one of those. The store knows
// better: each rank whose collective failed posts which one it was waiting
// at (its sequence number on the communicator, and what it was for); a rank
// that posts nothing within a short window never got there (stopped, hung
// or dead), and is named.
#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace c10d {
class Store;
}

namespace hpcbench::dist {

struct StallReport {
  std::vector<int> silent;                    // posted nothing within the window
  std::map<int, std::string> elsewhere;       // rank -> the other collective it waits at
  std::vector<int> waiting;                   // posted the same collective as this rank
  bool store_unreachable = false;             // the store (on rank 0) did not answer
};

// Posts this rank's failed collective (`seq`, `what`) under `prefix` and
// gathers the others' posts for up to `window`. Never throws.
StallReport find_stalled(c10d::Store& store, const std::string& prefix, int rank, int size, uint64_t seq,
                         const std::string& what, std::chrono::milliseconds window);

// A clause for the failure message ("rank 2 did not arrive: ..."), ranks
// shown through `global` (a subgroup's ranks as the job's); "" when the
// report knows nothing.
std::string describe(const StallReport& report, const std::vector<int>& global,
                     std::chrono::milliseconds window);

// Where the built-in launcher collects what its ranks found
// (HPCBENCH_LAUNCH_NOTES, a folder it made): a rank writes the job's ranks
// that did not arrive, so that the launcher's last line names them too.
inline constexpr const char* kLaunchNotesVariable = "HPCBENCH_LAUNCH_NOTES";
void tell_launcher(int global_rank, const std::vector<int>& silent_global_ranks);
// Every rank named in the notes folder `dir`, most named first.
std::vector<int> read_launch_notes(const std::string& dir);

}  // namespace hpcbench::dist
