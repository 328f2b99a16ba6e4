#pragma once
// What a collective costs: the alpha-beta model over a system description
// (per-tier bandwidth, latency, efficiency), or the times `hpcbench
// bench-comm` measured. Both answer the same question, so the step model
// does not care which one it was given. docs/scaling-model.md has the
// equations and where they are known to be wrong.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "results/bench_comm_file.h"
#include "specs/schedule.h"

namespace hpcbench::predict {

// One level of the network. Bandwidth is per direction, in GB/s (1e9 B/s):
// for the intra-node tier what one GPU can send (NVLink, PCIe), for the
// inter-node tier what one node can send over all its NICs. Efficiency is
// the fraction of it a large collective reaches (nccl-tests' busbw over the
// link rate); latency is per ring step.
struct Tier {
  std::string link;
  double bandwidth_GBps = 0;
  double latency_us = 0;
  double efficiency = 1;
};

struct System {
  std::string name;
  std::string file;
  int gpus_per_node = 1;
  Tier intra, inter;
  std::string device_name;  // the GPU the file describes ("" when it does not say)
  std::string device = "cuda";  // the kind of device: "cuda" (GPUs) or "cpu"
  double memory_bytes = 0;      // what one device holds (memory_GiB; 0: the file does not say)
};

// The ranks of a collective (specs/schedule.h: what a strategy issues).
using strategies::Group;

// Latency terms (ring steps) of each op over n ranks: all-reduce 2(n-1)
// (reduce-scatter then all-gather), the others n-1.
int ring_steps(const std::string& op, int n);

class CommModel {
 public:
  virtual ~CommModel() = default;
  // Seconds `op` takes on a buffer of `bytes` (nccl-tests' size: the whole
  // buffer, all ranks' for all_gather / reduce_scatter) over `group`.
  virtual double seconds(const std::string& op, double bytes, const Group& group) const = 0;
  virtual std::string describe() const = 0;
};

// The alpha-beta model with nccl-tests' bus-bandwidth factors f(op, n):
// on one node t = steps·α + S·f(op, g)/(B_intra·e); across nodes two levels
// as NCCL's hierarchical algorithms run them (docs/scaling-model.md):
//   reduce-scatter, all-gather:  (g-1)α₁ + (n-1)α₂ + S(g-1)/g/B₁ + (S/g)(n-1)/n/B₂
//   all-reduce:                  twice that
// with B₂ a GPU's share of its node's NICs (node bandwidth / g).
class AlphaBeta final : public CommModel {
 public:
  explicit AlphaBeta(System system) : sys_(std::move(system)) {}
  double seconds(const std::string& op, double bytes, const Group& group) const override;
  std::string describe() const override;
  const System& system() const { return sys_; }

 private:
  System sys_;
};

// Times measured by `hpcbench bench-comm` (its table, as written by
// --output), at the rank count it ran on. A size between two rows is
// interpolated linearly in bytes (the alpha-beta shape between the rows);
// beyond the largest row the largest row's bus bandwidth carries on. At
// another rank count the time is scaled by the ratio of bus factors (the
// bus bandwidth is taken to be what the fabric gives whatever the count).
class Measured final : public CommModel {
 public:
  Measured(std::vector<results::BenchCommRow> rows, int ranks, int nodes, std::string file);
  double seconds(const std::string& op, double bytes, const Group& group) const override;
  std::string describe() const override;
  int ranks() const { return ranks_; }

 private:
  std::vector<results::BenchCommRow> rows_;
  int ranks_ = 1, nodes_ = 1;
  std::string file_;
};

// Reads a bench-comm output file; throws UserError naming the file and line.
std::unique_ptr<Measured> read_bench_comm(const std::string& path);

}  // namespace hpcbench::predict
