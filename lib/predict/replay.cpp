#include "predict/replay.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace hpcbench::predict {

namespace {

// Splits the compute stream's idle intervals among the collectives running
// in them. Both lists are in time order (each stream runs its tasks in issue
// order, and the idle intervals are the compute stream's own gaps), so one
// pass over the two serves: a collective that ended before an interval began
// ends before every later one too. The sums are made in the order a scan of
// every collective for every interval would make them, so the figures are
// the same to the last bit (tests/predict/test_replay.cpp holds it).
void attribute(const std::vector<Task>& tasks, const std::vector<std::pair<double, double>>& idle, Replay& r) {
  std::vector<size_t> comm;
  for (size_t k = 0; k < tasks.size(); ++k)
    if (tasks[k].stream == Stream::comm) comm.push_back(k);
  size_t first = 0;
  for (auto [from, to] : idle) {
    if (to <= from) continue;
    while (first < comm.size() && r.end[comm[first]] <= from) ++first;
    for (size_t c = first; c < comm.size() && r.start[comm[c]] < to; ++c) {
      const size_t k = comm[c];
      double o = std::min(to, r.end[k]) - std::max(from, r.start[k]);
      if (o > 0) r.exposed_by_kind[tasks[k].kind] += o;
    }
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
  attribute(tasks, idle, r);
  return r;
}

}  // namespace hpcbench::predict
