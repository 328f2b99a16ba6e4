// --cuda-graph on a CPU, through the real binary: the graph-ready step (fixed
// batch buffers, a tensor learning rate, no host synchronisation, the whole
// step as one unit a graph would capture) runs uncaptured there and must
// train exactly as the eager step does; no operation inside it waits on the
// device; and what cannot be captured is refused before launch, naming the
// flag and the reason.
#include <algorithm>
#include <regex>
#include <string>

#include "cli_parity.h"

using namespace hpcbench;
using test::parity::Run;

namespace {

// bert-tiny, fp32, dropout off (tests/strategies/cli_parity.h), 20 steps.
Run run20(const test::TempDir& dir, const std::string& name, const std::string& args) {
  auto ckpt = dir.path / (name + ".safetensors");
  auto results = dir.path / ("results-" + name);
  auto r = test::run_command(test::parity::bin() + " run" + test::parity::kCommon + " --max-steps 20 --log-every 1000 " +
                             args + " --run-name " + name + " --results-dir " + results.string() +
                             " --save-checkpoint " + ckpt.string());
  INFO(args << "\n" << r.output);
  REQUIRE(r.exit_code == 0);
  Run out;
  out.params = model::read_safetensors(ckpt);
  out.json = nlohmann::json::parse(test::slurp(results / name / "run.json"));
  for (auto& s : out.json["steps"]) out.losses.push_back(s["loss"].get<double>());
  return out;
}

// Bit for bit: the graph-ready step runs the same operations on the same
// values in the same order (the rate reaches ATen's fused AdamW as a double
// tensor that its CPU kernel reads back exactly), so no tolerance is needed.
// The one difference in what is passed is the attention mask, which the
// eager step leaves out for a batch without padding and a fixed buffer
// always holds: on a CPU the model drops an all-ones mask itself
// (model::key_mask_of), so the same attention runs.
void require_identical(const Run& graph, const Run& eager) {
  REQUIRE(graph.losses.size() == eager.losses.size());
  REQUIRE(graph.losses.size() == 20);
  for (size_t i = 0; i < graph.losses.size(); ++i) {
    INFO("step " << i + 1);
    CHECK(graph.losses[i] == eager.losses[i]);
  }
  auto d = test::parity::compare(graph.params, eager.params);
  INFO("worst tensor " << d.worst_tensor);
  CHECK(d.global_rel == 0.0);
}

// `args` run eagerly and graph-ready, 20 steps each: they train identically,
// and the graph-ready run says that a CPU did not capture it.
Run graph_equals_eager(const test::TempDir& dir, const std::string& name, const std::string& args) {
  auto eager = run20(dir, name + "-eager", args);
  auto graph = run20(dir, name + "-graph", args + " --cuda-graph");
  require_identical(graph, eager);
  CHECK(graph.json["result"]["cuda_graph"].get<std::string>().starts_with("not captured: cpu"));
  return graph;
}

}  // namespace

TEST_CASE("the graph-ready step trains exactly as the eager step") {
  test::TempDir dir;
  struct Case {
    std::string name, args;
  };
  const std::vector<Case> cases = {
      {"baseline", "--batch-size 4"},
      {"baseline-accum", "--batch-size 2 --grad-accum 2"},
      {"ddp", "--strategy ddp --nproc-per-node 2 --batch-size 2"},
      {"tensor", "--strategy tensor --tp-size 2 --nproc-per-node 2 --batch-size 4"},
      // The fused model's bf16 weights with fp32 masters (its copies between
      // them are part of the captured step).
      {"fused-bf16", "--batch-size 4 --precision bf16 --fused"},
  };
  for (const auto& c : cases) {
    INFO(c.name);
    auto eager = run20(dir, c.name + "-eager", c.args);
    auto graph = run20(dir, c.name + "-graph", c.args + " --cuda-graph");
    require_identical(graph, eager);
    CHECK(eager.json["result"]["cuda_graph"] == "off");
    // A CPU cannot capture: the run says so rather than claiming a graph.
    CHECK(graph.json["result"]["cuda_graph"].get<std::string>().starts_with("not captured: cpu"));
    CHECK(graph.json["result"]["fused"] == (c.name == "fused-bf16" ? 1 : 0));
  }
}

