#pragma once
// `hpcbench bench-comm`: collective bandwidth in the manner of nccl-tests
// (same size sweep, same algbw/busbw definitions, every result checked), so
// that the communication a training strategy needs can be related to what
// the fabric delivers.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "dist/process_group.h"

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

struct BenchCommRow {
  std::string op;
  int64_t bytes = 0;  // nccl-tests' "size": the whole buffer (all ranks' for all_gather/reduce_scatter)
  int64_t count = 0;  // elements in that buffer
  std::string type;
  std::string redop;  // "sum", or "none" for data movement
  int root = -1;
  double time_us = 0;  // mean over iterations and ranks
  double algbw = 0;    // GB/s: bytes / time
  double busbw = 0;    // GB/s: algbw times nccl-tests' factor for the op
  int64_t wrong = 0;   // elements that differ from the expected result, over all ranks
};

// The op names accepted by --op ("all" expands to every one).
std::vector<std::string> known_ops();
// "8", "64K", "128M", "1G" (powers of 1024, like nccl-tests' -b/-e).
int64_t parse_bytes(const std::string& text, const std::string& flag);
// nccl-tests' bus bandwidth factor for `op` on `ranks` ranks.
double bus_factor(const std::string& op, int ranks);
// Checks the configuration; throws UserError naming the flag.
void validate(const BenchCommConfig& config);

// Runs the sweep on every rank (collectively); every rank gets the same rows.
// `on_row` is called as each row completes.
std::vector<BenchCommRow> run_bench_comm(Comm& comm, const BenchCommConfig& config,
                                         const std::function<void(const BenchCommRow&)>& on_row = {});

std::string table_header();
std::string format_row(const BenchCommRow& row);

}  // namespace hpcbench::dist
