#pragma once
// `hpcbench bench-comm`: collective bandwidth in the manner of nccl-tests
// (same size sweep, same algbw/busbw definitions, every result checked), so
// that the communication a training strategy needs can be related to what
// the fabric delivers. Its rows and their file: results/bench_comm_file.h.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "distributed/process_group.h"
#include "results/bench_comm_file.h"

namespace hpcbench::dist {

struct BenchCommConfig {
  std::vector<std::string> ops{"all_reduce", "all_gather", "reduce_scatter", "broadcast"};
  int64_t min_bytes = 8;
  int64_t max_bytes = 64 << 20;
  double factor = 2.0;
  int iters = 20;
  int warmup_iters = 5;
  std::string dtype = "float32";
};


// The op names accepted by --op ("all" expands to every one).
std::vector<std::string> known_ops();
// "8", "64K", "128M", "1G" (powers of 1024, like nccl-tests' -b/-e).
int64_t parse_bytes(const std::string& text, const std::string& flag);
// Checks the configuration; throws UserError naming the flag.
void validate(const BenchCommConfig& config);

// Runs the sweep on every rank (collectively); every rank gets the same rows.
// `on_row` is called as each row completes.
std::vector<results::BenchCommRow> run_bench_comm(Comm& comm, const BenchCommConfig& config,
                                         const std::function<void(const results::BenchCommRow&)>& on_row = {});

}  // namespace hpcbench::dist
