#pragma once
// Which rows a step really trains on. Throughput counts samples, and a
// sample is a row of the data set that went through forward and backward:
// the last micro-batch of an epoch is short (the data rarely divides by the
// batch), and DistributedSampler repeats rows so that every rank holds as
// many (the padding its rule adds, at most world_size - 1 per epoch). A
// step's figure counts neither the rows it did not have nor the repeats.
#include <cstdint>

namespace hpcbench::train {

// Rows one rank holds per epoch: DistributedSampler's ceil(n / world).
int64_t rows_per_rank(int64_t n, int world_size);

// Data-set samples in the micro-batches [first_micro, first_micro + count)
// of `micro_rows` rows each, over all ranks of the epoch: the rows that
// exist (a short last micro-batch holds fewer) whose place in the padded
// order is below n (DistributedSampler's repeats are not new samples).
int64_t step_samples(int64_t n, int world_size, int64_t micro_rows, int64_t first_micro, int64_t count);

// Refuses (UserError naming the flags) a batch that does not fit the data
// each rank holds: a micro-batch larger than a rank's share would run short
// every step, under a --batch-size that is not the batch that ran, and an
// optimizer step of more micro-batches than an epoch has would never run.
// `devices_per_process`: dp's replicas share one process's micro-batch.
void check_batch_fits(int64_t n, int world_size, int64_t batch_size, int64_t devices_per_process,
                      int64_t grad_accum);

}  // namespace hpcbench::train
