#pragma once
// configs/systems/*.toml: a node's GPUs and the two network tiers, in the
// spirit of Calculon's system files. Every figure carries its source in a
// comment in the file.
#include <string>

#include "predict/collective.h"

namespace hpcbench::predict {

// More GPUs a node than any machine has: a figure beyond it is a typo.
inline constexpr int kMaxGpusPerNode = 1024;

// Throws UserError naming the file and the key that is missing or wrong
// (numbers must be finite; gpus_per_node a whole number).
System read_system(const std::string& path);

}  // namespace hpcbench::predict
