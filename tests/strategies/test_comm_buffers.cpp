// A collective's buffers live no longer than the collective: the step timer,
// which the job's Comm tells of every collective, must not keep the c10d
// works (and the tensors they hold) until the step ends. Measured here as the
// whole process would see it: the CPU allocator's peak over a step of zero 1
// and fsdp over 2 Gloo ranks, against the memory model (docs/memory.md).
//
// On Gloo the works do hold the buffers (ProcessGroupGloo.cpp): an
// all-reduce's AsyncWork keeps its tensors and its future's value (zero 1's
// in-place all-reduced unit gradients), and _reduce_scatter_base returns a
// LambdaWork holding a clone of the whole input, the output and the inner
// all-reduce (fsdp's full unit gradients). Kept to the step's end, that is
// every unit's reduction buffer at once at the end of backward: about 4Ψ
// more in fp32, a third over zero 1's 12Ψ on 2 ranks and half over fsdp's 8Ψ,
// which the bound below does not allow. Each rank is a copy of this
// executable running the hidden [comm_buffers_worker] case.
#include "test_catch.h"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <unordered_map>

#include "counting_allocator.h"
#include "distributed/launch_env.h"
#include "distributed/process_group.h"
#include "specs/registry.h"
#include "strategies/shard/sharded.h"
#include "test_env.h"
#include "train/batch.h"
#include "train/optimizer.h"
#include "train/step_timer.h"

using namespace hpcbench;
namespace fs = std::filesystem;

namespace {

constexpr int64_t kSeq = 8;

// Wide layers, one short sequence: the model state (Ψ ≈ 6.4 M, 4Ψ ≈ 26 MB)
// dwarfs the activations (well under 1 MB), so the peak is the state's.
model::BertConfig wide() {
  model::BertConfig c;
  c.vocab_size = 128;
  c.hidden_size = 256;
  c.num_hidden_layers = 8;
  c.num_attention_heads = 4;
  c.intermediate_size = 1024;
  c.max_position_embeddings = 64;
  c.hidden_dropout_prob = 0;
  c.attention_probs_dropout_prob = 0;
  c.name = "comm-buffers-test";
  return c;
}

train::Batch batch_of(int64_t seed) {
  auto g = at::make_generator<at::CPUGeneratorImpl>(seed);
  train::Batch b;
  b.input_ids = at::randint(1, 128, {1, kSeq}, g, at::kLong);
  b.token_type_ids = at::zeros({1, kSeq}, at::kLong);
  b.attention_mask = at::ones({1, kSeq}, at::kLong);
  b.start_positions = at::randint(0, kSeq, {1}, g, at::kLong);
  b.end_positions = at::randint(0, kSeq, {1}, g, at::kLong);
  return b;
}

std::string self_exe() {
  char buf[4096];
  auto n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  REQUIRE(n > 0);
  return std::string(buf, size_t(n));
}

struct Figures {
  double peak = 0, theory = 0, activations = 0, largest_unit = 0;
};

// Runs `spec` ("zero1", "fsdp") over 2 Gloo ranks; each rank's figures.
std::vector<Figures> run(const fs::path& dir, const std::string& spec) {
  const int world = 2;
  auto out = dir / spec;
  fs::create_directories(out);
  std::ostringstream cmd;
  int port = test::free_loopback_port();
  cmd << "pids=''; ";
  for (int r = 0; r < world; ++r)
    cmd << "RANK=" << r << " WORLD_SIZE=" << world << " LOCAL_RANK=" << r << " LOCAL_WORLD_SIZE=" << world
        << " MASTER_ADDR=127.0.0.1 MASTER_PORT=" << port << " HPCBENCH_COMM_BUFFERS='" << spec << " "
        << out.string() << "' " << self_exe() << " '[comm_buffers_worker]' > " << (out / std::to_string(r)).string()
        << ".log 2>&1 & pids=\"$pids $!\"; ";
  cmd << "rc=0; for p in $pids; do wait $p || rc=1; done; for f in " << out.string()
      << "/*.log; do tail -n 30 $f; done; exit $rc";
  auto res = test::run_command(cmd.str());
  INFO(spec << " over " << world << " ranks:\n" << res.output);
  REQUIRE(res.exit_code == 0);
  std::vector<Figures> figures;
  for (int r = 0; r < world; ++r) {
    std::ifstream in(out / (std::to_string(r) + ".txt"));
    Figures f;
    REQUIRE(in >> f.peak >> f.theory >> f.activations >> f.largest_unit);
    figures.push_back(f);
  }
  return figures;
}

}  // namespace

