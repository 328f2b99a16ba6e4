#pragma once
// What the report shows: the Comparison and the published figures laid out
// as tables (table.h) and assembled into the terminal text, report.md and
// report.csv.
#include <string>
#include <vector>

#include "report/compare.h"
#include "report/efficiency.h"
#include "report/reference.h"
#include "report/table.h"

namespace hpcbench::report {

// "GPUs" when any row ran on an accelerator (or none states its device),
// "devices" when every run was on CPU.
std::string device_word(const Comparison& c);

// Human cells: rounded, memory in MiB, efficiencies in percent, "n/c" where
// the run does not compare with the baseline, "-" where there is no figure
// (status not ok, no baseline, not measured). With baselines for several
// devices a "base run" column says which one each row is divided by.
Table comparison_table(const Comparison& c);
// Machine cells: full precision, bytes, fractions; "n/c" and "" as above.
Table comparison_csv_table(const Comparison& c);
// The columns that answer the question, narrow enough for a 120-column
// terminal: configuration (with its status where not ok), devices,
// throughput and speedup with their intervals, efficiency, memory per
// device and the largest cause of lost efficiency (from `efficiency`).
Table headline_table(const Comparison& c, const std::vector<EfficiencyRow>& efficiency);
// Published figures, with their source.
Table reference_table(const Comparison& c);

// One line per baseline naming it and what it fixes (the chosen one first,
// then those of other devices), or one saying there is none.
std::vector<std::string> baseline_lines(const Comparison& c);

// Every verdict, then the ranking (report.md, --wide).
std::vector<std::string> significance_lines(const Comparison& c);

// Baseline line, table, then one "warning: ..." line per warning and the
// significance lines. By default the headline table, the ranking and only
// the significant pairs, every line but the tables' wrapped to 120 columns;
// `wide`: the full table and every pair (`report --wide`).
std::string terminal_report(const Comparison& c, const std::vector<ReferenceSet>& references, bool wide = false);
// `plots`: image files beside report.md to show (may be empty).
std::string markdown_report(const Comparison& c, const std::vector<ReferenceSet>& references,
                            const std::vector<std::string>& plots);
std::string csv_report(const Comparison& c);

}  // namespace hpcbench::report