// The sharded engine (zero 1-3, fsdp full / grad-op / hybrid) on 1 and 2
// Gloo ranks (hybrid on 4 too), and the other strategies that declare capture at 1 rank: the
// same bit-for-bit equality. On 2 ranks the collectives run (Gloo), so the
// in-place gathers, the static gradient and part rings and the zeroed
// gradients are all exercised as a replay would run them.
TEST_CASE("the graph-ready step of every capturable strategy trains exactly as its eager step, on 1 and 2 ranks") {
  test::TempDir dir;
  const std::vector<std::pair<std::string, std::string>> strategies = {
      {"zero1", "--strategy zero --zero-stage 1"},
      {"zero2", "--strategy zero --zero-stage 2"},
      {"zero3", "--strategy zero --zero-stage 3"},
      {"fsdp-full", "--strategy fsdp --sharding full"},
      {"fsdp-grad-op", "--strategy fsdp --sharding grad-op"},
      {"fsdp-hybrid", "--strategy fsdp --sharding hybrid --shard-group-size 1"},
  };
  std::vector<std::pair<std::string, std::string>> cases;
  for (auto& [name, args] : strategies)
    for (int ranks : {1, 2})
      cases.emplace_back(name + "-" + std::to_string(ranks),
                         args + " --nproc-per-node " + std::to_string(ranks) + " --batch-size " + (ranks == 1 ? "4" : "2"));
  cases.emplace_back("ddp-1", "--strategy ddp --nproc-per-node 1 --batch-size 4");
  cases.emplace_back("tensor-1", "--strategy tensor --tp-size 1 --nproc-per-node 1 --batch-size 4");
  cases.emplace_back("zero3-accum-2", "--strategy zero --zero-stage 3 --nproc-per-node 2 --batch-size 1 --grad-accum 2");
  // Hybrid on 2 ranks is either of its degenerate ends (a shard group of 1:
  // replicas only; of 2: fsdp full). On 4, two groups of 2 shard within and
  // reduce across: the gathers, reduce-scatters and the replicas'
  // all-reduce in one step, as a replay would issue them.
  cases.emplace_back("fsdp-hybrid-4", "--strategy fsdp --sharding hybrid --shard-group-size 2 --nproc-per-node 4 --batch-size 1");
  for (const auto& [name, args] : cases) {
    INFO(name);
    graph_equals_eager(dir, name, args);
  }
}

TEST_CASE("an epoch's short last micro-batch runs outside the graph, its real rows counted") {
  test::TempDir dir;
  // 64 synthetic samples at batch 5 leave a short last micro-batch in each
  // epoch; 20 steps cross at least one epoch's end.
  auto eager = run20(dir, "short-eager", "--batch-size 5");
  auto graph = run20(dir, "short-graph", "--batch-size 5 --cuda-graph");
  require_identical(graph, eager);
  const auto text = graph.json["result"]["cuda_graph"].get<std::string>();
  INFO(text);
  std::smatch m;
  REQUIRE(std::regex_search(text, m, std::regex(R"((\d+) short steps outside)")));
  int64_t short_rows = 0;
  for (size_t i = 0; i < eager.json["steps"].size(); ++i) {
    CHECK(graph.json["steps"][i]["samples"] == eager.json["steps"][i]["samples"]);
    short_rows += eager.json["steps"][i]["samples"].get<int64_t>() < 5 ? 1 : 0;
  }
  CHECK(std::stoi(m[1]) == short_rows);
  CHECK(short_rows > 0);
}

