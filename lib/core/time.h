#pragma once
// Now, in the two forms the files use.
#include <string>

namespace hpcbench {

// ISO 8601 UTC, e.g. 2026-11-25T22:10:37Z (results and manifests).
std::string utc_now_iso();

// Local time as 20261125-221037: default run, sweep and main-job folder names.
std::string local_timestamp();

}  // namespace hpcbench
