#include "plan/search.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <limits>
#include <map>

#include "core/error.h"
#include "predict/baseline.h"

namespace hpcbench::plan {

predict::Baseline scaled_baseline(const predict::Baseline& b, int64_t rows, bool recompute) {
  auto s = b;
  const double f = static_cast<double>(rows) / static_cast<double>(b.batch);
  s.forward_s *= f;
  s.backward_s *= f;
  s.other_s *= f;
  // Recomputation runs each layer's forward again inside backward.
  if (recompute) s.backward_s += s.forward_s;
  s.batch = rows;
  s.grad_accum = 1;
  s.step_s = s.forward_s + s.backward_s + s.other_s + s.optimizer_s;
  return s;
}

std::vector<std::pair<std::string, std::string>> precision_choices(const Request& r) {
  const auto& base = r.base.precision;
  auto rate = [&](const std::string& p) {
    auto it = r.peak_tflops.find(p);
    return it == r.peak_tflops.end() ? 0.0 : it->second;
  };
  std::vector<std::pair<std::string, std::string>> out{{base, ""}};
  for (std::string p : {"fp32", "tf32", "bf16", "fp16"}) {
    if (p == base) continue;
    std::string why;
    if (!(rate(p) > 0) || !(rate(base) > 0))
      why = fmt::format("the device ({}) has no known peak rate for {}{} (train/flops.cpp), so the baseline's "
                        "compute cannot be scaled to it", r.device_name.empty() ? r.device_kind : r.device_name,
                        p, rate(base) > 0 ? "" : " or " + base);
    else if (r.base.engine.fused_model() &&
             EnginePolicy::fused_weights(p) != EnginePolicy::fused_weights(base))
      why = fmt::format("the baseline's --fused engine holds its weights {} under {} and {} under {}, a change the "
                        "model has no cost for", r.base.engine.resident() ? "resident in bf16" : "in fp32", base,
                        EnginePolicy::fused_weights(p) == EnginePolicy::Weights::Resident ? "resident in bf16" : "in fp32",
                        p);
    out.push_back({p, why});
  }
  return out;
}

predict::Baseline baseline_at(const Request& r, const std::string& precision) {
  auto b = r.base;
  if (precision == b.precision) return b;
  const double f = r.peak_tflops.at(b.precision) / r.peak_tflops.at(precision);
  b.forward_s *= f;
  b.backward_s *= f;
  b.step_s = (b.forward_s + b.backward_s + b.other_s) * static_cast<double>(b.grad_accum) + b.optimizer_s;
  b.precision = precision;
  b.engine.precision = precision;
  return b;
}

namespace {

Parts parts_of(const predict::Prediction& p, const predict::Baseline& one_device, int world) {
  Parts d;
  const double w = world;
  d.ideal = one_device.step_s / w;
  d.compute = p.compute_s - (one_device.forward_s + one_device.backward_s) / w;
  d.optimizer = p.optimizer_s - one_device.optimizer_s / w;
  d.data = p.other_s - one_device.other_s / w;
  d.exposed = p.exposed_s;
  double worst = 0;
  for (auto& [op, t] : p.exposed_by_op)
    if (t > worst) worst = t, d.worst_collective = op;
  return d;
}

std::string size_text(double bytes) {
  const double gib = 1024.0 * 1024 * 1024;
  return bytes >= gib ? fmt::format("{:.2f} GiB", bytes / gib) : fmt::format("{:.2f} MiB", bytes / (1024.0 * 1024));
}

// Refused by the baseline's engine and then by memory, counted; the
// survivors kept with their figures.
std::vector<std::pair<Candidate, MemoryUse>> fit(const Request& r, Result& out) {
  std::map<std::string, MemoryInputs> at;
  for (auto& [p, why] : precision_choices(r))
    if (why.empty())
      at[p] = {r.layout, r.model, r.shape, r.base.seq, predict::engine_step_options(p, baseline_at(r, p).engine)};
  std::vector<std::pair<Candidate, MemoryUse>> kept;
  out.least_memory = std::numeric_limits<double>::infinity();
  for (auto& c : out.space.candidates) {
    // Its compute times are the baseline's engine's: a strategy that cannot run it is not predicted.
    if (!predict::engine_refusal(r.base, c.choice).empty()) {
      out.space.refused.add("the engine");
      continue;
    }
    auto m = memory_per_rank(c, at.at(c.precision));
    if (r.memory_limit > 0 && m.total() > r.memory_limit) {
      out.space.refused.add("memory");
      out.least_memory = std::min(out.least_memory, m.total());
      continue;
    }
    kept.emplace_back(std::move(c), m);
  }
  out.space.candidates.clear();
  return kept;
}

void rank(Result& out) {
  std::stable_sort(out.ranked.begin(), out.ranked.end(), [](const Ranked& a, const Ranked& b) {
    return a.prediction.step_s < b.prediction.step_s;
  });
  int group = 0;
  double head = 0;
  for (size_t k = 0; k < out.ranked.size(); ++k) {
    auto& x = out.ranked[k];
    x.rank = static_cast<int>(k) + 1;
    if (group == 0 || x.prediction.step_s > head * (1 + out.tie_threshold)) {
      ++group;
      head = x.prediction.step_s;
    }
    x.tie_group = group;
  }
}

}  // namespace

Result search(const Request& r, const std::function<void(int64_t, int64_t)>& progress) {
  const auto start = std::chrono::steady_clock::now();
  if (!r.layout || !r.comm) fail("plan: no model layout or network given");
  if (r.base.batch < 1 || r.base.seq < 1) fail("--baseline {}: batch and sequence length must be known", r.base.source);
  Result out;
  out.space = enumerate({{r.shape, r.model, r.base.precision}, r.global_batch, precision_choices(r)});
  if (out.space.candidates.empty())
    fail("--global-batch {}: no layout on {} node(s) x {} can take it (of {} enumerated: {} refused by the global "
         "batch's split among the data-parallel replicas, {} by the micro-batches, {} by the strategies' own "
         "checks); choose a multiple of the data-parallel sizes",
         r.global_batch, r.shape.nodes, r.shape.gpus_per_node, out.space.enumerated,
         out.space.refused.by_reason["the global batch"], out.space.refused.by_reason["the micro-batches"],
         out.space.refused.total() - out.space.refused.by_reason["the global batch"] -
             out.space.refused.by_reason["the micro-batches"]);
  auto kept = fit(r, out);
  if (kept.empty() && out.space.refused.by_reason["memory"] == 0)
    fail("--baseline {}: no strategy searched can run its engine ({}); measure a baseline without it",
         r.base.source, r.base.engine.name());
  if (kept.empty())
    fail("--memory-limit {}: below what every layout needs a rank; the least is {} (model state and activations, "
         "with recomputation)", size_text(r.memory_limit), size_text(out.least_memory));
  out.calibration = calibration_for(r.device_kind);
  out.tie_threshold = tie_threshold(out.calibration, r.baseline_noise);
  std::map<std::string, std::pair<predict::Baseline, predict::StepOptions>> at;
  for (auto& [p, why] : precision_choices(r))
    if (why.empty()) {
      auto b = baseline_at(r, p);
      at[p] = {b, predict::engine_step_options(p, b.engine)};
    }
  const int64_t total = static_cast<int64_t>(kept.size());
  for (int64_t k = 0; k < total; ++k) {
    auto& [c, m] = kept[static_cast<size_t>(k)];
    Ranked x{c, {}, m, {}, {}, 0, 0};
    // What only the replay can rule out is refused with the strategies' checks.
    auto [base, so] = at.at(c.precision);
    try {
      so.grad_accum = c.accum;
      x.prediction = predict::predict_step(scaled_baseline(base, c.micro(), c.recompute), *r.layout, c.choice,
                                           r.shape, *r.comm, so);
    } catch (const UserError&) {
      out.space.refused.add("the model");
      continue;
    }
    x.step = measured_step_interval(out.calibration, x.prediction.step_s);
    x.parts = parts_of(x.prediction, scaled_baseline(base, r.global_batch, false), r.shape.world());
    out.ranked.push_back(std::move(x));
    if (progress) progress(k + 1, total);
  }
  rank(out);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace hpcbench::plan