// One rank: two steps as the trainer runs them (the Comm reports to the step
// timer), the second measured.
TEST_CASE("comm buffers worker", "[.][comm_buffers_worker]") {
  std::istringstream args(std::getenv("HPCBENCH_COMM_BUFFERS"));
  std::string spec, out;
  args >> spec >> out;
  auto& alloc = test::counting();
  at::set_num_threads(1);
  auto layout = dist::detect_layout();
  const int rank = layout.rank, world = layout.world_size;

  // The activations of one forward, which the memory model leaves out: the
  // live bytes a forward adds (outputs and what autograd saves), on a model
  // of its own that is gone before the measured run starts.
  double activations = 0;
  {
    torch::manual_seed(3);
    model::BertForQuestionAnswering plain(wide());
    plain->train();
    auto b = batch_of(100 + rank);
    const int64_t before = alloc.now();
    auto o = plain->forward(b.input_ids, b.token_type_ids, b.attention_mask, b.start_positions, b.end_positions);
    activations = static_cast<double>(alloc.now() - before);
  }

  const int64_t base = alloc.now();
  torch::manual_seed(3);
  model::BertForQuestionAnswering model(wide());
  model->train();
  dist::CommOptions copts;
  copts.timeout = std::chrono::seconds(60);
  auto comm = std::make_shared<dist::Comm>(layout, c10::Device(c10::kCPU), copts);
  auto made = strategies::make_strategy(strategies::parse_label(spec == "zero1" ? "zero:stage=1" : "fsdp", "test"));
  auto* strategy = dynamic_cast<strategies::shard::Sharded*>(made.get());
  REQUIRE(strategy);
  strategies::StrategyContext sctx{c10::kCPU, rank, world, comm, {}, {1e-3, 0.01, 0.9, 0.999, 1e-6}, 0, {}};
  auto [topo, updater_of] = strategy->setup(model, sctx);
  auto& updater = *updater_of;
  train::StepTimer timer(c10::kCPU);
  comm->set_observer(&timer);
  int64_t peak = 0;
  for (int s = 0; s < 2; ++s) {
    auto b = batch_of(s);
    if (s == 1) alloc.reset_peak();  // the first step creates Adam's states
    timer.begin();
    strategy->forward_backward(model, b, 1.0, true, timer);
    strategy->finish_gradients(timer);
    updater.step();
    timer.end();
    if (s == 1) peak = alloc.peak_now() - base;
    updater.zero_grad();
  }
  comm->set_observer(nullptr);
  comm->barrier();
  std::ofstream(fs::path(out) / (std::to_string(rank) + ".txt"))
      << peak << " " << topo.state_theory_bytes << " " << activations << " " << strategy->largest_unit()
      << "\n";
}

TEST_CASE("a step's peak memory is the memory model's: collective buffers go with their collective") {
  test::TempDir dir;
  for (std::string spec : {"zero1", "fsdp"}) {
    auto figures = run(dir.path, spec);
    for (size_t r = 0; r < figures.size(); ++r) {
      const auto& f = figures[r];
      INFO(spec << " rank " << r << ": peak " << f.peak << " B, memory model " << f.theory << " B, activations "
                << f.activations << " B");
      // The model's state and working set, the activations it leaves out,
      // for fsdp Gloo's copies (communication buffers the model leaves out):
      // the reduce-scatter's clone of its input in flight and, beside it
      // under prefetch, the all-gather's flat output that Gloo copies into
      // the gather slot (4 bytes times at most the largest unit each),
      // and 5 % of the model for what none of these counts: backward's
      // temporaries (an activation's gradient beside it, a layer at a time),
      // the optimizer's scratch, the batch. Measured: +1 % for zero 1, +3 %
      // for fsdp. Buffers kept until the step's end would add about 4Ψ (see
      // above): 33-50 % of the model.
      const double gloo_copy = spec == "fsdp" ? 2 * 4 * f.largest_unit : 0;
      CHECK(f.peak <= 1.05 * f.theory + f.activations + gloo_copy);
      // The bound is not loose from below either: the model's state is there.
      CHECK(f.peak >= 0.9 * f.theory);
    }
  }
}
