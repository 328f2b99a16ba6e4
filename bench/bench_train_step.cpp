// One training step of BertForQuestionAnswering (forward, backward, gradient
// clipping, AdamW, schedule) timed on the CPU; bench_train_step.py runs it
// beside Hugging Face's model in Python for the comparison.
//
//   bench_train_step --model bert-tiny --batch 8 --seq 128 --steps 20 --warmup 3 --threads 1
//
// Prints one JSON line: the median and every timed step in milliseconds.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.h"
#include "model/bert.h"
#include "train/optimizer.h"

using namespace hpcbench;

int main(int argc, char** argv) {
  std::string preset = "bert-tiny";
  int64_t batch = 8, seq = 128, steps = 20, warmup = 3, threads = 1;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i];
    std::string v = argv[i + 1];
    if (k == "--model") preset = v;
    else if (k == "--batch") batch = std::stoll(v);
    else if (k == "--seq") seq = std::stoll(v);
    else if (k == "--steps") steps = std::stoll(v);
    else if (k == "--warmup") warmup = std::stoll(v);
    else if (k == "--threads") threads = std::stoll(v);
    else {
      std::fprintf(stderr, "unknown option %s\n", k.c_str());
      return 2;
    }
  }
  try {
    at::set_num_threads(static_cast<int>(threads));
    torch::manual_seed(0);
    auto cfg = model::BertConfig::preset(preset);
    model::BertForQuestionAnswering m(cfg);
    m->train();  // dropout on, as in training (and as the Python side)
    auto opt = train::make_adamw(*m, train::OptimizerConfig{5e-5, 0.01, 0.9, 0.999, 1e-8});
    train::LinearSchedule sched(*opt, 5e-5, 0, warmup + steps + 1);
    auto params = m->parameters();

    auto ids = at::randint(1, cfg.vocab_size, {batch, seq}, at::kLong);
    auto types = at::zeros({batch, seq}, at::kLong);
    types.slice(1, seq / 2).fill_(1);
    auto mask = at::ones({batch, seq}, at::kLong);
    auto start = at::randint(0, seq, {batch}, at::kLong);
    auto end = at::clamp_max(start + 3, seq - 1);

    std::vector<double> ms, fwd, bwd;
    using clock = std::chrono::steady_clock;
    auto since = [](clock::time_point t) { return std::chrono::duration<double, std::milli>(clock::now() - t).count(); };
    for (int64_t s = 0; s < warmup + steps; ++s) {
      auto t0 = clock::now();
      auto loss = m->forward(ids, types, mask, start, end).loss;
      double f = since(t0);
      loss.backward();
      double b = since(t0) - f;
      train::clip_grad_norm(params, 1.0);
      opt->step();
      sched.step();
      opt->zero_grad(true);
      if (s >= warmup) {
        ms.push_back(since(t0));
        fwd.push_back(f);
        bwd.push_back(b);
      }
    }
    auto median_of = [](std::vector<double> v) {
      std::sort(v.begin(), v.end());
      return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
    };
    std::cout << fmt::format(
                     "{{\"model\": \"{}\", \"batch\": {}, \"seq\": {}, \"threads\": {}, \"median_ms\": {:.3f}, "
                     "\"forward_ms\": {:.3f}, \"backward_ms\": {:.3f}, \"steps_ms\": [{:.3f}]}}",
                     preset, batch, seq, at::get_num_threads(), median_of(ms), median_of(fwd), median_of(bwd),
                     fmt::join(ms, ", "))
              << std::endl;
  } catch (const UserError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  return 0;
}
