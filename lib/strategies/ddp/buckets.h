#pragma once
// DDP's bucket assignment (Reducer's compute_bucket_assignment_by_size),
// torch-free so that the scaling model replays the buckets the strategy
// builds: parameters in reverse order, the order backward produces their
// gradients; a new bucket at a dtype change or once the bucket holds the cap
// (the first one 1 MiB).
#include <cstddef>
#include <cstdint>
#include <vector>

namespace hpcbench::strategies::ddp {

// `bytes` and `dtype` (any id; a change starts a bucket) of each parameter in
// the model's order. Indices into them, bucket by bucket in launch order.
std::vector<std::vector<size_t>> assign_buckets(const std::vector<int64_t>& bytes, const std::vector<int>& dtype,
                                                double bucket_mb);

}  // namespace hpcbench::strategies::ddp
