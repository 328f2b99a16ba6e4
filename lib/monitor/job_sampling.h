#pragma once
// The device sampler over a whole job: each node's first rank samples its
// node (its ranks' GPUs through NVML, or on CPU runs their process trees),
// the others sample nothing; at the end every node's rows and summary meet
// on rank 0 as utilisation.csv, run.json's "monitor" section and the job's
// figures. Ranks exchange through `Exchange` (the job communicator's store),
// so that this needs no LibTorch.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "monitor/sampler.h"

namespace hpcbench::monitor {

// Every rank's text for `key`, rank order (collective); one rank: its own.
using Exchange = std::function<std::vector<std::string>(const std::string& key, const std::string& mine)>;

struct JobSamplingOptions {
  int64_t interval_ms = 100;  // 0: no sampling at all
  bool gpus = false;          // sample GPUs (a GPU run, or HPCBENCH_NVML_LIBRARY)
  bool cpu_ranks = false;     // sample the node's ranks' process trees (a CPU run)
  std::string bus_id;         // this rank's GPU's PCI bus id ("" unknown)
  int rank = 0, local_rank = 0;
  std::vector<std::string> hosts;  // every rank's node, rank order; empty: one node
};

class JobSampling {
 public:
  // Collective: every rank exchanges its pid and bus id; the node's first
  // rank starts sampling.
  JobSampling(JobSamplingOptions options, Exchange exchange);
  ~JobSampling();  // stops the node's sampler, whichever way the run ends
  JobSampling(const JobSampling&) = delete;
  JobSampling& operator=(const JobSampling&) = delete;

  // This node's sampler, null on the other ranks and when sampling is off.
  Sampler* sampler() { return sampler_.get(); }
  void set_step(int64_t code) {
    if (sampler_) sampler_->set_step(code);
  }
  void sample_now() {
    if (sampler_) sampler_->sample_now();
  }

  struct Job {
    std::string utilisation_csv;  // every node's rows under the header
    nlohmann::json details;       // run.json's "monitor" section
    Summary summary;              // the job's figures over the timed steps
  };
  // Collective: stops sampling; rank 0 gets every node's rows and summaries
  // over the timed steps [first_timed, last_timed] (the others an empty Job).
  Job finish(int64_t first_timed, int64_t last_timed);

 private:
  std::string key(const std::string& what) const;
  std::string host() const;

  JobSamplingOptions options_;
  Exchange exchange_;
  int64_t call_;  // keys unique per run in this process: the store keeps every value
  std::unique_ptr<Sampler> sampler_;
};

}  // namespace hpcbench::monitor
