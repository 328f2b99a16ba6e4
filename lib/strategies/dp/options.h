#pragma once
#include "specs/spec.h"

namespace hpcbench::strategies::dp {

struct DpOptions final : OptionsOf<DpOptions> {
  int64_t replicas = 0;  // replicas one process drives; 0: every GPU, or 2 on CPU
  std::vector<Setting> settings() override {
    return {{"replicas", "--dp-replicas", "replicas one process drives (0: every GPU, or 2 on CPU)", &replicas}};
  }
};

}  // namespace hpcbench::strategies::dp
