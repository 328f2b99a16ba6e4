#include "results/utilisation_csv.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "core/error.h"
#include "core/split.h"

namespace hpcbench::results {

namespace {

constexpr const char* kColumns[] = {"host",         "time_s",        "step",          "phase",
                                    "kind",         "index",         "util_percent",  "memory_bytes",
                                    "power_w",      "sm_clock_mhz",  "temperature_c", "throttle_reasons",
                                    "energy_mj",    "bus_id"};

template <typename T>
std::optional<T> value(const std::string& s) {
  if (s.empty()) return std::nullopt;
  try {
    if constexpr (std::is_same_v<T, double>) return std::stod(s);
    else if constexpr (std::is_same_v<T, int64_t>) return std::stoll(s);
    else return static_cast<T>(std::stoull(s, nullptr, 0));  // throttle reasons are hex
  } catch (...) {
    return std::nullopt;
  }
}

}  // namespace

std::string utilisation_header() {
  std::string out;
  // Piece by piece: `(c ? "" : ",") + std::string` draws a false -Wrestrict
  // from GCC 12 (libstdc++'s char_traits.h; GCC bug 105651).
  for (auto* c : kColumns) {
    if (!out.empty()) out += ',';
    out += c;
  }
  return out + "\n";
}

std::string utilisation_line(const UtilisationRow& r) {
  auto opt = [](const auto& v) { return v ? fmt::format("{}", *v) : std::string(); };
  return fmt::format("{},{:.3f},{},{},{},{},{},{},{},{},{},{},{},{}\n", r.host, r.time_s, r.step, r.phase,
                     r.gpu ? "gpu" : "cpu", r.index, r.util_percent ? fmt::format("{:.6g}", *r.util_percent) : "",
                     opt(r.memory_bytes), r.power_w ? fmt::format("{:.6g}", *r.power_w) : "", opt(r.sm_clock_mhz),
                     opt(r.temperature_c), r.throttle_reasons ? fmt::format("{:#x}", *r.throttle_reasons) : "",
                     opt(r.energy_mj), r.bus_id);
}

std::vector<UtilisationRow> parse_utilisation(const std::string& text) {
  std::vector<UtilisationRow> rows;
  std::istringstream in(text);
  std::string line;
  if (!std::getline(in, line)) return rows;
  auto header = split(line);  // empty cells (a value not sampled) count, the last one too
  std::vector<size_t> at;
  for (auto* c : kColumns) {
    auto it = std::find(header.begin(), header.end(), c);
    if (it == header.end() && std::string(c) != "bus_id") fail("utilisation.csv: no column '{}'", c);
    at.push_back(static_cast<size_t>(it - header.begin()));
  }
  while (std::getline(in, line)) {
    auto f = split(line);
    if (f.size() != header.size()) continue;
    auto cell = [&](size_t k) { return at[k] < f.size() ? f[at[k]] : std::string(); };
    UtilisationRow r;
    r.host = cell(0);
    r.time_s = value<double>(cell(1)).value_or(0);
    r.step = value<int64_t>(cell(2)).value_or(0);
    r.phase = cell(3);
    r.gpu = cell(4) == "gpu";
    r.index = static_cast<int>(value<int64_t>(cell(5)).value_or(0));
    r.util_percent = value<double>(cell(6));
    r.memory_bytes = value<int64_t>(cell(7));
    r.power_w = value<double>(cell(8));
    r.sm_clock_mhz = value<int64_t>(cell(9));
    r.temperature_c = value<int64_t>(cell(10));
    r.throttle_reasons = value<uint64_t>(cell(11));
    r.energy_mj = value<uint64_t>(cell(12));
    r.bus_id = cell(13);
    // A sample no device gives (a damaged file, or one made by hand) is not
    // plotted as one: the row, or the figure, is left out.
    if (!std::isfinite(r.time_s) || std::fabs(r.time_s) > 1e9) continue;
    auto plausible = [](std::optional<double>& v, double max) {
      if (v && (!std::isfinite(*v) || *v < 0 || *v > max)) v.reset();
    };
    plausible(r.util_percent, 1e6);  // a process tree's CPU use: 100 per core
    plausible(r.power_w, 1e6);
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace hpcbench::results
