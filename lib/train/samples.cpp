#include "train/samples.h"

#include <algorithm>

#include "core/error.h"

namespace hpcbench::train {

int64_t rows_per_rank(int64_t n, int world_size) { return (n + world_size - 1) / world_size; }

int64_t step_samples(int64_t n, int world_size, int64_t micro_rows, int64_t first_micro, int64_t count) {
  const int64_t per_rank = rows_per_rank(n, world_size);
  int64_t samples = 0;
  for (int64_t m = first_micro; m < first_micro + count; ++m) {
    const int64_t begin = std::min(m * micro_rows, per_rank);
    const int64_t end = std::min(begin + micro_rows, per_rank);
    // Rank r's i-th row sits at i * world + r of the padded order, so the
    // rows [begin, end) of every rank are its places [begin * world,
    // end * world); those from n on are the sampler's repeats.
    samples += std::clamp<int64_t>(n - begin * world_size, 0, (end - begin) * world_size);
  }
  return samples;
}

void check_batch_fits(int64_t n, int world_size, int64_t batch_size, int64_t devices_per_process,
                      int64_t grad_accum) {
  const int64_t per_rank = rows_per_rank(n, world_size);
  const int64_t micro_rows = batch_size * devices_per_process;
  const std::string share = world_size > 1 ? fmt::format("each of the {} ranks gets {} of the {} training samples",
                                                         world_size, per_rank, n)
                                           : fmt::format("there are {} training samples", n);
  const std::string per_device = devices_per_process > 1
                                     ? fmt::format(" ({} per micro-step over this process's {} devices)", micro_rows,
                                                   devices_per_process)
                                     : "";
  if (micro_rows > per_rank)
    fail("--batch-size {}{} is larger than the data: {}, so every step would run {} rows, not the batch of {} "
         "asked for; use --batch-size {} or less, or more data (--synthetic-samples, --train-data)",
         batch_size, per_device, share, per_rank, micro_rows, std::max<int64_t>(per_rank / devices_per_process, 1));
  const int64_t micro_per_epoch = (per_rank + micro_rows - 1) / micro_rows;
  if (grad_accum > micro_per_epoch)
    fail("--grad-accum {} with --batch-size {}{}: an optimizer step needs {} micro-batches but an epoch has {} ({}); "
         "use --grad-accum {} or less",
         grad_accum, batch_size, per_device, grad_accum, micro_per_epoch, share, micro_per_epoch);
}

}  // namespace hpcbench::train
