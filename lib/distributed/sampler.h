#pragma once
// torch.utils.data.DistributedSampler, index for index: each rank sees a
// disjoint (up to padding) share of the data set, in an order that depends on
// seed + epoch only, so that runs are comparable across world sizes and
// with PyTorch's own training scripts.
#include <cstdint>
#include <vector>

namespace hpcbench::dist {

class DistributedSampler {
 public:
  // Throws UserError when rank is not in [0, num_replicas).
  DistributedSampler(int64_t dataset_size, int num_replicas, int rank, bool shuffle = true,
                     uint64_t seed = 0, bool drop_last = false);

  void set_epoch(int64_t epoch) { epoch_ = epoch; }
  // This rank's indices for the current epoch (size() of them).
  std::vector<int64_t> indices() const;
  int64_t size() const { return num_samples_; }
  int64_t total_size() const { return num_samples_ * num_replicas_; }

 private:
  int64_t dataset_size_;
  int num_replicas_;
  int rank_;
  bool shuffle_;
  uint64_t seed_;
  bool drop_last_;
  int64_t epoch_ = 0;
  int64_t num_samples_;
};

}  // namespace hpcbench::dist
