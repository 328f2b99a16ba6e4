#pragma once
// Progress of a long loop whose length is known (training's steps,
// evaluation's windows, a download's bytes): on a terminal a bar that
// rewrites itself, in a batch job's log a line every few seconds, so that a
// long wait is never a minute of silence.
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>

namespace hpcbench {

// What is counted: its name and, for large counts (bytes), the amount one
// unit of the name stands for and the decimals shown.
struct ProgressUnit {
  std::string name;
  double per = 1;
  int decimals = 0;
  ProgressUnit(const char* n) : name(n) {}  // NOLINT: a plain count
  ProgressUnit(std::string n, double per, int decimals) : name(std::move(n)), per(per), decimals(decimals) {}
};

class LoopProgress {
 public:
  using Clock = std::chrono::steady_clock;
  // enabled: this rank reports (rank 0); tty: rewrite one line on stderr,
  // else log a line at most every `every`.
  LoopProgress(std::string label, ProgressUnit unit, int64_t total, bool enabled, bool tty,
               std::chrono::duration<double> every, Clock::time_point start = Clock::now());
  ~LoopProgress() { finish(); }
  LoopProgress(const LoopProgress&) = delete;
  LoopProgress& operator=(const LoopProgress&) = delete;

  // `done` units so far, with `detail` after the count (a step's loss);
  // returns what was shown ("" when nothing was due).
  std::string update(int64_t done, Clock::time_point now = Clock::now(), const std::string& detail = "");
  // Clears the terminal line (nothing in a log).
  void finish();

  // "1200/5000 windows (24%), 310.4 windows/s, about 12 s left"
  static std::string describe(const ProgressUnit& unit, int64_t done, int64_t total, double elapsed_s);

 private:
  std::string label_;
  ProgressUnit unit_;
  int64_t total_;
  bool enabled_, tty_, shown_ = false;
  std::chrono::duration<double> every_;
  Clock::time_point start_, last_;
};

}  // namespace hpcbench
