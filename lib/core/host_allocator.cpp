#include "core/host_allocator.h"

#include <malloc.h>

namespace hpcbench {

bool keep_freed_memory_in_heap() {
#if defined(__GLIBC__)
  // Both: a trim threshold alone also fixes the mmap threshold at its
  // default, which sends every large block to mmap.
  return mallopt(M_MMAP_THRESHOLD, 1 << 30) == 1 && mallopt(M_TRIM_THRESHOLD, 1 << 30) == 1;
#else
  return false;
#endif
}

}  // namespace hpcbench
