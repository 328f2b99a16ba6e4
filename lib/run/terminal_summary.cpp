#include "run/terminal_summary.h"

#include <fmt/format.h>

#include "core/text_wrap.h"

namespace hpcbench::run {

void print_summary(const results::RunResult& r, const std::string& folder, const nlohmann::json& notice) {
  // Wrapped as the log lines are (core/text_wrap.h): results paths and the
  // strategy line can be wider than a terminal.
  std::string out;
  if (r.status == "interrupted" && !notice.empty()) {
    auto& i = notice;
    out += fmt::format("\n  INTERRUPTED by {} during {}: {} of {} steps done; the figures below are over those steps\n",
                       i.value("signal", std::string("a signal")), i.value("during", std::string("")), r.steps,
                       i.value("steps_planned", int64_t{0}));
  }
  out += fmt::format("\n  {} on {} x {} ({}), {} {}, seq {}, global batch {}\n", r.strategy, r.world_size,
                     r.device_name, r.device, r.model, r.precision, r.seq_length, r.global_batch);
  out += fmt::format("  Step time: median {:.2f} ms (min {:.2f}, IQR {:.2f}; p90 {:.2f}, max {:.2f}), {} timed steps\n",
                     r.step_ms_median, r.step_ms_min, r.step_ms_iqr, r.step_ms_p90, r.step_ms_max, r.timed_steps);
  if (r.step_outliers > 0)
    out += fmt::format("  Outlier steps: {} ({}); the median leaves them out, the throughput counts them\n",
                       r.step_outliers, r.step_outlier_steps);
  out += fmt::format("  Throughput:  {:10.1f} samples/s  {:12.0f} tokens/s  {:8.1f} samples/s per device\n",
                     r.samples_per_s, r.tokens_per_s, r.samples_per_s_per_device);
  out += fmt::format("  Phases (median): data {:.2f} ms, forward {:.2f} ms, backward {:.2f} ms, optimizer {:.2f} ms\n",
                     r.data_ms, r.forward_ms, r.backward_ms, r.optimizer_ms);
  if (r.mfu > 0)
    out += fmt::format("  MFU {:.1f}%{} of {} TFLOP/s\n", 100 * r.mfu,
                       r.activation_checkpointing ? fmt::format(" (HFU {:.1f}%, the recomputed forward counted)", 100 * r.hfu)
                                                  : "",
                       r.peak_tflops);
  out += fmt::format("  Peak memory {:.1f} MiB, model state {:.1f} MiB (memory model {:.1f} MiB); final loss {:.4f}\n",
                     r.peak_memory_bytes / 1048576.0, r.model_state_bytes / 1048576.0,
                     r.model_state_theory_bytes / 1048576.0, r.final_train_loss);
  if (r.utilisation_mean_percent >= 0)
    out += fmt::format("  Utilisation ({}) {:.1f}%{}\n", r.utilisation_of, r.utilisation_mean_percent,
                       r.energy_j >= 0 ? fmt::format(", power {:.1f} W, energy {:.1f} J ({}), {:.1f} samples/kJ", r.power_mean_w,
                                                     r.energy_j, r.energy_method, r.samples_per_kj)
                                       : "");
  if (r.val_loss >= 0) out += fmt::format("  Validation loss {:.4f}\n", r.val_loss);
  if (r.exact_match >= 0) out += fmt::format("  EM {:.2f}  F1 {:.2f}\n", r.exact_match, r.f1);
  out += fmt::format("  Results: {}\n", folder);
  fmt::print("{}", wrap_text(out, output_columns()));
}

}  // namespace hpcbench::run
