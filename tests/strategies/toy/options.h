#pragma once
// A strategy that exists only in the tests: every rank a replica, gradients
// averaged after backward in one flat buffer, all-reduced in `chunks` pieces.
// It shows that a strategy is one folder (this one) and one registry line
// (test_extension.cpp's add_strategy, which stands for registry.inc).
#include "specs/spec.h"

namespace hpcbench::strategies::toy {

struct ToyOptions final : OptionsOf<ToyOptions> {
  int64_t chunks = 1;
  std::vector<Setting> settings() override {
    return {{"chunks", "--toy-chunks", "all-reduces the flat gradient is cut into", &chunks}};
  }
};

const Spec& spec();

}  // namespace hpcbench::strategies::toy
