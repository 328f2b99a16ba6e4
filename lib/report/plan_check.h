#pragma once
// `report` on a sweep `hpcbench plan` wrote: each verified layout's measured
// throughput beside its prediction and the calibration's interval, and
// whether the ranking held: the rank correlation of predicted and measured,
// and whether the predicted best is among the measured top 2 (where it is
// not, whether the gap is beyond the runs' own noise).
#include <string>
#include <vector>

#include "results/plan_file.h"
#include "results/run_record.h"

namespace hpcbench::report {

struct PlanCheckRow {
  results::PlannedLayout planned;
  bool measured = false;      // a finished run (status ok) of the job
  double samples_per_s = 0;   // measured
  double step_ms = 0;         // measured (median)
  double noise = 0;           // its steps' stddev / mean (0: not recorded)
  int measured_rank = 0;      // among the measured layouts, 1 = fastest
};

struct PlanCheck {
  std::vector<PlanCheckRow> rows;  // the reference first, then in predicted rank order
  int measured = 0;                // ranked layouts with a finished run
  double spearman = 0;             // predicted against measured ranks (needs 2 or more)
  bool best_in_top2 = false;
  std::string verdict;             // one line: held, not held beyond the noise, or within it
};

// Spearman's rank correlation of two series (average ranks for ties).
double spearman(const std::vector<double>& a, const std::vector<double>& b);

PlanCheck check_plan(const results::PlanFile& plan, const std::vector<results::RunResult>& runs);
std::string plan_check_text(const results::PlanFile& plan, const PlanCheck& check);

}  // namespace hpcbench::report
