#include "report/compare.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "core/error.h"
#include "specs/registry.h"

namespace hpcbench::report {

namespace {

std::string show(const std::string& s) { return s.empty() ? "?" : s; }
std::string show(int64_t v) { return v > 0 ? std::to_string(v) : "?"; }

template <typename T>
void check(std::vector<std::string>& why, const char* what, const T& run, const T& base) {
  // Unknown (empty, 0) on one side only is a difference; on both sides it
  // is the same unstated setting (published figures often leave some out).
  if (run != base) why.push_back(fmt::format("{} {} vs baseline {}", what, show(run), show(base)));
}

// A throughput measured on an H100 divided by one measured on an A100 (or a
// CPU) measures the hardware, not the strategy, so runs on another device
// type or model are refused like other work. An empty device name is
// unknown, not a different device: results of schema 0 and published figures
// may leave it out, and refusing on that alone would refuse every old run.
// The device type has been recorded since the first schema, so it is checked
// as strictly as the other settings. Names of different types always differ:
// the type alone says why.
void check_device(std::vector<std::string>& why, const results::RunResult& run, const results::RunResult& base) {
  if (run.device != base.device) check(why, "device", run.device, base.device);
  else if (!run.device_name.empty() && !base.device_name.empty())
    check(why, "device name", run.device_name, base.device_name);
}

std::vector<std::string> common_mismatch(const results::RunResult& run, const results::RunResult& base) {
  std::vector<std::string> why;
  check_device(why, run, base);
  check(why, "model", run.model, base.model);
  check(why, "precision", run.precision, base.precision);
  check(why, "seq length", run.seq_length, base.seq_length);
  check(why, "data", run.data, base.data);
  return why;
}

std::string join(const std::vector<std::string>& parts) { return fmt::format("{}", fmt::join(parts, "; ")); }

int strategy_rank(const std::string& s) { return strategies::spec_order(s); }

// The one-device reference strategy every speedup divides by.
bool is_reference(const std::string& s) { return s == strategies::reference_spec().name(); }

// The auto rule of choose_baseline among the runs that `eligible` admits.
template <typename Eligible>
std::optional<size_t> auto_baseline(const std::vector<results::RunResult>& runs, Eligible eligible) {
  std::optional<size_t> best;
  std::tuple<size_t, std::string> best_key;
  for (size_t i = 0; i < runs.size(); ++i) {
    const auto& c = runs[i];
    if (c.status != "ok" || results::devices(c) != 1 || !is_reference(c.strategy) || !untrusted_figures(c).empty() ||
        !eligible(c))
      continue;
    size_t followers = 0;
    for (auto& r : runs) followers += common_mismatch(r, c).empty();
    std::tuple<size_t, std::string> key{followers, c.started_at};
    if (!best || key >= best_key) best = i, best_key = key;
  }
  return best;
}

bool same_run(const results::RunResult& a, const results::RunResult& b) { return a.run_id == b.run_id && a.started_at == b.started_at; }

}  // namespace

bool same_device(const results::RunResult& a, const results::RunResult& b) {
  std::vector<std::string> why;
  check_device(why, a, b);
  return why.empty();
}

std::string strong_mismatch(const results::RunResult& run, const results::RunResult& base) {
  auto why = common_mismatch(run, base);
  check(why, "global batch", run.global_batch, base.global_batch);
  return join(why);
}

std::string weak_mismatch(const results::RunResult& run, const results::RunResult& base) {
  auto why = common_mismatch(run, base);
  check(why, "batch per device", run.batch_per_device, base.batch_per_device);
  return join(why);
}

std::string untrusted_figures(const results::RunResult& r) {
  std::vector<std::string> bad;
  for (auto [name, value] : {std::pair<const char*, double>{"samples_per_s", r.samples_per_s},
                             {"samples_per_s_per_device", r.samples_per_s_per_device},
                             {"train_time_s", r.train_time_s},
                             {"step_ms_median", r.step_ms_median}})
    if (!std::isfinite(value) || value < 0) bad.push_back(fmt::format("{} is {}", name, value));
  if (r.samples_timed < 0) bad.push_back(fmt::format("samples_timed is {}", r.samples_timed));
  return join(bad);
}

std::optional<double> throughput_ratio(const results::RunResult& run, const results::RunResult& base) {
  if (!untrusted_figures(run).empty() || !untrusted_figures(base).empty()) return std::nullopt;
  if (run.samples_per_s > 0 && base.samples_per_s > 0) return run.samples_per_s / base.samples_per_s;
  if (run.train_time_s > 0 && base.train_time_s > 0 && run.samples_timed == base.samples_timed)
    return base.train_time_s / run.train_time_s;
  return std::nullopt;
}

bool row_before(const results::RunResult& a, const results::RunResult& b) {
  return std::forward_as_tuple(strategy_rank(a.strategy), a.strategy, results::devices(a), a.started_at, a.run_id) <
         std::forward_as_tuple(strategy_rank(b.strategy), b.strategy, results::devices(b), b.started_at, b.run_id);
}

std::optional<size_t> choose_baseline(const std::vector<results::RunResult>& runs, const std::string& spec) {
  if (spec != "auto") {
    for (size_t i = 0; i < runs.size(); ++i)
      if (runs[i].run_id == spec) {
        if (runs[i].status != "ok") fail("--baseline {}: that run's status is {}, not ok", spec, runs[i].status);
        if (auto bad = untrusted_figures(runs[i]); !bad.empty())
          fail("--baseline {}: {}; no speedup can be divided by it", spec, bad);
        return i;
      }
    std::vector<std::string> ids;
    for (auto& r : runs) ids.push_back(r.run_id);
    fail("--baseline {}: no such run among those read ({})", spec, fmt::join(ids, ", "));
  }
  return auto_baseline(runs, [](const results::RunResult&) { return true; });
}

std::vector<std::pair<std::string, std::string>> work_fields(const results::RunResult& r) {
  return {{"strategy", r.strategy},
          {"strategy options", r.strategy_options},
          {"nodes", std::to_string(r.nodes)},
          {"GPUs per node", std::to_string(r.gpus_per_node)},
          {"world size", std::to_string(r.world_size)},
          {"device", r.device},
          {"device name", r.device_name},
          {"precision", r.precision},
          {"model", r.model},
          {"seq length", std::to_string(r.seq_length)},
          {"data", r.data},
          {"batch per device", std::to_string(r.batch_per_device)},
          {"global batch", std::to_string(r.global_batch)},
          {"grad accum", std::to_string(r.grad_accum)},
          {"activation checkpointing", r.activation_checkpointing ? "on" : "off"},
          // The engine too: a graphed or fused run is not a repeat of an eager one.
          {"CUDA graph", r.cuda_graph.starts_with("captured") ? "captured" : "not captured"},
          {"fused", r.fused ? "on" : "off"}};
}

std::string configuration_key(const results::RunResult& r) {
  std::string key;
  for (auto& [name, value] : work_fields(r)) key += value + "|";
  return key;
}

namespace {

// run.json's settings that do not change the work a step does: where the
// results go, what is logged or sampled, how many steps, the optimizer's
// numbers, evaluation (outside the timed steps), and those the result's own
// fields already hold (work_fields). Every other recorded setting does
// (cuda_graph, fused, threads, dropout, clipping, a strategy's TOML options,
// and any added later), so runs that differ in one are not repeats.
const std::set<std::string>& not_work() {
  static const std::set<std::string> keys = {
      "run.name", "run.results_dir", "run.tensorboard", "run.eval_batch_size", "run.device",
      "timing.log_every", "timing.sample_ms", "timing.peak_tflops", "timing.warmup_steps",
      "data.cache_dir", "data.eval", "data.vocab", "data.train", "data.synthetic_samples",
      "data.max_seq_length", "model.name", "model.checkpoint", "train.seed", "train.epochs",
      "train.max_steps", "train.lr", "train.weight_decay", "train.adam_beta1", "train.adam_beta2",
      "train.adam_eps", "train.warmup_ratio", "train.strategy", "train.precision", "train.batch_size",
      "train.grad_accum", "train.activation_checkpointing"};
  return keys;
}

// Recorded settings that change the work and differ between a and b, as
// "key x vs y". A setting one run does not record (a summary.csv row, an
// older version) is unknown there, not a difference.
std::vector<std::string> setting_differences(const std::map<std::string, std::string>& a,
                                             const std::map<std::string, std::string>& b) {
  std::vector<std::string> out;
  for (auto& [k, v] : a) {
    if (not_work().count(k)) continue;
    auto it = b.find(k);
    if (it != b.end() && it->second != v) out.push_back(fmt::format("{} {} vs {}", k, v, it->second));
  }
  return out;
}

std::vector<std::string> field_differences(const results::RunResult& a, const results::RunResult& b) {
  std::vector<std::string> out;
  auto fa = work_fields(a), fb = work_fields(b);
  for (size_t i = 0; i < fa.size(); ++i)
    if (fa[i].second != fb[i].second)
      out.push_back(fmt::format("{} {} vs {}", fa[i].first, show(fa[i].second), show(fb[i].second)));
  return out;
}

}  // namespace

std::string row_name(const ComparisonRow& row) {
  const auto& rs = row.repeats;
  if (rs.size() <= 1) return row.run.run_id;
  if (!rs.front().repeat_group.empty() &&
      std::all_of(rs.begin(), rs.end(), [&](auto& r) { return r.repeat_group == rs.front().repeat_group; }))
    return rs.front().repeat_group;
  return fmt::format("{} +{}", row.run.run_id, rs.size() - 1);
}

bool has_repeats(const Comparison& c) {
  return std::any_of(c.rows.begin(), c.rows.end(), [](auto& r) { return r.repeats.size() > 1; });
}

namespace {

std::vector<double> throughputs(const std::vector<results::RunResult>& rs) {
  std::vector<double> v;
  for (auto& r : rs)
    if (r.samples_per_s > 0) v.push_back(r.samples_per_s);
  return v;
}

double geometric_mean(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += std::log(x);
  return v.empty() ? 0 : std::exp(sum / static_cast<double>(v.size()));
}

// Every pair of rows doing the same work, faster first (by the geometric
// mean the test compares, so that its ratio is at least 1).
std::vector<Verdict> verdicts(const std::vector<ComparisonRow>& rows) {
  std::vector<const ComparisonRow*> cands;
  for (auto& row : rows)
    if (row.run.status == "ok" && !throughputs(row.repeats).empty()) cands.push_back(&row);
  std::stable_sort(cands.begin(), cands.end(), [](auto* a, auto* b) {
    return geometric_mean(throughputs(a->repeats)) > geometric_mean(throughputs(b->repeats));
  });
  std::vector<Verdict> out;
  for (size_t i = 0; i < cands.size(); ++i)
    for (size_t j = i + 1; j < cands.size(); ++j) {
      const auto &a = *cands[i], &b = *cands[j];
      if (!strong_mismatch(a.run, b.run).empty()) continue;
      Verdict v;
      v.faster = row_name(a);
      v.slower = row_name(b);
      v.devices = results::devices(a.run);
      v.slower_devices = results::devices(b.run);
      auto ta = throughputs(a.repeats), tb = throughputs(b.repeats);
      v.faster_runs = ta.size();
      v.slower_runs = tb.size();
      v.test = stats::welch_log_test(ta, tb, 1 - kVerdictAlpha);
      v.significant = v.test.defined && v.test.p < kVerdictAlpha && v.test.ratio.lo > 1;
      out.push_back(v);
    }
  return out;
}

}  // namespace

std::vector<std::string> ranking_lines(const Comparison& c) {
  std::vector<std::string> out;
  std::map<int64_t, std::vector<std::string>> order;  // names by throughput, per devices
  for (auto& v : c.verdicts) {
    if (v.devices != v.slower_devices) continue;
    auto& names = order[v.devices];
    for (auto* n : {&v.faster, &v.slower})
      if (std::find(names.begin(), names.end(), *n) == names.end()) names.push_back(*n);
  }
  for (auto& [n, names] : order) {
    std::string line = fmt::format("{} device{}: {}", n, n == 1 ? "" : "s", names.front());
    for (size_t i = 1; i < names.size(); ++i) {
      bool sig = false;
      for (auto& v : c.verdicts)
        if (v.devices == n && v.slower_devices == n && v.faster == names[i - 1] && v.slower == names[i])
          sig = v.significant;
      line += fmt::format(" {} {}", sig ? ">" : "~", names[i]);
    }
    out.push_back(line);
  }
  return out;
}

namespace {

// Runs grouped into rows: each group's runs (indices into what was loaded),
// its work settings, the run that stands for it (the median throughput's,
// with the medians) and its runs sorted by throughput.
struct Groups {
  std::vector<std::vector<size_t>> members;
  std::vector<std::map<std::string, std::string>> settings;
  std::vector<results::LoadedRun> runs;
  std::vector<std::vector<results::RunResult>> group_runs;

