#pragma once
// gnuplot, as every plot of the report runs it: the terminals chosen the
// same way, the program run in the plots' folder, and the images moved
// into place only when the whole script succeeded.
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

namespace hpcbench::report {

struct PlotOutcome {
  std::vector<std::string> images;    // file names inside the folder, in display order
  std::vector<std::string> warnings;  // gnuplot missing or failing, nothing to plot
};

// The lines that make `term` ("png" or "svg") the output's format at
// `width` x `height`: pngcairo where gnuplot has it (anti-aliased), plain png
// otherwise, so that a minimal gnuplot still draws every plot.
void set_terminal(std::ostream& s, const std::string& term, int width, int height);

// A script's output `name` in `term`, before it is moved into place:
// ".<name>.<term>.partial" (what a script's `set output` names).
std::string partial_name(const std::string& name, const std::string& term);

// Runs `program script` inside `dir` (its output into `log`, removed after)
// and moves each of `names`' .partial images into place as <name>.png and
// <name>.svg: gnuplot writes every output it was asked for even when a later
// command fails, so only a clean exit makes plots visible, and the partials
// never stay. A failure adds "<what>: <program> <script> <how it ended>:
// <its output>" to out.warnings.
void run_gnuplot(const std::string& program, const std::filesystem::path& dir, const std::string& script,
                 const std::filesystem::path& log, const std::vector<std::string>& names, const std::string& what,
                 PlotOutcome& out);

}  // namespace hpcbench::report
