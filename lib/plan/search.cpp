#include "plan/search.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

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
  if (!r.precisions.empty())
    std::erase_if(out, [&](const auto& c) {
      return std::find(r.precisions.begin(), r.precisions.end(), c.first) == r.precisions.end();
    });
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

predict::Baseline baseline_on(const predict::Baseline& b, const EnginePolicy& e, double ratio) {
  auto o = b;
  o.forward_s *= ratio;
  o.backward_s *= ratio;
  o.other_s *= ratio;
  o.optimizer_s *= ratio;
  o.step_s *= ratio;
  o.engine = e;
  return o;
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

// A layout on one engine setting, its memory and its engine's price.
struct Fitted {
  Candidate candidate;
  MemoryUse memory;
  EnginePolicy engine;
  EngineRatio ratio;
};

// The engine settings a layout at `precision` is tried on: the baseline's
// alone where the engine is not searched.
std::vector<EnginePolicy> engines_for(const Request& r, const std::string& precision) {
  const auto base = baseline_at(r, precision).engine;
  if (!r.engine_steps) return {base};
  return engine_settings(base, precision, r.device_kind);
}

// Why `c` cannot be predicted on `e` ("" when it can), its price in `ratio`:
// its compute times are the baseline's engine's scaled by a recorded ratio,
// so a strategy that cannot run `e`, or a change no run recorded, is not
// predicted.
std::string engine_check(const Request& r, const Candidate& c, const EnginePolicy& e, EngineRatio& ratio,
                         Result& out) {
  auto on = r.base;
  on.engine = e;
  if (!predict::engine_refusal(on, c.choice).empty()) return "the engine";
  if (!r.engine_steps) return "";
  ratio = engine_ratio(*r.engine_steps, {r.device_name, c.choice.name(), c.precision, c.micro()},
                       r.base.engine.name(), e.name());
  if (ratio.missing.empty()) return "";
  out.unpriced.insert(fmt::format("{} {} {}", c.choice.name(), c.precision, e.name()));
  return "the engine: no recorded ratio";
}

// Each layout on each engine setting, refused by the engine and then by
// memory (under that engine's state: resident weights, docs/memory.md),
// counted; the survivors kept with their figures.
std::vector<Fitted> fit(const Request& r, Result& out) {
  std::map<std::string, MemoryInputs> at;
  std::map<std::string, std::vector<EnginePolicy>> engines;
  for (auto& [p, why] : precision_choices(r))
    if (why.empty()) {
      engines[p] = engines_for(r, p);
      for (auto& e : engines[p])
        at[p + "/" + e.name()] = {r.layout, r.model, r.shape, r.base.seq, predict::engine_step_options(p, e)};
    }
  std::vector<Fitted> kept;
  out.least_memory = std::numeric_limits<double>::infinity();
  for (auto& c : out.space.candidates) {
    const auto& settings = engines.at(c.precision);
    out.space.enumerated += static_cast<int64_t>(settings.size()) - 1;
    for (auto& e : settings) {
      Fitted f{c, {}, e, {}};
      if (r.engine_steps) f.candidate.engine = e.name();
      if (auto why = engine_check(r, f.candidate, e, f.ratio, out); !why.empty()) {
        out.space.refused.add(why);
        continue;
      }
      f.memory = memory_per_rank(f.candidate, at.at(c.precision + "/" + e.name()));
      if (r.memory_limit > 0 && f.memory.total() > r.memory_limit) {
        out.space.refused.add("memory");
        out.least_memory = std::min(out.least_memory, f.memory.total());
        continue;
      }
      kept.push_back(std::move(f));
    }
  }
  out.space.candidates.clear();
  return kept;
}

// --precisions: each a precision, and at least one of them searchable.
void check_precisions(const Request& r) {
  if (r.precisions.empty()) return;
  for (auto& p : r.precisions)
    if (p != "fp32" && p != "tf32" && p != "bf16" && p != "fp16")
      fail("--precisions {}: '{}' is not one of fp32, tf32, bf16, fp16", fmt::join(r.precisions, ","), p);
  std::vector<std::string> why;
  for (auto& [p, w] : precision_choices(r)) {
    if (w.empty()) return;
    why.push_back(p + ": " + w);
  }
  fail("--precisions {}: none of them can be searched from this baseline ({})", fmt::join(r.precisions, ","),
       fmt::join(why, "; "));
}

// The calibration's interval widened by the engine ratio's own band: its
// low end scaled by low / ratio, its high end by high / ratio (the whole
// step, though the ratio scales only the baseline's phases: a bound).
Interval widened(Interval i, const EngineRatio& e) {
  i.low *= e.low / e.ratio;
  i.high *= e.high / e.ratio;
  return i;
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
  check_precisions(r);
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
  std::map<std::string, predict::Baseline> at;
  for (auto& [p, why] : precision_choices(r))
    if (why.empty()) at[p] = baseline_at(r, p);
  const int64_t total = static_cast<int64_t>(kept.size());
  for (int64_t k = 0; k < total; ++k) {
    auto& f = kept[static_cast<size_t>(k)];
    const auto& c = f.candidate;
    // A named empty Prediction: GCC 12 warned (-Wmaybe-uninitialized) on the
    // map inside one that the aggregate's braces value-initialised.
    const predict::Prediction none;
    Ranked x{c, none, f.memory, {}, f.ratio, {}, 0, 0};
    const auto base = baseline_on(at.at(c.precision), f.engine, f.ratio.ratio);
    // What only the replay can rule out is refused with the strategies' checks.
    try {
      auto so = predict::engine_step_options(c.precision, f.engine);
      so.grad_accum = c.accum;
      x.prediction = predict::predict_step(scaled_baseline(base, c.micro(), c.recompute), *r.layout, c.choice,
                                           r.shape, *r.comm, so);
    } catch (const UserError&) {
      out.space.refused.add("the model");
      continue;
    }
    x.step = widened(measured_step_interval(out.calibration, x.prediction.step_s), f.ratio);
    x.parts = parts_of(x.prediction, scaled_baseline(base, r.global_batch, false), r.shape.world());
    out.ranked.push_back(std::move(x));
    if (progress) progress(k + 1, total);
  }
  rank(out);
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

}  // namespace hpcbench::plan
