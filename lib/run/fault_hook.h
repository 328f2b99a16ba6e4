#pragma once
// A fault on purpose, for the tests that check how a broken job ends.
#include <cstdint>
#include <functional>

namespace hpcbench::run {

// HPCBENCH_TEST_FAULT=<rank>:<after>:<mode>: that rank fails after `after`
// optimizer steps (as for bench-comm), so that tests can check that a broken
// job ends promptly, names the rank and leaves no results: kill, abort,
// exit, hang, stop (SIGSTOP to itself); or term, SIGTERM to itself once, at
// a point a signal from outside cannot be timed to (after the last step,
// before evaluation).
std::function<void(int64_t)> fault_hook(int rank);

}  // namespace hpcbench::run
