#pragma once
// The one rule for a number given as text: a flag's argument (every numeric
// flag of every command, checked before CLI11 converts it: CLI11's own cast
// turns 99999999999999999999 into the largest int64 and 1e999 into
// infinity, silently, and reads "010" as octal), a setting's TOML value, a
// strategy option.
#include <string>

namespace hpcbench {

// What is wrong with `text` as a number of the type a flag shows ("INT":
// decimal digits with an optional '-', within int64; "UINT": within uint64;
// "FLOAT": a finite double), "" when nothing. A value out of range is said to
// be, with the range ("out of range: ..."): never clamped, nor wrapped.
std::string number_problem(const std::string& text, const std::string& type);

}  // namespace hpcbench
