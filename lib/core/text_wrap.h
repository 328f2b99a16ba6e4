#pragma once
// Lines that a 120-column terminal shows whole: the logs' lines and the
// run summaries are wrapped to it rather than left to the terminal, which
// breaks them mid-word and loses their indentation.
#include <memory>
#include <string>
#include <string_view>

#include <spdlog/formatter.h>

namespace hpcbench {

inline constexpr size_t kTerminalColumns = 120;

// The columns this process's lines may take: HPCBENCH_COLUMNS where it is
// set (0: lines are not wrapped, for scripts that search them), else
// kTerminalColumns; less the "[rank N] " that the local launcher puts before
// each line of a rank it started (HPCBENCH_LAUNCHER_PID and RANK set).
size_t output_columns();

// Columns a UTF-8 string takes: its code points (the output is ASCII but for
// a few one-column symbols such as "…" and "σ").
size_t text_columns(std::string_view s);

// Each line of `text` that is wider than `width` broken at its last space
// that fits, continuation lines indented by `indent` spaces (a word wider
// than a line is cut). Lines that fit, and the line ends, are left as they are.
std::string wrap_text(std::string_view text, size_t width = kTerminalColumns, size_t indent = 4);

// spdlog's pattern formatter, its lines wrapped by wrap_text.
std::unique_ptr<spdlog::formatter> wrapping_log_formatter(const std::string& pattern, size_t width);

}  // namespace hpcbench
