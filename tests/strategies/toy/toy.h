#pragma once
#include <memory>

#include "strategies/strategy.h"
#include "toy/options.h"

namespace hpcbench::strategies::toy {

std::unique_ptr<Strategy> make(const Choice& choice);

}  // namespace hpcbench::strategies::toy
