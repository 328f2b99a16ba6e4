// A job whose collective failed ends with that failure, whatever its
// communicator's teardown meets: ProcessGroupNCCL's abort may throw (a
// communicator that cannot be aborted within the group's timeout), and an
// exception leaving ~Comm while the first error unwinds the stack would end in
// std::terminate, with the first error never printed. The injected
// abort_throws=1 (core/injection.h) makes that abort throw on CPU too.
#include "test_catch.h"

#include "test_env.h"

using namespace hpcbench;

TEST_CASE("a broken job whose abort throws still exits with its first error, not std::terminate") {
  auto r = test::run_command("HPCBENCH_INJECT='abort_throws=1;fault=1:2:hang' " + test::hpcbench_bin().string() +
                             " bench-comm --nproc-per-node 2 --device cpu --op all_reduce --min-bytes 1K "
                             "--max-bytes 1K --iters 100000 --warmup-iters 0 --timeout 3");
  INFO(r.output);
  // The abort was reached and failed (else this test would prove nothing)...
  CHECK(r.output.find("aborting the process group after a failed collective: HPCBENCH_INJECT abort_throws=1") !=
        std::string::npos);
  // ...and the job still ended with the collective's failure: rank 0's
  // error, its exit status for a reported error (2), no terminate.
  CHECK(r.output.find("all_reduce failed on rank 0 of 2") != std::string::npos);
  CHECK(r.output.find("terminate called") == std::string::npos);
  // The launcher names the hung rank, and exits with the status rank 0 gave.
  CHECK(r.output.find("[launcher] job failed: rank 1 of 2") != std::string::npos);
  CHECK(r.output.find("rank 0 exited with status 2 first") != std::string::npos);
  CHECK(r.exit_code == 2);
}
