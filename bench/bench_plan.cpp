// `hpcbench plan`'s search over the whole space, timed at 1, 8, 64 and 512
// nodes of a system (lib/plan, the code the command runs): layouts
// enumerated, refused, predicted, the search's wall time; and the top N of
// each search. BERT's layout is worked out once, as the command does it.
//
//   build/bench/bench_plan --row dgxa100-fp16-1 --system configs/systems/dgx-a100.toml
//     --baseline results/reference/nvidia_dle_bert_large_squad11_a100.csv --per-gpu 32 --nodes 1,8,64,512
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/split.h"
#include "model/bert.h"
#include "plan/search.h"
#include "plan/text.h"
#include "predict/baseline.h"
#include "predict/layout.h"
#include "predict/system_toml.h"
#include "train/flops.h"

using namespace hpcbench;

int main(int argc, char** argv) {
  std::string baseline, row, system, nodes = "1,8,64,512";
  int64_t per_gpu = 32;
  int top = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--baseline") baseline = v;
    else if (k == "--row") row = v;
    else if (k == "--system") system = v;
    else if (k == "--nodes") nodes = v;
    else if (k == "--per-gpu") per_gpu = std::atoll(v.c_str());
    else if (k == "--top") top = std::atoi(v.c_str());
    else {
      fmt::print(stderr, "unknown flag {}\n", k);
      return 2;
    }
  }
  try {
    std::string model_path;
    plan::Request r;
    r.base = predict::read_baseline(baseline, row, &model_path);
    auto sys = predict::read_system(system);
    auto cfg = model::BertConfig::preset(model_path);
    auto built = std::chrono::steady_clock::now();
    auto layout = predict::model_layout(cfg, r.base.seq);
    const double layout_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - built).count();
    predict::AlphaBeta comm(sys);
    r.layout = &layout;
    r.comm = &comm;
    r.model = {cfg.vocab_size, cfg.hidden_size, cfg.num_hidden_layers, cfg.num_attention_heads,
               cfg.intermediate_size, cfg.max_position_embeddings, cfg.type_vocab_size};
    r.memory_limit = sys.memory_bytes;
    r.device_kind = sys.device;
    r.device_name = sys.device_name;
    for (std::string p : {"fp32", "tf32", "bf16", "fp16"}) r.peak_tflops[p] = train::peak_tflops(sys.device_name, p);
    r.baseline_noise = r.base.step_noise;
    fmt::print("# {} on {}; the model's layout worked out once in {:.2f} s\n", r.base.source, sys.name, layout_s);
    std::string table = fmt::format("{:>6} {:>6} {:>12} {:>10} {:>9} {:>10}\n", "nodes", "ranks", "global batch",
                                    "enumerated", "predicted", "search s");
    for (auto& n : split(nodes)) {
      r.shape = {std::atoi(n.c_str()), sys.gpus_per_node};
      r.global_batch = per_gpu * r.shape.world();
      auto res = plan::search(r);
      table += fmt::format("{:>6} {:>6} {:>12} {:>10} {:>9} {:>10.3f}\n", r.shape.nodes, r.shape.world(),
                           r.global_batch, res.space.enumerated, res.ranked.size(), res.seconds);
      fmt::print("\n{}{}", plan::plan_text(res, r, top), plan::cost_text(res, r, 3, 100));
    }
    fmt::print("\n{}", table);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 2;
  }
  return 0;
}
