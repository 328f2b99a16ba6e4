#pragma once
// utilisation.csv: what the device sampler (lib/monitor) saw, one row per
// device and sample, every node's rows in one file. Its one writer and its
// one reader (the report's plot and the TensorBoard log read it back).
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hpcbench::results {

// One reading of one device, as the sampler (lib/monitor) takes it.
struct UtilisationSample {
  double time_s = 0;    // since the node's sampler started
  int64_t step = 0;     // the training step, or monitor's codes for set-up, evaluation, the end
  bool gpu = true;      // a GPU (index: NVML's) or a rank's process tree (index: the rank)
  int index = 0;
  std::optional<double> util_percent;   // GPU: NVML's; CPU: percent of one core since the previous sample
  std::optional<int64_t> memory_bytes;  // GPU: used; CPU: resident
  std::optional<double> power_w;
  std::optional<int64_t> sm_clock_mhz;
  std::optional<int64_t> temperature_c;
  std::optional<uint64_t> throttle_reasons;
  std::optional<uint64_t> energy_mj;
};

// A row of the file: the reading and where and when in the run it was taken
// (kept apart from the sample, which a long run holds millions of).
struct UtilisationRow : UtilisationSample {
  UtilisationRow() = default;
  explicit UtilisationRow(const UtilisationSample& s) : UtilisationSample(s) {}
  std::string host;
  std::string phase;    // "setup", "warmup", "timed", "evaluation" or "end"
  std::string bus_id;
};

std::string utilisation_header();
std::string utilisation_line(const UtilisationRow& row);

// The rows of a file's text; a row of another width than the header's (the
// last line of a killed run) is skipped. Throws UserError naming a missing
// column.
std::vector<UtilisationRow> parse_utilisation(const std::string& text);

}  // namespace hpcbench::results
