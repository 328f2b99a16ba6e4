// Built by test_include_boundaries: with the library that holds the header
// linked it compiles; without, it must not (lib/CMakeLists.txt's
// hpcbench_headers gives each library an include folder of its own).
#include "report/compare.h"

int main() { return hpcbench::report::Comparison{}.rows.empty() ? 0 : 1; }
