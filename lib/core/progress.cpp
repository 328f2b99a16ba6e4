#include "core/progress.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace hpcbench {

namespace {

std::string duration_text(double s) {
  const long t = std::lround(s);  // whole seconds first, so that 119.6 s reads "2 min 0 s"
  if (t < 90) return fmt::format("{} s", t);
  if (t < 5400) return fmt::format("{} min {} s", t / 60, t % 60);
  return fmt::format("{} h {} min", t / 3600, t % 3600 / 60);
}

}  // namespace

LoopProgress::LoopProgress(std::string label, ProgressUnit unit, int64_t total, bool enabled, bool tty,
                           std::chrono::duration<double> every, Clock::time_point start)
    : label_(std::move(label)), unit_(std::move(unit)), total_(total), enabled_(enabled), tty_(tty), every_(every),
      start_(start), last_(start) {}

std::string LoopProgress::describe(const ProgressUnit& unit, int64_t done, int64_t total, double elapsed_s) {
  const double pct = total > 0 ? 100.0 * static_cast<double>(done) / static_cast<double>(total) : 100.0;
  const int d = unit.decimals;
  std::string s = fmt::format("{:.{}f}/{:.{}f} {} ({:.0f}%)", static_cast<double>(done) / unit.per, d,
                              static_cast<double>(total) / unit.per, d, unit.name, pct);
  if (done <= 0 || elapsed_s <= 0) return s;
  const double rate = static_cast<double>(done) / elapsed_s;
  s += fmt::format(", {:.1f} {}/s", rate / unit.per, unit.name);
  if (done < total) s += ", about " + duration_text(static_cast<double>(total - done) / rate) + " left";
  return s;
}

std::string LoopProgress::update(int64_t done, Clock::time_point now, const std::string& detail) {
  if (!enabled_ || now - last_ < every_) return "";
  last_ = now;
  std::string text = describe(unit_, done, total_, std::chrono::duration<double>(now - start_).count());
  if (!detail.empty()) text += ", " + detail;
  if (tty_) {
    constexpr int width = 30;
    const int filled = total_ > 0 ? static_cast<int>(width * std::clamp<int64_t>(done, 0, total_) / total_) : width;
    std::fprintf(stderr, "\r%s [%s%s] %s\033[K", label_.c_str(), std::string(static_cast<size_t>(filled), '#').c_str(),
                 std::string(static_cast<size_t>(width - filled), ' ').c_str(), text.c_str());
    std::fflush(stderr);
    shown_ = true;
  } else {
    spdlog::info("{}: {}", label_, text);
  }
  return text;
}

void LoopProgress::finish() {
  if (!shown_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  shown_ = false;
}

}  // namespace hpcbench
