#pragma once
// The table `hpcbench bench-comm` prints and writes with --output, which
// `predict --comm` and `report --comm` read back: comment lines (one of
// them the job's shape, "# backend B, N rank(s) on M node(s) ..."), a
// header, one row per collective and size, in nccl-tests' columns.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace hpcbench::results {

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

// nccl-tests' bus bandwidth factor for `op` on `ranks` ranks: busbw = algbw x this.
double bus_factor(const std::string& op, int ranks);

// "# backend <backend>, <ranks> rank(s) on <nodes> node(s) (<where>)", no line end: the writer may add to it.
std::string bench_comm_shape_line(const std::string& backend, int ranks, int nodes, const std::string& where);
std::string bench_comm_header();
std::string bench_comm_line(const BenchCommRow& row);

struct BenchCommFile {
  std::vector<BenchCommRow> rows;
  int ranks = 0, nodes = 1;
};
// Throws UserError naming `what` (the flag), the file and the line that is
// not a row, or the shape line missing.
BenchCommFile read_bench_comm_file(const std::filesystem::path& path, const std::string& what);

}  // namespace hpcbench::results
