#pragma once
// Every strategy's name, in the order the README and the reports list them.
// Torch-free, so that the sweep planner and the reports (which link no
// LibTorch) check and order names from the same list. Adding a strategy: its
// folder, a line here and a line in registry.cpp.
#include <array>
#include <string_view>

namespace hpcbench::strategies {

inline constexpr std::array<std::string_view, 5> kStrategyNames = {"baseline", "dp", "ddp", "fsdp", "zero"};

}  // namespace hpcbench::strategies
