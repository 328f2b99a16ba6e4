#pragma once
// A fault on purpose, for the tests that check how a broken job ends.
#include <cstdint>
#include <functional>

namespace hpcbench::run {

// An injected fault (core/injection.h): that rank fails after `after`
// optimizer steps, so that tests can check that a broken job ends promptly,
// names the rank and leaves no results.
std::function<void(int64_t)> fault_hook(int rank);

}  // namespace hpcbench::run
