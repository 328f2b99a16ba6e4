#include "run/kernel_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

namespace hpcbench::run {

namespace {

using Interval = std::pair<int64_t, int64_t>;
using Windows = std::vector<Interval>;

constexpr const char* kStepPrefix = "ProfilerStep#";

// The parts of [s, e) inside the windows.
std::vector<Interval> clip(int64_t s, int64_t e, const Windows& windows) {
  std::vector<Interval> out;
  for (auto [ws, we] : windows) {
    const int64_t a = std::max(s, ws), b = std::min(e, we);
    if (a < b) out.emplace_back(a, b);
  }
  return out;
}

int64_t length(const std::vector<Interval>& v) {
  int64_t n = 0;
  for (auto [a, b] : v) n += b - a;
  return n;
}

int64_t union_length(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  int64_t n = 0, end = INT64_MIN;
  for (auto [a, b] : v) {
    if (b <= end) continue;
    n += b - std::max(a, end);
    end = b;
  }
  return n;
}

struct Tally {
  int64_t calls = 0, ns = 0;
};

// Device events: each one's time inside the windows; busy is their union.
int64_t device_tally(const std::vector<TracedEvent>& events, const Windows& windows,
                     std::map<std::string, Tally>& by_name) {
  std::vector<Interval> covered;
  for (const auto& e : events) {
    if (!e.on_device) continue;
    auto parts = clip(e.start_ns, e.end_ns, windows);
    if (parts.empty()) continue;
    auto& t = by_name[e.name];
    ++t.calls;
    t.ns += length(parts);
    covered.insert(covered.end(), parts.begin(), parts.end());
  }
  return union_length(std::move(covered));
}

// One thread's operators by self time: its events nest (RecordFunction's
// scopes), so each moment belongs to the innermost one running; the
// top-level ones cover what is busy, and the self times add up to it.
int64_t host_tally(const std::vector<TracedEvent>& events, const Windows& windows, uint64_t thread,
                   std::map<std::string, Tally>& by_name) {
  struct Op {
    const TracedEvent* e;
    int64_t end, self;
  };
  std::vector<Op> ops;
  for (const auto& e : events)
    if (!e.on_device && e.thread == thread && e.name.rfind(kStepPrefix, 0) != 0 && e.end_ns > e.start_ns)
      ops.push_back({&e, e.end_ns, 0});
  std::sort(ops.begin(), ops.end(), [](const Op& a, const Op& b) {
    return a.e->start_ns != b.e->start_ns ? a.e->start_ns < b.e->start_ns : a.end > b.end;
  });
  std::vector<size_t> stack;
  int64_t busy = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    auto& op = ops[i];
    while (!stack.empty() && ops[stack.back()].end <= op.e->start_ns) stack.pop_back();
    if (!stack.empty()) {
      auto& parent = ops[stack.back()];
      op.end = std::min(op.end, parent.end);  // a scope left open past its parent's end ends with it
      parent.self -= length(clip(op.e->start_ns, op.end, windows));
    }
    const int64_t inside = length(clip(op.e->start_ns, op.end, windows));
    op.self += inside;
    if (stack.empty()) busy += inside;
    stack.push_back(i);
  }
  for (const auto& op : ops) {
    if (length(clip(op.e->start_ns, op.end, windows)) == 0) continue;
    auto& t = by_name[op.e->name];
    ++t.calls;
    t.ns += op.self;
  }
  return busy;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace

KernelTable kernel_table(const std::vector<TracedEvent>& events, const Windows& windows, bool device,
                         uint64_t thread) {
  KernelTable t;
  t.kind = device ? "device kernels" : "CPU operators (self time)";
  t.steps = static_cast<int64_t>(windows.size());
  int64_t window_ns = 0;
  for (auto [a, b] : windows) window_ns += b - a;
  std::map<std::string, Tally> by_name;
  const int64_t busy = device ? device_tally(events, windows, by_name) : host_tally(events, windows, thread, by_name);
  int64_t sum = 0;
  auto ms = [](int64_t ns) { return static_cast<double>(ns) / 1e6; };
  auto pct = [&](int64_t ns) { return window_ns > 0 ? 100.0 * static_cast<double>(ns) / window_ns : 0.0; };
  for (auto& [name, tally] : by_name) {
    t.rows.push_back({name, tally.calls, ms(tally.ns), pct(tally.ns)});
    sum += tally.ns;
  }
  std::sort(t.rows.begin(), t.rows.end(), [](const KernelRow& a, const KernelRow& b) {
    return a.total_ms != b.total_ms ? a.total_ms > b.total_ms : a.name < b.name;
  });
  const int64_t idle = window_ns - busy;
  t.rows.push_back({device ? "(idle: no kernel running)" : "(outside any operator)", 0, ms(idle), pct(idle)});
  t.window_ms = ms(window_ns);
  t.busy_ms = ms(busy);
  t.sum_ms = ms(sum);
  t.overlap_ms = ms(sum - busy);
  return t;
}

std::string kernel_table_text(const KernelTable& t, size_t limit) {
  const double per_step = t.steps > 0 ? 1.0 / static_cast<double>(t.steps) : 0.0;
  std::string out = fmt::format("{}: {} profiled step(s), {:.3f} ms ({:.3f} ms a step)\n", t.kind, t.steps,
                                t.window_ms, t.window_ms * per_step);
  out += fmt::format("  {:<64} {:>7} {:>10} {:>9} {:>7}\n", "name", "calls", "total ms", "ms/step", "%");
  auto line = [&](const std::string& name, std::string calls, double total, double pct) {
    std::string shown = name.size() > 64 ? name.substr(0, 61) + "..." : name;
    out += fmt::format("  {:<64} {:>7} {:>10.3f} {:>9.3f} {:>7.2f}\n", shown, calls, total, total * per_step, pct);
  };
  const size_t named = t.rows.empty() ? 0 : t.rows.size() - 1;  // the idle row is last
  double rest_ms = 0, rest_pct = 0;
  int64_t rest_calls = 0;
  for (size_t i = 0; i < named; ++i) {
    const auto& r = t.rows[i];
    if (i < limit) {
      line(r.name, std::to_string(r.calls), r.total_ms, r.percent);
    } else {
      rest_ms += r.total_ms, rest_pct += r.percent, rest_calls += r.calls;
    }
  }
  if (named > limit) line(fmt::format("({} more)", named - limit), std::to_string(rest_calls), rest_ms, rest_pct);
  if (!t.rows.empty()) line(t.rows.back().name, "-", t.rows.back().total_ms, t.rows.back().percent);
  if (t.overlap_ms > 0)
    out += fmt::format("  streams overlapped for {:.3f} ms: counted in each row that ran, so the rows add up to "
                       "{:.3f} ms, not {:.3f}\n",
                       t.overlap_ms, t.sum_ms + t.rows.back().total_ms, t.window_ms);
  return out;
}

std::string kernel_table_csv(const KernelTable& t) {
  std::string out = "name,calls,total_ms,ms_per_step,percent_of_steps\n";
  const double per_step = t.steps > 0 ? 1.0 / static_cast<double>(t.steps) : 0.0;
  for (const auto& r : t.rows)
    out += fmt::format("{},{},{:.6f},{:.6f},{:.4f}\n", csv_field(r.name), r.calls, r.total_ms, r.total_ms * per_step,
                       r.percent);
  return out;
}

}  // namespace hpcbench::run
