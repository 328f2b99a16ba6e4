#pragma once

namespace hpcbench {

// Keeps large freed blocks in glibc's heap instead of handing them back to
// the kernel. zero 3 and fsdp free a gathered unit after using it and
// allocate it again a moment later, every unit, every step; with glibc's
// defaults each such block above 32 MB is a fresh mmap, and every page of it
// faults in again, which made a 1-rank fsdp step on CPU 1.7x slower than the
// same step with this setting (bert-mini). The CUDA caching
// allocator does the same on GPUs. Returns false when glibc refused.
bool keep_freed_memory_in_heap();

}  // namespace hpcbench