  // The group `r` is a member of.
  std::optional<size_t> group_of(const results::RunResult& r) const {
    for (size_t g = 0; g < group_runs.size(); ++g)
      for (auto& m : group_runs[g])
        if (same_run(m, r)) return g;
    return std::nullopt;
  }
};

// Repeats of one configuration become one row (status-ok runs only: a
// failed run stays a row of its own): the same work settings, those of the
// result (configuration_key) and those run.json records (a setting one
// side does not record is unknown, not a difference).
Groups group_repeats(const std::vector<results::LoadedRun>& loaded) {
  Groups out;
  auto& groups = out.members;
  auto& group_settings = out.settings;
  std::map<std::string, std::vector<size_t>> by_key;
  for (size_t i = 0; i < loaded.size(); ++i) {
    const auto& r = loaded[i].result;
    // Neither may a run whose figures cannot be trusted join a median.
    if (r.status != "ok" || !untrusted_figures(r).empty()) {
      groups.push_back({i});
      group_settings.emplace_back();
      continue;
    }
    auto& same_key = by_key[configuration_key(r)];
    auto g = std::find_if(same_key.begin(), same_key.end(), [&](size_t k) {
      return setting_differences(group_settings[k], loaded[i].settings).empty();
    });
    if (g == same_key.end()) {
      same_key.push_back(groups.size());
      groups.push_back({i});
      group_settings.push_back(loaded[i].settings);
      continue;
    }
    groups[*g].push_back(i);
    group_settings[*g].insert(loaded[i].settings.begin(), loaded[i].settings.end());
  }
  for (auto& g : groups) {
    std::vector<results::RunResult> rs;
    for (size_t i : g) rs.push_back(loaded[i].result);
    std::stable_sort(rs.begin(), rs.end(), [](auto& a, auto& b) { return a.samples_per_s < b.samples_per_s; });
    size_t mid = (rs.size() - 1) / 2;
    results::RunResult rep = rs[mid];
    if (rs.size() > 1) {
      std::vector<double> tp, per;
      for (auto& r : rs) tp.push_back(r.samples_per_s), per.push_back(r.samples_per_s_per_device);
      rep.samples_per_s = stats::median(tp);
      rep.samples_per_s_per_device = stats::median(per);
    }
    size_t origin = g[0];
    for (size_t i : g)
      if (same_run(loaded[i].result, rs[mid])) origin = i;
    out.runs.push_back({rep, loaded[origin].origin, loaded[origin].settings});
    out.group_runs.push_back(std::move(rs));
  }
  return out;
}

// Runs of one strategy on one shape and batch that are not repeats of each
// other: the setting that kept them apart, which the table does not show,
// is named, so that two rows alike in every column do not look like a
// mistake, nor a reader take them for one configuration measured twice.
void note_near_repeats(const Groups& g, std::vector<std::string>& notes) {
  for (size_t a = 0; a < g.members.size(); ++a)
    for (size_t b = a + 1; b < g.members.size(); ++b) {
      const auto &ra = g.runs[a].result, &rb = g.runs[b].result;
      if (ra.status != "ok" || rb.status != "ok" || !untrusted_figures(ra).empty() ||
          !untrusted_figures(rb).empty() || ra.strategy != rb.strategy || ra.strategy_options != rb.strategy_options ||
          ra.nodes != rb.nodes || ra.gpus_per_node != rb.gpus_per_node || ra.world_size != rb.world_size ||
          ra.global_batch != rb.global_batch || ra.batch_per_device != rb.batch_per_device)
        continue;
      auto why = field_differences(ra, rb);
      for (auto& d : setting_differences(g.settings[a], g.settings[b])) why.push_back(d);
      if (why.empty() || why.size() > 3) continue;
      notes.push_back(fmt::format("{} and {} ({} on {} device(s)) are not repeats of one configuration: {}",
                                  ra.run_id, rb.run_id, ra.strategy, results::devices(ra), join(why)));
    }
}

// The row against its baseline: whether they compare (strong, weak scaling),
// the speedup and efficiencies with their intervals, and the memory ratio.
void compare_to_baseline(ComparisonRow& row, const Groups& groups) {
  const results::RunResult& r = row.run;
  const results::RunResult& b = *row.baseline;
  const auto tp = throughputs(row.repeats);
  row.is_baseline = same_run(r, b);
  row.strong_mismatch = strong_mismatch(r, b);
  row.weak_mismatch = weak_mismatch(r, b);
  auto ratio = throughput_ratio(r, b);
  if (!ratio) {
    auto bad_run = untrusted_figures(r), bad_base = untrusted_figures(b);
    bool untrusted = !bad_run.empty() || !bad_base.empty();
    std::string why = !bad_run.empty()    ? bad_run + ": not a figure to divide"
                      : !bad_base.empty() ? "the baseline's " + bad_base + ": not a figure to divide"
                                          : "no throughput or training time to compare";
    // An untrusted figure is the first thing to say, whatever else differs.
    if (untrusted || row.strong_mismatch.empty()) row.strong_mismatch = why;
    if (untrusted || row.weak_mismatch.empty()) row.weak_mismatch = why;
  }
  double scale = static_cast<double>(results::devices(r)) / static_cast<double>(results::devices(b));
  if (row.strong_mismatch.empty()) {
    row.speedup = *ratio;
    row.efficiency = *ratio / scale;
    auto bg = groups.group_of(b);
    auto tb = bg ? throughputs(groups.group_runs[*bg]) : std::vector<double>{};
    if (!row.is_baseline && !tp.empty() && !tb.empty()) {
      row.speedup_ci = stats::ratio_interval(tp, tb);
      stats::Interval e = *row.speedup_ci;
      e.point /= scale, e.lo /= scale, e.hi /= scale;
      row.efficiency_ci = e;
    }
  }
  if (row.weak_mismatch.empty() && ratio) {
    if (r.samples_per_s_per_device > 0 && b.samples_per_s_per_device > 0)
      row.weak_efficiency = r.samples_per_s_per_device / b.samples_per_s_per_device;
    else
      row.weak_efficiency = *ratio / scale;
  }
  // Memory per device is the point of sharding strategies under strong
  // scaling too, where the per-device batch shrinks: either kind of
  // comparability will do.
  if ((row.strong_mismatch.empty() || row.weak_mismatch.empty()) && r.peak_memory_bytes > 0 &&
      b.peak_memory_bytes > 0)
    row.memory_ratio = static_cast<double>(r.peak_memory_bytes) / static_cast<double>(b.peak_memory_bytes);
}

// One row per group, each against its baseline: the chosen one, or for a
// run on another device that device's own (picked once per device).
std::vector<ComparisonRow> rows_of(const Groups& groups, const std::optional<results::RunResult>& baseline) {
  std::vector<ComparisonRow> rows;
  std::vector<results::RunResult> results;
  for (auto& lr : groups.runs) results.push_back(lr.result);
  // The choice depends on the device alone, and costs runs² comparisons.
  std::map<std::pair<std::string, std::string>, std::optional<size_t>> device_baseline;
  for (size_t gi = 0; gi < groups.runs.size(); ++gi) {
    const auto& lr = groups.runs[gi];
    ComparisonRow row;
    row.run = lr.result;
    row.repeats = groups.group_runs[gi];
    row.origin = lr.origin.string();
    const results::RunResult& r = row.run;
    if (baseline) {
      row.baseline = baseline;
      // A CPU baseline and a GPU baseline in one folder each serve their
      // own device's runs; a run whose device has none is refused against
      // the chosen one, with the device as the reason.
      if (!same_device(r, *baseline)) {
        auto [it, added] = device_baseline.try_emplace({r.device, r.device_name});
        if (added) it->second = auto_baseline(results, [&](const results::RunResult& c) { return same_device(c, r); });
        if (it->second) row.baseline = results[*it->second];
      }
    }
    auto tp = throughputs(row.repeats);
    if (r.status == "ok" && !tp.empty()) row.throughput_ci = stats::median_interval(tp);
    if (row.baseline && r.status == "ok") compare_to_baseline(row, groups);
    rows.push_back(std::move(row));
  }
  return rows;
}

// What the table alone would not say: the other devices' baselines, rows
// without a speedup, strategies on one device, no baseline at all.
void explain(Comparison& out, const std::optional<results::RunResult>& baseline) {
  for (auto& row : out.rows) {
    if (!row.baseline || same_run(*row.baseline, *baseline)) continue;
    auto& listed = out.device_baselines;
    if (std::none_of(listed.begin(), listed.end(), [&](auto& b) { return same_run(b, *row.baseline); }))
      listed.push_back(*row.baseline);
  }
  for (auto& row : out.rows)
    if (!row.strong_mismatch.empty())
      out.warnings.push_back(fmt::format("{}: no speedup against baseline {}: {}", row.run.run_id,
                                         row.baseline->run_id, row.strong_mismatch));
  // A strategy on one device (one GPU: `hpcbench main` runs each at world
  // size 1) has no scaling to show; its "speedup" is its overhead.
  std::vector<std::string> single;
  for (auto& row : out.rows)
    if (row.speedup && !row.is_baseline && !is_reference(row.run.strategy) && results::devices(row.run) == 1)
      single.push_back(row.run.run_id);
  if (!single.empty())
    out.notes.push_back(fmt::format(
        "{} ran on one device (world size 1): the speedup is the baseline's step time over the strategy's on "
        "the same device, i.e. the strategy's overhead, not a scaling figure",
        fmt::join(single, ", ")));
  if (!baseline && !out.rows.empty())
    out.warnings.push_back(
        "no baseline: no run with world size 1, strategy baseline and status ok among those read; "
        "speedups are not computed (give --baseline RUN_ID)");
}

}  // namespace

Comparison compare(const std::vector<results::LoadedRun>& loaded, const std::optional<results::RunResult>& chosen) {
  Comparison out;
  const auto groups = group_repeats(loaded);
  note_near_repeats(groups, out.notes);
  // The baseline chosen among single runs stands for its configuration's row.
  std::optional<results::RunResult> baseline = chosen;
  if (chosen)
    if (auto g = groups.group_of(*chosen)) baseline = groups.runs[*g].result;
  out.baseline = baseline;
  out.rows = rows_of(groups, baseline);
  std::stable_sort(out.rows.begin(), out.rows.end(),
                   [](const ComparisonRow& a, const ComparisonRow& b) { return row_before(a.run, b.run); });
  out.verdicts = verdicts(out.rows);
  explain(out, baseline);
  return out;
}

}  // namespace hpcbench::report
