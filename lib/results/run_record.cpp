#include "results/run_record.h"

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <limits>

#include <fmt/format.h>

#include "core/error.h"
#include "results/csv.h"

namespace hpcbench::results {

// long: the schema's one table, a column a line in CSV order; cut in pieces
// the order of the columns would no longer read from top to bottom.
const std::vector<Column>& columns() {
  using R = RunResult;
  static const std::vector<Column> cols = {
      {"schema_version", "", &R::schema_version},
      {"run_id", "", &R::run_id},
      {"started_at", "", &R::started_at},
      {"hpcbench_version", "", &R::hpcbench_version},
      {"git_commit", "", &R::git_commit},
      {"hosts", "", &R::hosts},
      {"slurm_job_id", "", &R::slurm_job_id},
      {"repeat_group", "", &R::repeat_group},
      {"repeat_index", "", &R::repeat_index},
      {"strategy", "", &R::strategy},
      {"strategy_options", "", &R::strategy_options},
      {"nodes", "", &R::nodes},
      {"gpus_per_node", "", &R::gpus_per_node},
      {"world_size", "", &R::world_size},
      {"device", "", &R::device},
      {"device_name", "", &R::device_name},
      {"precision", "", &R::precision},
      {"model", "", &R::model},
      {"parameters", "", &R::parameters},
      {"seq_length", "tokens", &R::seq_length},
      {"batch_per_device", "sequences", &R::batch_per_device},
      {"global_batch", "sequences", &R::global_batch},
      {"grad_accum", "", &R::grad_accum},
      {"data", "", &R::data},
      {"steps", "", &R::steps},
      {"timed_steps", "", &R::timed_steps},
      {"samples_timed", "sequences", &R::samples_timed},
      {"train_time_s", "s", &R::train_time_s},
      {"wall_time_s", "s", &R::wall_time_s},
      {"samples_per_s", "1/s", &R::samples_per_s},
      {"samples_per_s_per_device", "1/s", &R::samples_per_s_per_device},
      {"tokens_per_s", "1/s", &R::tokens_per_s},
      {"step_ms_median", "ms", &R::step_ms_median},
      {"step_ms_p90", "ms", &R::step_ms_p90},
      {"step_ms_max", "ms", &R::step_ms_max},
      {"step_ms_mean", "ms", &R::step_ms_mean},
      {"step_ms_stddev", "ms", &R::step_ms_stddev},
      {"step_ms_min", "ms", &R::step_ms_min},
      {"step_ms_iqr", "ms", &R::step_ms_iqr},
      {"step_outliers", "", &R::step_outliers},
      {"step_outlier_steps", "", &R::step_outlier_steps},
      {"data_ms", "ms", &R::data_ms},
      {"forward_ms", "ms", &R::forward_ms},
      {"backward_ms", "ms", &R::backward_ms},
      {"comm_ms", "ms", &R::comm_ms},
      {"comm_exposed_ms", "ms", &R::comm_exposed_ms},
      {"optimizer_ms", "ms", &R::optimizer_ms},
      {"flops_per_sample", "FLOP", &R::flops_per_sample},
      {"tflops_per_device", "TFLOP/s", &R::tflops_per_device},
      {"peak_tflops", "TFLOP/s", &R::peak_tflops},
      {"mfu", "", &R::mfu},
      {"peak_memory_bytes", "B", &R::peak_memory_bytes},
      {"model_state_bytes", "B", &R::model_state_bytes},
      {"model_state_theory_bytes", "B", &R::model_state_theory_bytes},
      {"final_train_loss", "", &R::final_train_loss},
      {"val_loss", "", &R::val_loss},
      {"exact_match", "%", &R::exact_match},
      {"f1", "%", &R::f1},
      {"eval_load_s", "s", &R::eval_load_s},
      {"eval_forward_s", "s", &R::eval_forward_s},
      {"eval_postprocess_s", "s", &R::eval_postprocess_s},
      {"eval_metric_s", "s", &R::eval_metric_s},
      {"status", "", &R::status},
      {"utilisation_of", "", &R::utilisation_of},
      {"utilisation_mean_percent", "%", &R::utilisation_mean_percent},
      {"power_mean_w", "W", &R::power_mean_w},
      {"energy_j", "J", &R::energy_j},
      {"energy_method", "", &R::energy_method},
      {"samples_per_kj", "1/kJ", &R::samples_per_kj},
      {"nvml_peak_memory_bytes", "B", &R::nvml_peak_memory_bytes},
      {"comm_untimed", "", &R::comm_untimed},
      {"cpu_cores", "", &R::cpu_cores},
      {"threads_per_rank", "", &R::threads_per_rank},
      {"activation_checkpointing", "", &R::activation_checkpointing},
      {"hardware_flops_per_sample", "FLOP", &R::hardware_flops_per_sample},
      {"hfu", "", &R::hfu},
      {"bubble_fraction", "", &R::bubble_fraction},
      {"bubble_theory", "", &R::bubble_theory},
      {"cuda_graph", "", &R::cuda_graph},
      {"fused", "", &R::fused},
      {"peak_allocated_bytes", "B", &R::peak_allocated_bytes},
      {"engine", "", &R::engine},
      {"engine_reason", "", &R::engine_reason},
  };
  return cols;
}

std::string csv_header() {
  std::string out;
  for (auto& c : columns()) {
    if (!out.empty()) out += ',';
    out += c.name;
  }
  return out + "\n";
}

std::string csv_row(const RunResult& r) {
  std::string out;
  bool first = true;
  for (auto& c : columns()) {
    if (!first) out += ',';
    first = false;
    std::visit(
        [&](auto m) {
          using T = std::remove_cvref_t<decltype(r.*m)>;
          if constexpr (std::is_same_v<T, std::string>) out += csv_field(r.*m);
          else if constexpr (std::is_same_v<T, double>) out += fmt::format("{:.6g}", r.*m);
          else out += fmt::format("{}", r.*m);
        },
        c.member);
  }
  return out + "\n";
}

nlohmann::json to_json(const RunResult& r) {
  nlohmann::json j = nlohmann::json::object();
  for (auto& c : columns()) std::visit([&](auto m) { j[c.name] = r.*m; }, c.member);
  return j;
}

RunResult from_json(const nlohmann::json& j) {
  RunResult r;
  r.schema_version = 0;  // absent in files older than the field
  // Every schema has had a status: a file without one is not known to be ok.
  if (!j.contains("status")) r.status = "unknown";
  for (auto& c : columns()) {
    auto it = j.find(c.name);
    if (it == j.end()) continue;
    std::visit(
        [&](auto m) {
          using T = std::remove_cvref_t<decltype(r.*m)>;
          // JSON has no NaN or infinity: to_json wrote them as null, and a
          // figure that was NaN must not come back as a trusted 0.
          if (it->is_null()) {
            if constexpr (std::is_same_v<T, double>) r.*m = std::numeric_limits<double>::quiet_NaN();
            return;
          }
          r.*m = it->template get<T>();
        },
        c.member);
  }
  return r;
}

namespace {

int64_t parse_int(const std::string& s, const char* column) {
  int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) fail("column {}: '{}' is not an integer", column, s);
  return v;
}

double parse_double(const std::string& s, const char* column) {
  // strtod rather than from_chars: it also reads "inf" and "nan" as written
  // by fmt, and behaves the same on every standard library.
  errno = 0;
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size()) fail("column {}: '{}' is not a number", column, s);
  return v;
}

}  // namespace

RunResult result_from_csv(const CsvRecord& header, const CsvRecord& record,
                          std::map<std::string, std::string>* extra) {
  if (record.size() != header.size())
    fail("a row has {} fields where the header has {} (truncated or malformed row)", record.size(),
         header.size());
  RunResult r;
  r.schema_version = 0;  // absent in files older than the field
  // Every schema has had a status column: a row without one (or with it
  // empty) is not known to be ok.
  r.status = "unknown";
  const auto& cols = columns();
  for (size_t i = 0; i < header.size(); ++i) {
    const std::string& value = record[i];
    const Column* col = nullptr;
    for (auto& c : cols)
      if (header[i] == c.name) col = &c;
    if (!col) {
      if (extra) (*extra)[header[i]] = value;
      continue;
    }
    // An empty cell is an unknown value: keep the default.
    if (value.empty()) continue;
    std::visit(
        [&](auto m) {
          using T = std::remove_cvref_t<decltype(r.*m)>;
          if constexpr (std::is_same_v<T, std::string>) r.*m = value;
          else if constexpr (std::is_same_v<T, double>) r.*m = parse_double(value, col->name);
          else r.*m = parse_int(value, col->name);
        },
        col->member);
  }
  return r;
}

}  // namespace hpcbench::results
