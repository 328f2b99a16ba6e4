#include "plan/space.h"

#include <fmt/format.h>

#include <optional>

#include "core/error.h"
#include "specs/registry.h"

namespace hpcbench::plan {

std::string Candidate::name() const {
  return choice.label() + (accum > 1 ? fmt::format(" x{}", accum) : "") + (recompute ? " +recompute" : "") +
         (precision.empty() ? "" : " " + precision) + (engine.empty() ? "" : " " + engine);
}

int64_t Refusals::total() const {
  int64_t n = 0;
  for (auto& [reason, count] : by_reason) n += count;
  return n;
}

namespace {

// The choice an option set names, or the reason the spec's checks give
// against it on this job ("" when it can run).
std::string check(const strategies::Spec& spec, const strategies::OptionSet& set, const SpaceInputs& in,
                  std::optional<strategies::Choice>& out) {
  strategies::Choice c(spec);
  try {
    for (auto& [key, value] : set) c.set(key, value, "plan");
    c.validate(in.job.precision);
  } catch (const UserError&) {
    return "the strategy's options";
  }
  if (!c.unsupported(in.job.shape).empty()) return "the job's shape";
  if (!c.unsupported_model(in.job.shape, in.job.model).empty()) return "the model";
  out = std::move(c);
  return "";
}

// Every layout of `spec` at one precision into `s`; `refusal` ("" or why the
// precision cannot be searched) refuses them all.
void enumerate_spec(const strategies::Spec& spec, const SpaceInputs& in, const std::string& refusal, Space& s) {
  for (const auto& set : strategies::search_space(spec, in.job))
    for (bool recompute : {false, true}) {
      ++s.enumerated;
      if (!refusal.empty()) {
        s.refused.add("the precision");
        continue;
      }
      std::optional<strategies::Choice> c;
      if (auto why = check(spec, set, in, c); !why.empty()) {
        s.refused.add(why);
        continue;
      }
      const int replicas = c->spec().data_parallel_size(c->options(), in.job.shape);
      if (replicas < 1 || in.global_batch % replicas != 0) {
        s.refused.add("the global batch");
        continue;
      }
      const int64_t rows = in.global_batch / replicas;
      for (int64_t accum = 1; accum <= rows; accum *= 2) {
        if (rows % accum != 0) break;
        if (accum > 1) ++s.enumerated;
        if (!c->unsupported_batch(rows / accum).empty()) {
          s.refused.add("the micro-batches");
          continue;
        }
        s.candidates.push_back(Candidate{*c, in.job.precision, recompute, replicas, rows, static_cast<int>(accum), ""});
      }
    }
}

}  // namespace

Space enumerate(const SpaceInputs& in) {
  if (in.global_batch < 1) fail("--global-batch {}: must be at least 1", in.global_batch);
  Space s;
  auto precisions = in.precisions;
  if (precisions.empty()) precisions.push_back({in.job.precision, ""});
  for (const auto* spec : strategies::specs())
    if (!spec->traits().devices_option.empty())
      s.not_searched.push_back(fmt::format("{} (one process drives several devices)", spec->name()));
  for (const auto& [precision, refusal] : precisions) {
    if (!refusal.empty()) s.precisions_refused.push_back(precision + ": " + refusal);
    auto at = in;
    at.job.precision = precision;
    for (const auto* spec : strategies::specs())
      if (spec->traits().devices_option.empty()) enumerate_spec(*spec, at, refusal, s);
  }
  return s;
}

}  // namespace hpcbench::plan
