#pragma once
// configs/systems/*.toml: a node's GPUs and the two network tiers, in the
// spirit of Calculon's system files. Every figure carries its source in a
// comment in the file.
#include <string>

#include "predict/collective.h"

namespace hpcbench::predict {

// Throws UserError naming the file and the key that is missing or wrong.
System read_system(const std::string& path);

}  // namespace hpcbench::predict
