#pragma once
// Replays a step's schedule: compute on one stream, collectives on another
// (NCCL's stream; on Gloo the background thread), each stream running its
// tasks in issue order, a task starting when its stream is free and the
// tasks it waits for have ended. What the step costs beyond its compute is
// the time the compute stream stood waiting: the exposed communication.
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "specs/schedule.h"

namespace hpcbench::predict {

// The tasks a strategy's spec issued (specs/schedule.h), collectives
// costed.
using strategies::Stream;
using strategies::Task;

struct Replay {
  std::vector<double> start, end;
  double makespan = 0;      // the step ends when both streams are done
  double compute = 0;       // sum of compute tasks
  double comm = 0;          // sum of comm tasks (time a collective ran)
  double exposed = 0;       // makespan - compute: compute waited (or the step waited at its end)
  std::map<std::string, double> exposed_by_kind;  // the exposed time split by the collective that ran meanwhile
};

// Tasks in issue order; `after` may name earlier tasks only (throws
// std::invalid_argument otherwise).
Replay replay(const std::vector<Task>& tasks);

}  // namespace hpcbench::predict
