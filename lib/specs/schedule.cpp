#include "specs/schedule.h"

namespace hpcbench::strategies {

size_t StepBuilder::compute(double s, const std::string& kind, std::vector<size_t> after) {
  Task t;
  t.stream = Stream::compute;
  t.seconds = s;
  t.after = std::move(after);
  t.kind = kind;
  tasks_.push_back(std::move(t));
  return last_compute_ = tasks_.size() - 1;
}

size_t StepBuilder::collective(const std::string& op, double bytes, const Group& group) {
  Task t;
  t.stream = Stream::comm;
  if (last_compute_ != SIZE_MAX) t.after.push_back(last_compute_);
  t.kind = op;
  t.bytes = bytes;
  t.group = group;
  tasks_.push_back(std::move(t));
  outstanding_.push_back(tasks_.size() - 1);
  return tasks_.size() - 1;
}

void StepBuilder::wait_all(const std::string& kind) {
  compute(0, kind, outstanding_);
  outstanding_.clear();
}

std::vector<double> ready_times(const ModelLayout& l, double backward_s) {
  std::vector<double> ready(l.param_numel.size(), 0);
  double t = 0;
  for (size_t u = l.unit_numel.size(); u-- > 0;) {
    double dur = backward_s * l.unit_share[u];
    double done = 0;
    for (size_t k = l.param_numel.size(); k-- > 0;) {
      if (l.param_unit[k] != u) continue;
      done += static_cast<double>(l.param_numel[k]);
      ready[k] = t + dur * done / static_cast<double>(l.unit_numel[u]);
    }
    t += dur;
  }
  return ready;
}

}  // namespace hpcbench::strategies