namespace {
// Every "syncs rank R step S: N [...]" line of a run with HPCBENCH_CHECK_SYNC=1.
std::vector<std::pair<int, std::string>> sync_lines(const test::TempDir& dir, const std::string& name,
                                                    const std::string& args) {
  auto cmd = "HPCBENCH_CHECK_SYNC=1 " + test::parity::bin() + " run" + test::parity::kCommon +
             " --max-steps 4 --log-every 1000 " + args + " --run-name " + name + " --results-dir " +
             (dir.path / ("results-" + name)).string();
  auto r = test::run_command(cmd);
  INFO(cmd << "\n" << r.output);
  REQUIRE(r.exit_code == 0);
  std::vector<std::pair<int, std::string>> out;
  std::regex line(R"(syncs rank \d+ step \d+: (\d+) \[([^\]]*)\])");
  for (std::sregex_iterator it(r.output.begin(), r.output.end(), line), end; it != end; ++it)
    out.emplace_back(std::stoi((*it)[1]), (*it)[2]);
  return out;
}
}  // namespace

TEST_CASE("no host synchronisation runs inside the graph-ready step, and the detector sees one that does") {
  test::TempDir dir;
  int case_index = 0;
  // Every strategy that declares capture (pipeline's one stage has its own
  // case below, tensor under --fused too).
  for (const std::string strategy : {"", "--strategy ddp --nproc-per-node 2",
                                     "--strategy zero --zero-stage 1 --nproc-per-node 2",
                                     "--strategy zero --zero-stage 2 --nproc-per-node 2",
                                     "--strategy zero --zero-stage 3 --nproc-per-node 2",
                                     "--strategy fsdp --sharding full --nproc-per-node 2",
                                     "--strategy fsdp --sharding grad-op --nproc-per-node 2",
                                     "--strategy fsdp --sharding hybrid --shard-group-size 1 --nproc-per-node 2",
                                     "--strategy tensor --tp-size 2 --nproc-per-node 2"}) {
    // Each data-parallel replica two rows; the baseline and tensor's one replica four.
    bool one_replica = strategy.empty() || strategy.find("tensor") != std::string::npos;
    const std::string args = strategy + (one_replica ? " --batch-size 4" : " --batch-size 2") + " --cuda-graph";
    INFO(args);
    auto lines = sync_lines(dir, "graph" + std::to_string(case_index++), args);
    CHECK(lines.size() >= 4);  // every step of every rank reports
    for (auto& [n, names] : lines) {
      INFO(names);
      CHECK(n == 0);
    }
  }
  // The eager step with fp16's loss scaling reads its overflow verdict on the
  // host inside the step: the detector must report it on every step.
  auto lines = sync_lines(dir, "fp16", "--batch-size 4 --precision fp16");
  REQUIRE(lines.size() == 4);
  for (auto& [n, names] : lines) {
    INFO(names);
    CHECK(n > 0);
    CHECK(names.find("_local_scalar_dense") != std::string::npos);
  }
}

TEST_CASE("what --cuda-graph cannot capture is refused before launch, naming the flag and the reason") {
  test::TempDir dir;
  struct Case {
    std::string args, reason;
  };
  const std::vector<Case> cases = {
      {"--strategy dp", "several devices"},
      // Named with its reason: two stages on two ranks, their activations
      // and gradients point to point (a pipeline of one stage is captured).
      {"--strategy pipeline --nproc-per-node 2", "--strategy pipeline: its 2 stages pass activations and gradients "
                                                 "between ranks by point-to-point send and receive"},
      {"--strategy pipeline --nproc-per-node 2 --micro-batches 2", "NCCL's send and recv inside a CUDA graph"},
      {"--precision fp16", "loss scaling"},
      {"--activation-checkpointing", "random generator"},
  };
  for (const auto& c : cases) {
    auto results = dir.path / "refused";
    auto r = test::run_command(test::parity::bin() + " run" + test::parity::kCommon + " --max-steps 2 --cuda-graph " +
                               c.args + " --run-name refused --results-dir " + results.string());
    INFO(c.args << "\n" << r.output);
    CHECK(r.exit_code != 0);
    CHECK(r.output.find("--cuda-graph") != std::string::npos);
    CHECK(r.output.find(c.reason) != std::string::npos);
    CHECK(!std::filesystem::exists(results / "refused"));  // nothing half-written
  }
}

