#include "predict/replay.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace hpcbench::predict {

namespace {

// Splits the compute stream's idle interval [from, to) among the collectives
// running in it (the comm stream runs one at a time, so they do not overlap).
void attribute(const std::vector<Task>& tasks, const Replay& r, double from, double to, Replay& out) {
  if (to <= from) return;
  for (size_t k = 0; k < tasks.size(); ++k) {
    if (tasks[k].stream != Stream::comm || k >= r.end.size()) continue;
    double o = std::min(to, r.end[k]) - std::max(from, r.start[k]);
    if (o > 0) out.exposed_by_kind[tasks[k].kind] += o;
  }
}

}  // namespace

Replay replay(const std::vector<Task>& tasks) {
  Replay r;
  r.start.resize(tasks.size());
  r.end.resize(tasks.size());
  double free[2] = {0, 0};
  std::vector<std::pair<double, double>> idle;  // compute stream's waits
  for (size_t k = 0; k < tasks.size(); ++k) {
    const auto& t = tasks[k];
    if (t.seconds < 0) throw std::invalid_argument("task " + std::to_string(k) + " has a negative duration");
    int s = t.stream == Stream::compute ? 0 : 1;
    double begin = free[s];
    for (auto d : t.after) {
      if (d >= k) throw std::invalid_argument("task " + std::to_string(k) + " waits for a later task " + std::to_string(d));
      begin = std::max(begin, r.end[d]);
    }
    if (s == 0 && begin > free[0]) idle.emplace_back(free[0], begin);
    r.start[k] = begin;
    r.end[k] = begin + t.seconds;
    free[s] = r.end[k];
    (s == 0 ? r.compute : r.comm) += t.seconds;
  }
  r.makespan = std::max(free[0], free[1]);
  if (r.makespan > free[0]) idle.emplace_back(free[0], r.makespan);  // the step waits for the last collectives
  r.exposed = r.makespan - r.compute;
  for (auto [a, b] : idle) attribute(tasks, r, a, b, r);
  return r;
}

}  // namespace hpcbench::predict
