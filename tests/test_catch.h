#pragma once
// Every test includes Catch2 through this header. LibTorch's
// c10/util/Logging.h defines a glog-style CHECK macro of its own (abort on
// failure, nothing reported): included after catch.hpp it silently replaces
// Catch's CHECK, and the test passes with no assertions counted. Taking
// c10's header first and Catch's last leaves Catch's CHECK in force whatever
// the test includes afterwards (the include guard stops a second definition).
#if __has_include(<c10/util/Logging.h>)
#include <c10/util/Logging.h>
#undef CHECK
#endif
#include <catch2/catch.hpp>