namespace {
struct Allocs {
  int step;
  int64_t calls, freed, kept;
};
// Every "allocs rank R step S: ..." line of a 5-step run with
// HPCBENCH_CHECK_ALLOC=1.
std::vector<Allocs> alloc_lines(const test::TempDir& dir, const std::string& name, const std::string& args) {
  auto cmd = "HPCBENCH_CHECK_ALLOC=1 " + test::parity::bin() + " run" + test::parity::kCommon +
             " --max-steps 5 --log-every 1000 " + args + " --run-name " + name + " --results-dir " +
             (dir.path / ("results-" + name)).string();
  auto r = test::run_command(cmd);
  INFO(cmd << "\n" << r.output);
  REQUIRE(r.exit_code == 0);
  std::vector<Allocs> out;
  std::regex line(R"(allocs rank \d+ step (\d+): (\d+) calls, (\d+) freed from before, (\d+) kept)");
  for (std::sregex_iterator it(r.output.begin(), r.output.end(), line), end; it != end; ++it)
    out.push_back({std::stoi((*it)[1]), std::stoll((*it)[2]), std::stoll((*it)[3]), std::stoll((*it)[4])});
  return out;
}
}  // namespace

// The allocation half of the capture contract (train/alloc_count.h): from
// the third step on, a graph-ready step frees nothing made before it and
// leaves nothing it made alive for the next, under every strategy that
// declares capture; the eager step, which frees the batch it was handed
// inside the step, is the case the counter must see.
TEST_CASE("from the third step on, the graph-ready step neither frees nor keeps storage across its bounds") {
  test::TempDir dir;
  const std::vector<std::string> cases = {
      "--batch-size 4",
      "--strategy ddp --nproc-per-node 2 --batch-size 2",
      "--strategy zero --zero-stage 1 --nproc-per-node 2 --batch-size 2",
      "--strategy zero --zero-stage 2 --nproc-per-node 2 --batch-size 2",
      "--strategy zero --zero-stage 3 --nproc-per-node 2 --batch-size 2",
      "--strategy fsdp --sharding full --nproc-per-node 2 --batch-size 2",
      "--strategy fsdp --sharding grad-op --nproc-per-node 2 --batch-size 2",
      "--strategy fsdp --sharding hybrid --shard-group-size 1 --nproc-per-node 2 --batch-size 2",
      "--strategy tensor --tp-size 2 --nproc-per-node 2 --batch-size 4",
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO(cases[i]);
    auto lines = alloc_lines(dir, "alloc" + std::to_string(i), cases[i] + " --cuda-graph");
    CHECK(lines.size() >= 5);  // every step of every rank reports
    for (auto& a : lines) {
      INFO("step " << a.step << ": " << a.calls << " calls, " << a.freed << " freed, " << a.kept << " kept");
      CHECK(a.calls > 0);  // the counter sees the step's temporaries
      if (a.step >= 3) CHECK(a.freed == 0);
      if (a.step >= 4) CHECK(a.kept == 0);  // step 3's blocks, seen as step 4 starts
    }
  }
  // The eager step that gathers its own batch frees the micro-batch made
  // before its first mark (a prefetched one lives in the ring, made once).
  auto eager = alloc_lines(dir, "alloc-eager", "--batch-size 4 --no-batch-prefetch");
  REQUIRE(eager.size() == 5);
  for (auto& a : eager)
    if (a.step >= 3) CHECK(a.freed > 0);
}

