#include "strategies/ddp/buckets.h"

#include <algorithm>

namespace hpcbench::strategies::ddp {

namespace {

// DDP's _DEFAULT_FIRST_BUCKET_BYTES: a small first bucket (the last layers'
// gradients, ready first) so that communication starts early in backward.
constexpr int64_t kFirstBucketBytes = 1024 * 1024;

}  // namespace

// Reverse parameter order approximates the order in which backward produces
// the gradients, the order DDP rebuilds its buckets in after the first step.
std::vector<std::vector<size_t>> assign_buckets(const std::vector<int64_t>& bytes_of, const std::vector<int>& dtype,
                                                double bucket_mb) {
  const auto cap = static_cast<int64_t>(bucket_mb * 1024 * 1024);
  std::vector<std::vector<size_t>> buckets;
  int64_t bytes = 0;
  std::vector<size_t> current;
  auto close = [&] {
    if (current.empty()) return;
    buckets.push_back(std::move(current));
    current.clear();
    bytes = 0;
  };
  for (size_t k = bytes_of.size(); k-- > 0;) {
    if (!current.empty() && dtype[k] != dtype[current.front()]) close();
    current.push_back(k);
    bytes += bytes_of[k];
    if (bytes >= (buckets.empty() ? std::min(kFirstBucketBytes, cap) : cap)) close();
  }
  close();
  return buckets;
}

}  // namespace hpcbench::strategies::ddp
