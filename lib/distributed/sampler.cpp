#include "distributed/sampler.h"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/ops/randperm.h>

#include <numeric>

#include "core/error.h"

namespace hpcbench::dist {

DistributedSampler::DistributedSampler(int64_t dataset_size, int num_replicas, int rank, bool shuffle,
                                       uint64_t seed, bool drop_last)
    : dataset_size_(dataset_size), num_replicas_(num_replicas), rank_(rank), shuffle_(shuffle),
      seed_(seed), drop_last_(drop_last) {
  if (num_replicas < 1) fail("DistributedSampler: num_replicas {} must be at least 1", num_replicas);
  if (rank < 0 || rank >= num_replicas)
    fail("DistributedSampler: rank {} is not in [0, {})", rank, num_replicas);
  if (dataset_size < 0) fail("DistributedSampler: negative data set size {}", dataset_size);
  // PyTorch: with drop_last the tail that does not fill a whole round is cut,
  // otherwise the last round is padded.
  if (drop_last && dataset_size % num_replicas != 0)
    num_samples_ = (dataset_size - num_replicas + num_replicas - 1) / num_replicas;
  else
    num_samples_ = (dataset_size + num_replicas - 1) / num_replicas;
  if (num_samples_ < 0) num_samples_ = 0;
}

std::vector<int64_t> DistributedSampler::indices() const {
  std::vector<int64_t> all(static_cast<size_t>(dataset_size_));
  if (shuffle_) {
    // torch.Generator().manual_seed(seed + epoch) then torch.randperm(n, generator=g).
    auto gen = at::detail::createCPUGenerator(seed_ + static_cast<uint64_t>(epoch_));
    auto perm = at::randperm(dataset_size_, gen, at::TensorOptions().dtype(at::kLong));
    const int64_t* p = perm.data_ptr<int64_t>();
    std::copy(p, p + dataset_size_, all.begin());
  } else {
    std::iota(all.begin(), all.end(), int64_t{0});
  }
  const auto total = static_cast<size_t>(total_size());
  if (!drop_last_) {
    // indices += (indices * ceil(padding / len))[:padding]
    size_t n = all.size();
    for (size_t i = 0; all.size() < total && n > 0; ++i) all.push_back(all[i % n]);
  } else {
    all.resize(total);
  }
  std::vector<int64_t> mine;
  mine.reserve(static_cast<size_t>(num_samples_));
  for (size_t i = static_cast<size_t>(rank_); i < total; i += static_cast<size_t>(num_replicas_))
    mine.push_back(all[i]);
  return mine;
}

}  // namespace hpcbench::dist
