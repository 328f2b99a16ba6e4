#pragma once
// Where this process sits in the job (one process per device, or one driving
// several): what the job's launch found, before any strategy is set up.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace hpcbench::dist {
class Comm;
}

namespace hpcbench::run {

struct RunContext {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;
  int64_t nodes = 1;
  int64_t gpus_per_node = 1;
  std::string hosts;  // all ranks' hosts, rank order, space-separated
  std::string slurm_job_id;
  // `run --repeats`: the group this run is one repeat of, and its index
  // (1..N); "" and 0 for a single run.
  std::string repeat_group;
  int64_t repeat_index = 0;
  // The job's communicator (its device is this rank's device); null for a
  // single process without one. With it, the figures combine every rank.
  std::shared_ptr<dist::Comm> comm;

  // `hosts` as a list (empty when none were exchanged).
  std::vector<std::string> host_list() const;
  // Every rank's text for `key`, rank order, through the communicator's store
  // (collective); a job of one rank: its own.
  std::vector<std::string> exchange(const std::string& key, const std::string& mine) const;
};

}  // namespace hpcbench::run
