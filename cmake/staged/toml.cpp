// toml++'s compiled part, built from the staged headers (HPCBENCH_DEPS_DIR), for
// the reason fmt.cpp gives: with TOML_HEADER_ONLY=0 the project's translation
// units are the same text as in a build against Debian's libtomlplusplus-dev
// (and they skip compiling the parser each).
#define TOML_IMPLEMENTATION 1
#include <toml++/toml.h>
