#pragma once
// The schedule replay written as its definition reads (predict/replay.h),
// with no care for speed: each task starts when its stream is free and what
// it waits for has ended, and every idle interval of the compute stream is
// split among the collectives by scanning all of them. The library's replay
// finds the collectives of an interval in one pass over both lists; the
// tests hold it to this one, to the last bit, on schedules where the two
// could part.
#include <algorithm>
#include <utility>
#include <vector>

#include "predict/replay.h"

namespace hpcbench::test {

inline predict::Replay replay_by_definition(const std::vector<predict::Task>& tasks) {
  using predict::Stream;
  predict::Replay r;
  r.start.resize(tasks.size());
  r.end.resize(tasks.size());
  double free[2] = {0, 0};
  std::vector<std::pair<double, double>> idle;
  for (size_t k = 0; k < tasks.size(); ++k) {
    const int s = tasks[k].stream == Stream::compute ? 0 : 1;
    double begin = free[s];
    for (auto d : tasks[k].after) begin = std::max(begin, r.end[d]);
    if (s == 0 && begin > free[0]) idle.emplace_back(free[0], begin);
    r.start[k] = begin;
    r.end[k] = free[s] = begin + tasks[k].seconds;
    (s == 0 ? r.compute : r.comm) += tasks[k].seconds;
  }
  r.makespan = std::max(free[0], free[1]);
  if (r.makespan > free[0]) idle.emplace_back(free[0], r.makespan);
  r.exposed = r.makespan - r.compute;
  for (auto [from, to] : idle)
    for (size_t k = 0; k < tasks.size(); ++k) {
      if (to <= from || tasks[k].stream != Stream::comm) continue;
      const double o = std::min(to, r.end[k]) - std::max(from, r.start[k]);
      if (o > 0) r.exposed_by_kind[tasks[k].kind] += o;
    }
  return r;
}

}  // namespace hpcbench::test
