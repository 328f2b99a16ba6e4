#pragma once
#include "specs/spec.h"

namespace hpcbench::strategies::ddp {

struct DdpOptions final : OptionsOf<DdpOptions> {
  double bucket_mb = 25;  // all-reduce bucket size (the first bucket is 1 MiB, as in DDP)
  bool overlap = true;    // all-reduce during backward, as buckets fill (not after it)
  std::vector<Setting> settings() override {
    return {{"bucket_mb", "--bucket-mb", "gradient bucket size in MB", &bucket_mb},
            {"overlap", "--no-overlap", "all-reduce after backward instead of during it", &overlap}};
  }
};

}  // namespace hpcbench::strategies::ddp