// Pipeline at one stage (one rank; or --stages 1 with data parallelism over
// 2 Gloo ranks; and under --fused bf16): its graph-ready step, micro-batches
// cut from the fixed buffers, trains exactly as its eager step over 20
// steps, its stage's busy spans still measured; from the third step on it
// neither synchronises with the host nor frees or keeps storage across its
// bounds.
TEST_CASE("pipeline at one stage: the graph-ready step trains exactly as eager, with no sync or allocation across it") {
  test::TempDir dir;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"pp1-gpipe", "--strategy pipeline --nproc-per-node 1 --batch-size 4 --micro-batches 2"},
      {"pp1-1f1b-accum",
       "--strategy pipeline --nproc-per-node 1 --batch-size 4 --micro-batches 4 --schedule 1f1b --grad-accum 2"},
      {"pp1-dp2", "--strategy pipeline --stages 1 --nproc-per-node 2 --batch-size 2 --micro-batches 2"},
      // The fused model with the stage's bf16 weights over fp32 masters: the
      // masters' gradients copied in, stepped and copied out inside the step.
      {"pp1-fused-bf16",
       "--strategy pipeline --nproc-per-node 1 --batch-size 4 --micro-batches 2 --schedule 1f1b --grad-accum 2 "
       "--precision bf16 --fused"},
  };
  for (const auto& [name, args] : cases) {
    INFO(name);
    auto graph = graph_equals_eager(dir, name, args);
    // The stage's instants were recorded on the graph-ready path too: every
    // step has a measured bubble, a share of its window.
    for (auto& s : graph.json["steps"]) {
      REQUIRE(s.contains("bubble"));
      CHECK(s["bubble"].get<double>() >= 0);
      CHECK(s["bubble"].get<double>() < 1);
    }
  }
  for (const auto& [name, args] : cases) {
    INFO(name);
    auto syncs = sync_lines(dir, "sync-" + name, args + " --cuda-graph");
    CHECK(syncs.size() >= 4);
    for (auto& [n, names] : syncs) {
      INFO(names);
      CHECK(n == 0);
    }
    auto allocs = alloc_lines(dir, "alloc-" + name, args + " --cuda-graph");
    CHECK(allocs.size() >= 5);
    for (auto& a : allocs) {
      INFO("step " << a.step << ": " << a.calls << " calls, " << a.freed << " freed, " << a.kept << " kept");
      CHECK(a.calls > 0);
      if (a.step >= 3) CHECK(a.freed == 0);
      if (a.step >= 4) CHECK(a.kept == 0);
    }
  }
}

// Tensor parallelism under --fused bf16 on 1 and 2 Gloo ranks: the shard's
// masters stepped by the fused master-weight AdamW, whose norm over the
// group (the split tensors' squares all-reduced on the device) sets the
// clip coefficient the step reads. Its graph-ready step trains exactly as
// its eager step over 20 steps, and from the third step on neither
// synchronises with the host nor frees or keeps storage across its bounds.
TEST_CASE("tensor under --fused bf16: the graph-ready step trains exactly as eager, with no sync or allocation across it") {
  test::TempDir dir;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"tp1-fused-bf16", "--strategy tensor --tp-size 1 --nproc-per-node 1 --batch-size 4 --precision bf16 --fused"},
      {"tp2-fused-bf16", "--strategy tensor --tp-size 2 --nproc-per-node 2 --batch-size 4 --precision bf16 --fused"},
  };
  for (const auto& [name, args] : cases) {
    INFO(name);
    auto graph = graph_equals_eager(dir, name, args);
    CHECK(graph.json["result"]["fused"] == 1);
    auto syncs = sync_lines(dir, "sync-" + name, args + " --cuda-graph");
    CHECK(syncs.size() >= 4);
    for (auto& [n, names] : syncs) {
      INFO(names);
      CHECK(n == 0);
    }
    auto allocs = alloc_lines(dir, "alloc-" + name, args + " --cuda-graph");
    CHECK(allocs.size() >= 5);
    for (auto& a : allocs) {
      INFO("step " << a.step << ": " << a.calls << " calls, " << a.freed << " freed, " << a.kept << " kept");
      CHECK(a.calls > 0);
      if (a.step >= 3) CHECK(a.freed == 0);
      if (a.step >= 4) CHECK(a.kept == 0);
    }
  }
}
