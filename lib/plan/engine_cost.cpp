#include "plan/engine_cost.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>

#include "core/bounded_read.h"
#include "core/error.h"
#include "core/split.h"

namespace hpcbench::plan {

namespace {

const std::vector<std::string> kColumns = {"device_name", "strategy", "precision",      "batch",
                                           "engine",      "step_ms",  "step_ms_stddev", "run"};
const std::set<std::string> kEngines = {"eager", "graph", "fused", "graph+fused"};

double number(const std::string& text, const std::string& where, const std::string& column) {
  size_t used = 0;
  double v = std::numeric_limits<double>::quiet_NaN();
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
  }
  if (used != text.size() || !std::isfinite(v) || v < 0)
    fail("{}: {} '{}' is not a finite non-negative number", where, column, text);
  return v;
}

EngineStep parse_row(const std::vector<std::string>& f, const std::string& where) {
  EngineStep s{f[0], f[1], f[2], f[4], 0, number(f[5], where, "step_ms"), number(f[6], where, "step_ms_stddev"), f[7]};
  const double batch = number(f[3], where, "batch");
  if (batch < 1 || batch != std::floor(batch)) fail("{}: batch '{}' is not a positive whole number", where, f[3]);
  s.batch = static_cast<int64_t>(batch);
  if (!kEngines.contains(s.engine))
    fail("{}: engine '{}' is not one of eager, graph, fused, graph+fused", where, s.engine);
  if (!(s.step_ms > 0)) fail("{}: step_ms must be above 0", where);
  return s;
}

// The steps recorded for one side at one batch: their mean and the band
// the repeats (or one run's own scatter) span.
struct Side {
  double mean = 0, low = 0, high = 0;
  int runs = 0;
};

Side side(const EngineSteps& t, const EngineKey& k, int64_t batch, const std::string& engine) {
  Side s{0, std::numeric_limits<double>::infinity(), 0, 0};
  double sd = 0;
  for (auto& r : t.rows)
    if (r.device_name == k.device_name && r.strategy == k.strategy && r.precision == k.precision &&
        r.batch == batch && r.engine == engine) {
      ++s.runs;
      s.mean += r.step_ms;
      s.low = std::min(s.low, r.step_ms);
      s.high = std::max(s.high, r.step_ms);
      sd = r.step_ms_stddev;
    }
  if (s.runs == 0) return s;
  s.mean /= s.runs;
  if (s.runs == 1) s.low = std::max(s.mean - sd, s.mean * 1e-3), s.high = s.mean + sd;
  return s;
}

EngineRatio at_batch(const EngineSteps& t, const EngineKey& k, int64_t batch, const std::string& from,
                     const std::string& to) {
  auto a = side(t, k, batch, from), b = side(t, k, batch, to);
  EngineRatio r;
  if (a.runs == 0 || b.runs == 0) {
    r.missing = "?";
    return r;
  }
  r.ratio = b.mean / a.mean;
  r.low = b.low / a.high;
  r.high = b.high / a.low;
  return r;
}

}  // namespace

EngineSteps read_engine_steps(const std::string& path) {
  // The one reader: a FIFO or /dev/zero given here is refused, not waited on.
  std::istringstream in(read_flag_file("--engine-ratios", path, file_limit::kConfig));
  EngineSteps t{path, {}};
  std::string line;
  int n = 0;
  bool header = false;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty() || line.starts_with("#")) continue;
    auto f = split(line);
    const auto where = fmt::format("--engine-ratios {} line {}", path, n);
    if (!header) {
      if (f != kColumns) fail("{}: the header must be {}", where, fmt::join(kColumns, ","));
      header = true;
      continue;
    }
    if (f.size() != kColumns.size()) fail("{}: {} fields where the header has {}", where, f.size(), kColumns.size());
    t.rows.push_back(parse_row(f, where));
  }
  if (!header) fail("--engine-ratios {}: no header ({})", path, fmt::join(kColumns, ","));
  return t;
}

EngineRatio engine_ratio(const EngineSteps& steps, const EngineKey& key, const std::string& from,
                         const std::string& to) {
  if (from == to) return {};
  // The batches where both sides are recorded.
  std::vector<std::pair<int64_t, EngineRatio>> known;
  std::set<int64_t> batches;
  for (auto& r : steps.rows) batches.insert(r.batch);
  for (int64_t b : batches)
    if (auto r = at_batch(steps, key, b, from, to); r.missing.empty()) known.emplace_back(b, r);
  for (size_t i = 0; i < known.size(); ++i) {
    if (known[i].first == key.batch) return known[i].second;
    if (i + 1 < known.size() && known[i].first < key.batch && key.batch < known[i + 1].first) {
      const auto& [b0, r0] = known[i];
      const auto& [b1, r1] = known[i + 1];
      const double w = std::log2(static_cast<double>(key.batch) / static_cast<double>(b0)) /
                       std::log2(static_cast<double>(b1) / static_cast<double>(b0));
      auto mix = [&](double x0, double x1) { return x0 + w * (x1 - x0); };
      return {mix(r0.ratio, r1.ratio), mix(r0.low, r1.low), mix(r0.high, r1.high), ""};
    }
  }
  EngineRatio r;
  r.missing = fmt::format("{} {} {} against {} at batch {} on {}", key.strategy, key.precision, to, from, key.batch,
                          key.device_name.empty() ? "an unnamed device" : key.device_name);
  return r;
}

std::vector<EnginePolicy> engine_settings(const EnginePolicy& base, const std::string& precision,
                                          const std::string& device_kind) {
  if (device_kind != "cuda") return {base};
  std::vector<EnginePolicy> out;
  for (std::string name : {"eager", "graph", "fused", "graph+fused"}) {
    auto e = EnginePolicy::recorded(precision, name.find("fused") != std::string::npos, name);
    e.reason = "searched by plan";
    out.push_back(e);
  }
  return out;
}

}  // namespace hpcbench::plan
