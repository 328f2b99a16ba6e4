#include "results/steps.h"

#include <fmt/format.h>

#include <cmath>

#include "core/bounded_read.h"
#include "core/error.h"
#include "results/run_reader.h"
#include "results/csv.h"

namespace hpcbench::results {

namespace fs = std::filesystem;

const char* phase_name(Phase p) {
  static constexpr const char* names[] = {"data", "forward", "backward", "grad_sync", "optimizer"};
  return names[static_cast<size_t>(p)];
}

namespace {

std::string ms_key(size_t p) { return std::string(phase_name(Phase(p))) + "_ms"; }
std::string exposed_key(size_t p) { return std::string(phase_name(Phase(p))) + "_exposed_ms"; }

double number(const nlohmann::json& j, const std::string& key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

}  // namespace

nlohmann::json steps_json(const std::vector<StepRecord>& steps) {
  auto out = nlohmann::json::array();
  for (auto& r : steps) {
    const auto& t = r.times;
    nlohmann::json j = {{"step", r.step}, {"epoch", r.epoch}, {"loss", r.loss}, {"lr", r.lr},
                        {"ms", t.ms}, {"comm_ms", t.comm_ms}, {"comm_exposed_ms", t.comm_exposed_ms},
                        {"collectives", t.collectives}, {"comm_untimed", t.comm_untimed}, {"samples", r.samples},
                        {"grad_norm", r.grad_norm}, {"skipped", r.skipped}};
    for (size_t p = 0; p < kPhases; ++p) {
      j[ms_key(p)] = t.phase_ms[p];
      j[exposed_key(p)] = t.phase_exposed_ms[p];
    }
    if (r.bubble >= 0) j["bubble"] = r.bubble;
    out.push_back(std::move(j));
  }
  return out;
}

std::vector<StepRecord> steps_from_json(const nlohmann::json& steps) {
  std::vector<StepRecord> out;
  if (!steps.is_array()) return out;
  for (auto& j : steps) {
    StepRecord r;
    r.step = static_cast<int64_t>(number(j, "step"));
    r.epoch = static_cast<int64_t>(number(j, "epoch"));
    r.loss = number(j, "loss");
    r.lr = number(j, "lr");
    r.grad_norm = number(j, "grad_norm");
    r.skipped = j.value("skipped", false);
    r.samples = static_cast<int64_t>(number(j, "samples"));
    r.bubble = j.contains("bubble") && j["bubble"].is_number() ? j["bubble"].get<double>() : -1.0;
    auto& t = r.times;
    t.ms = number(j, "ms");
    t.comm_ms = number(j, "comm_ms");
    t.comm_exposed_ms = number(j, "comm_exposed_ms");
    t.collectives = static_cast<int>(number(j, "collectives"));
    t.comm_untimed = static_cast<int>(number(j, "comm_untimed"));
    for (size_t p = 0; p < kPhases; ++p) {
      t.phase_ms[p] = number(j, ms_key(p));
      t.phase_exposed_ms[p] = number(j, exposed_key(p));
    }
    out.push_back(r);
  }
  return out;
}

std::string loss_csv(const std::vector<StepRecord>& steps) {
  std::string out = "step,epoch,loss,lr,ms\n";
  for (auto& s : steps) out += fmt::format("{},{},{:.6g},{:.6g},{:.4f}\n", s.step, s.epoch, s.loss, s.lr, s.times.ms);
  return out;
}

StepSeries read_step_series(const fs::path& origin) {
  StepSeries s;
  fs::path file = origin.parent_path() / "loss.csv";
  std::error_code ec;
  if (!fs::is_regular_file(file, ec)) return s;
  try {
    auto records = parse_csv(read_file_bounded(file, kMaxRunJsonBytes));
    if (records.empty()) return s;
    auto col = [&](const std::string& name) {
      auto it = std::find(records[0].begin(), records[0].end(), name);
      return it == records[0].end() ? -1 : static_cast<int>(it - records[0].begin());
    };
    int ms = col("ms"), loss = col("loss"), step = col("step");
    if (ms < 0 || loss < 0 || step < 0) return {};
    for (size_t i = 1; i < records.size(); ++i) {
      s.ms.push_back(std::stod(records[i].at(static_cast<size_t>(ms))));
      // A step time no step takes is a damaged file, not a series to test.
      if (!std::isfinite(s.ms.back()) || s.ms.back() < 0 || s.ms.back() > 1e9) return {};
      s.loss.push_back(std::stod(records[i].at(static_cast<size_t>(loss))));
      s.step.push_back(std::stoll(records[i].at(static_cast<size_t>(step))));
    }
  } catch (const Interrupted&) {
    throw;
  } catch (const std::exception&) {
    return {};  // a series is a check's input, never a reason to refuse a report
  }
  return s;
}

nlohmann::json rank_timing_json(const std::vector<RankTiming>& ranks) {
  auto out = nlohmann::json::array();
  for (auto& r : ranks) {
    nlohmann::json j = {{"rank", r.rank}, {"step_ms", r.step_ms}};
    for (size_t p = 0; p < kPhases; ++p) {
      j[ms_key(p)] = r.phase_ms[p];
      j[exposed_key(p)] = r.phase_exposed_ms[p];
    }
    j["comm_ms"] = r.comm_ms;
    j["comm_exposed_ms"] = r.comm_exposed_ms;
    out.push_back(std::move(j));
  }
  return out;
}

namespace {

// A rank's figure as recorded: a finite number no step exceeds.
// Missing, null (NaN when written) or absurd: nothing is known of the rank,
// and a 0 in its place would read as a rank that did no work (so the others
// "waited for it" the whole step).
std::optional<double> rank_figure(const nlohmann::json& j, const std::string& key) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  if (!std::isfinite(v) || std::fabs(v) > 1e9) return std::nullopt;
  return v;
}

}  // namespace

std::optional<std::vector<RankTiming>> read_rank_timing(const fs::path& origin) {
  fs::path json = origin.filename() == "run.json" ? origin : origin.parent_path() / "run.json";
  std::error_code ec;
  if (origin.empty() || !fs::exists(json, ec)) return std::nullopt;
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(read_file_bounded(json, kMaxRunJsonBytes), nullptr, false);
  } catch (const Interrupted&) {
    throw;
  } catch (const std::exception&) {
    return std::nullopt;  // the run's row says why, where the file is read for it
  }
  if (!j.is_object() || !j.contains("rank_timing_ms") || !j["rank_timing_ms"].is_array() ||
      j["rank_timing_ms"].empty() || j["rank_timing_ms"].size() > (size_t{1} << 20))
    return std::nullopt;
  std::vector<RankTiming> out;
  const auto& ranks = j["rank_timing_ms"];
  for (auto& x : ranks) {
    if (!x.is_object()) return std::nullopt;
    RankTiming r;
    auto rank = rank_figure(x, "rank");
    auto step = rank_figure(x, "step_ms");
    auto comm = rank_figure(x, "comm_ms"), exposed = rank_figure(x, "comm_exposed_ms");
    // Every rank once, in rank order, each with every figure: a partial
    // table would decompose the step of ranks that are not there.
    if (!rank || *rank != static_cast<double>(out.size()) || !step || *step < 0 || !comm || !exposed)
      return std::nullopt;
    r.rank = static_cast<int>(*rank);
    r.step_ms = *step;
    r.comm_ms = *comm;
    r.comm_exposed_ms = *exposed;
    for (size_t p = 0; p < kPhases; ++p) {
      auto ms = rank_figure(x, ms_key(p)), ex = rank_figure(x, exposed_key(p));
      if (!ms || !ex) return std::nullopt;
      r.phase_ms[p] = *ms;
      r.phase_exposed_ms[p] = *ex;
    }
    out.push_back(r);
  }
  return out;
}

}  // namespace hpcbench::results
