#include "strategies/pipeline/timeline.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"

namespace hpcbench::strategies::pipeline {

Bubble measure_bubble(const StageTimeline& t) {
  Bubble b;
  b.window = std::max(0.0, t.end - t.begin);
  std::vector<Span> spans;
  for (auto s : t.busy) {
    s.begin = std::max(s.begin, t.begin);
    s.end = std::min(s.end, t.end);
    if (s.end > s.begin) spans.push_back(s);
  }
  std::sort(spans.begin(), spans.end(), [](const Span& x, const Span& y) { return x.begin < y.begin; });
  double covered_to = -std::numeric_limits<double>::infinity();
  for (auto& s : spans) {
    double from = std::max(s.begin, covered_to);
    if (s.end > from) b.busy += s.end - from;
    covered_to = std::max(covered_to, s.end);
  }
  return b;
}

Simulation simulate(const SimulationInput& in) {
  const int stages = static_cast<int>(in.forward.size());
  if (stages < 1 || in.backward.size() != in.forward.size())
    fail("pipeline simulation: {} forward and {} backward times; give one of each per stage", in.forward.size(),
         in.backward.size());
  for (int s = 0; s < stages; ++s)
    if (!(in.forward[size_t(s)] >= 0) || !(in.backward[size_t(s)] >= 0))
      fail("pipeline simulation: stage {} has compute times {} / {}; they must be finite and not negative", s,
           in.forward[size_t(s)], in.backward[size_t(s)]);
  if (!(in.p2p >= 0) || !std::isfinite(in.p2p)) fail("pipeline simulation: transfer time {} is not a time", in.p2p);
  const int m = in.micro;
  Simulation out;
  const double never = -1;
  // When each forward / backward of each micro-batch ended, per stage.
  std::vector<std::vector<double>> f_end(size_t(stages), std::vector<double>(size_t(m), never)),
      b_end = f_end;
  std::vector<size_t> next(size_t(stages), 0);
  std::vector<double> free_at(size_t(stages), 0);
  for (int s = 0; s < stages; ++s) out.order.push_back(stage_order(in.kind, s, stages, m));
  out.spans.resize(size_t(stages));
  size_t left = 0;
  for (auto& o : out.order) left += o.size();
  while (left > 0) {
    bool progressed = false;
    for (int s = 0; s < stages; ++s) {
      auto& order = out.order[size_t(s)];
      while (next[size_t(s)] < order.size()) {
        const auto a = order[next[size_t(s)]];
        double ready = 0;
        if (a.type == Action::Forward) {
          if (s > 0) {
            double up = f_end[size_t(s - 1)][size_t(a.micro)];
            if (up == never) break;
            ready = up + in.p2p;
          }
        } else if (s + 1 < stages) {
          double down = b_end[size_t(s + 1)][size_t(a.micro)];
          if (down == never) break;
          ready = down + in.p2p;
        } else {
          ready = f_end[size_t(s)][size_t(a.micro)];  // the last stage's own forward
        }
        const double start = std::max(ready, free_at[size_t(s)]);
        const double end =
            start + (a.type == Action::Forward ? in.forward[size_t(s)] : in.backward[size_t(s)]);
        (a.type == Action::Forward ? f_end : b_end)[size_t(s)][size_t(a.micro)] = end;
        free_at[size_t(s)] = end;
        out.spans[size_t(s)].push_back({start, end});
        ++next[size_t(s)];
        --left;
        progressed = true;
      }
    }
    if (!progressed) fail("internal: the {} schedule deadlocked in simulation", schedule_name(in.kind));
  }
  for (double t : free_at) out.makespan = std::max(out.makespan, t);
  for (int s = 0; s < stages; ++s) out.stages.push_back({0, out.makespan, out.spans[size_t(s)]});
  return out;
}

}  // namespace hpcbench::strategies::pipeline
