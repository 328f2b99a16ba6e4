#include "report/gnuplot.h"

#include <fmt/format.h>

#include "core/bounded_read.h"
#include "core/error.h"
#include "core/process.h"

namespace hpcbench::report {

namespace fs = std::filesystem;

void set_terminal(std::ostream& s, const std::string& term, int width, int height) {
  if (term == "png")
    s << fmt::format("if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) {{\n"
                     "  set terminal pngcairo size {0},{1} font 'sans,11'\n"
                     "}} else {{\n  set terminal png size {0},{1}\n}}\n",
                     width, height);
  else
    s << fmt::format("set terminal svg size {},{} dynamic font 'sans,11'\n", width, height);
}

std::string partial_name(const std::string& name, const std::string& term) {
  return fmt::format(".{}.{}.partial", name, term);
}

void run_gnuplot(const std::string& program, const fs::path& dir, const std::string& script, const fs::path& log,
                 const std::vector<std::string>& names, const std::string& what, PlotOutcome& out) {
  Command cmd;
  cmd.program = program;
  cmd.args = {script};
  cmd.cwd = dir;
  cmd.out = Sink::File;
  cmd.file = log;
  cmd.err = Sink::Stdout;
  std::string ended, said;
  try {
    int status = wait_for(start(cmd).pid);
    if (status != 0) ended = describe_exit(status);
  } catch (const UserError& e) {
    ended = fmt::format("did not run ({})", e.what());
  }
  std::error_code ec;
  if (!ended.empty()) {
    try {
      said = read_file(log, file_limit::kSmall);
    } catch (const Interrupted&) {
      throw;
    } catch (const UserError&) {
    }
    while (!said.empty() && (said.back() == '\n' || said.back() == ' ')) said.pop_back();
    out.warnings.push_back(fmt::format("{}: {} {} {}{}{}", what, program, (dir / script).string(), ended,
                                       said.empty() ? "" : ": ", said));
  } else {
    for (auto& n : names)
      for (const char* ext : {"png", "svg"}) {
        fs::path final_path = dir / fmt::format("{}.{}", n, ext);
        fs::rename(dir / partial_name(n, ext), final_path, ec);
        if (ec) out.warnings.push_back(fmt::format("plot {} missing: {}", final_path.string(), ec.message()));
        else if (std::string(ext) == "svg") out.images.push_back(final_path.filename().string());
      }
  }
  for (auto& n : names)
    for (const char* ext : {"png", "svg"}) fs::remove(dir / partial_name(n, ext), ec);
  fs::remove(log, ec);
}

}  // namespace hpcbench::report
