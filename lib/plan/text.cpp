#include "plan/text.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

namespace hpcbench::plan {

namespace {

std::string refusals_text(const Refusals& r) {
  std::string s;
  for (auto& [reason, n] : r.by_reason) s += fmt::format("{}{} by {}", s.empty() ? "" : ", ", n, reason);
  return s.empty() ? "none" : s;
}

// ", bf16 and tf32 (compute scaled by the device's peak rates: ...)", or "".
std::string searched_precisions(const Result& res, const Request& req) {
  std::string names, rates;
  for (auto& [p, why] : precision_choices(req)) {
    if (!why.empty() || p == req.base.precision) continue;
    names += (names.empty() ? "" : ", ") + p;
    rates += fmt::format(", {} {:g}", p, req.peak_tflops.at(p));
  }
  if (names.empty()) return "";
  return fmt::format("; also {} (forward and backward scaled by the device's dense peak TFLOP/s: {} {:g}{}; the "
                     "optimizer and the rest as measured)", names, req.base.precision,
                     req.peak_tflops.at(req.base.precision), rates);
}

// What the engine dimension was: the baseline's alone, or the settings
// searched with the file that priced them.
std::string engine_text(const Result& res, const Request& req) {
  const auto& b = req.base;
  if (!req.engine_steps)
    return fmt::format("engine {} as the baseline's (not searched without --engine-ratios; the strategies that cannot "
                       "run it refused by the engine)", b.engine.name());
  if (req.device_kind != "cuda")
    return fmt::format("engine {} as the baseline's (a {} device: no CUDA graph, no recorded ratio)", b.engine.name(),
                       req.device_kind);
  std::string s = fmt::format("engines eager, graph, fused, graph+fused, each priced by its recorded step ratio to "
                              "{} ({}), the interval widened by the ratio's spread over repeats",
                              b.engine.name(), req.engine_steps->file);
  if (!res.unpriced.empty()) s += fmt::format("; no recorded ratio for {}", fmt::join(res.unpriced, ", "));
  return s;
}

std::string header(const Result& res, const Request& req) {
  const auto& b = req.base;
  std::string s = fmt::format(
      "# baseline {}: {} {} seq {}, {} sequences a step in {:.2f} ms on one device; its steps' noise {}\n", b.source,
      b.model, b.precision, b.seq, b.batch * b.grad_accum, b.step_s * 1000,
      req.baseline_noise > 0 ? fmt::format("{:.1f} % (stddev / mean)", 100 * req.baseline_noise)
                             : std::string("not recorded"));
  s += fmt::format("# job: {} node(s) x {} = {} ranks, global batch {}; memory limit {}\n", req.shape.nodes,
                   req.shape.gpus_per_node, req.shape.world(), req.global_batch,
                   req.memory_limit > 0 ? fmt::format("{:.2f} GiB a rank", req.memory_limit / (1 << 30))
                                        : std::string("none"));
  s += fmt::format("# searched {} layouts in {:.2f} s: {} predicted, {} refused ({})\n", res.space.enumerated,
                   res.seconds, res.ranked.size(), res.space.refused.total(), refusals_text(res.space.refused));
  for (auto& n : res.space.not_searched) s += fmt::format("# not searched: {}\n", n);
  s += fmt::format("# precisions: {} (the baseline's, its compute as measured){}; {}; micro-batch = global batch / "
                   "data-parallel replicas, compute taken as linear in it\n",
                   b.precision, searched_precisions(res, req), engine_text(res, req));
  for (auto& n : res.space.precisions_refused) s += fmt::format("# precision not searched: {}\n", n);
  s += fmt::format("# calibration: predicted / measured step {:+.1f} % to {:+.1f} % ({}); layouts closer than "
                   "{:.1f} % cannot be separated by it and are ties (=)\n",
                   100 * res.calibration.low, 100 * res.calibration.high, res.calibration.source,
                   100 * res.tie_threshold);
  return s;
}

std::string row(const Ranked& x, bool tie) {
  const auto& p = x.prediction;
  const auto& d = x.parts;
  auto ms = [](double s) { return s * 1000; };
  std::string exposed = fmt::format("{:.2f}", ms(d.exposed));
  if (!d.worst_collective.empty()) exposed += " (" + d.worst_collective + ")";
  return fmt::format("{:>4} {:>1}{:<3} {:<44} {:>9.2f} [{:>9.2f}, {:>9.2f}] {:>11.1f} {:>5.1f} {:>8.2f}  ideal {:.2f} "
                     "+ compute {:.2f} + optimizer {:.2f} + data {:.2f} + exposed {}\n",
                     x.rank, tie ? "=" : "", x.tie_group, x.candidate.name(), ms(p.step_s), ms(x.step.low),
                     ms(x.step.high), p.samples_per_s, 100 * d.ideal / p.step_s, x.memory.total() / (1 << 30),
                     ms(d.ideal), ms(d.compute), ms(d.optimizer), ms(d.data), exposed);
}

}  // namespace

std::string plan_text(const Result& res, const Request& req, int top) {
  std::string s = header(res, req);
  s += fmt::format("{:>4} {:<4} {:<44} {:>9} {:>22} {:>11} {:>5} {:>8}  {}\n", "rank", "tie", "layout", "step_ms",
                   "measured would be", "samples/s", "eff%", "mem_GiB", "where the step goes (ms)");
  const size_t n = std::min(res.ranked.size(), static_cast<size_t>(std::max(0, top)));
  for (size_t k = 0; k < n; ++k) {
    const auto& x = res.ranked[k];
    // "=" marks a layout its group's fastest cannot be told from.
    const bool tie = std::count_if(res.ranked.begin(), res.ranked.end(),
                                   [&](const Ranked& y) { return y.tie_group == x.tie_group; }) > 1;
    s += row(x, tie);
  }
  if (!res.ranked.empty()) {
    const int g = res.ranked.front().tie_group;
    const auto same = std::count_if(res.ranked.begin(), res.ranked.end(), [&](const Ranked& y) { return y.tie_group == g; });
    if (same > 1)
      s += fmt::format("# {} layouts are within {:.1f} % of the fastest: the calibration cannot rank them; the "
                       "verifying sweep decides\n", same, 100 * res.tie_threshold);
  }
  return s;
}

std::string cost_text(const Result& res, const Request& req, int k, int64_t steps) {
  const double per_step = static_cast<double>(steps) / 3600;
  const double world = req.shape.world();
  const double reference = scaled_baseline(req.base, req.global_batch, false).step_s * per_step;
  double top = reference, grid = reference;
  const size_t n = std::min(res.ranked.size(), static_cast<size_t>(std::max(0, k)));
  for (size_t i = 0; i < res.ranked.size(); ++i) {
    const double h = res.ranked[i].prediction.step_s * world * per_step;
    grid += h;
    if (i < n) top += h;
  }
  return fmt::format("# verifying the top {} beside the baseline: {:.2f} GPU-hours at {} steps a job (predicted steps "
                     "x devices, start-up not counted); the full grid of {} layouts: {:.1f} GPU-hours ({:.0f}x)\n",
                     n, top, steps, res.ranked.size(), grid, top > 0 ? grid / top : 0);
}

}  // namespace hpcbench::plan
