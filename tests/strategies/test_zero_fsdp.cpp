// zero (stages 1-3) and fsdp (full, grad-op) must be the baseline's
// arithmetic, partitioned: after five AdamW steps (weight decay groups,
// clipping engaged) from the same weights on the same global batches, the
// same parameters and losses as one process with the whole batch, over 2 and
// 4 Gloo ranks, with and without gradient accumulation. Each rank is a copy of
// this executable running the hidden [shard_worker] case. Also: the model
// state each rank holds is the ZeRO paper's figure for its stage.
#include <catch2/catch.hpp>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cstdlib>
#include <map>
#include <sstream>

#include "dist/launch_env.h"
#include "dist/process_group.h"
#include "model/bert.h"
#include "model/checkpoint.h"
#include "strategies/fsdp/fsdp.h"
#include "strategies/shard/memory.h"
#include "strategies/zero/zero.h"
#include "test_env.h"
#include "train/batch.h"
#include "train/optimizer.h"
#include "train/step_timer.h"

using namespace hpcbench;
namespace fs = std::filesystem;

namespace {

constexpr int kSteps = 5;
constexpr int64_t kSeq = 16;
constexpr double kMaxNorm = 1.0;

// Eight small layers beside small embeddings: Ψ/N dominates one unit's
// working set, so the memory figures tell the stages apart.
model::BertConfig tiny() {
  model::BertConfig c;
  c.vocab_size = 128;
  c.hidden_size = 32;
  c.num_hidden_layers = 8;
  c.num_attention_heads = 2;
  c.intermediate_size = 64;
  c.max_position_embeddings = 64;
  c.hidden_dropout_prob = 0;
  c.attention_probs_dropout_prob = 0;
  c.name = "tiny-test";
  return c;
}

std::unique_ptr<strategies::shard::Sharded> make(const std::string& spec) {
  if (spec.starts_with("zero")) return strategies::make_zero(std::stoi(spec.substr(4)));
  return strategies::make_fsdp(spec.substr(5));  // "fsdp-full", "fsdp-grad-op"
}

std::string self_exe() {
  char buf[4096];
  auto n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  REQUIRE(n > 0);
  return std::string(buf, size_t(n));
}

int free_port() {
  int s = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len);
  int port = ntohs(a.sin_port);
  ::close(s);
  return port;
}

// Runs `spec` ("baseline", "zero2", "fsdp-full", ...) as `world` processes
// with `rows` rows per rank and micro-step; returns rank 0's outputs.
std::map<std::string, at::Tensor> run(const fs::path& dir, const std::string& spec, int world, int rows, int accum) {
  auto out = dir / (spec + "-" + std::to_string(world) + "-" + std::to_string(rows) + "-" + std::to_string(accum));
  fs::create_directories(out);
  std::ostringstream cmd;
  int port = free_port();
  cmd << "pids=''; ";
  for (int r = 0; r < world; ++r)
    cmd << "RANK=" << r << " WORLD_SIZE=" << world << " LOCAL_RANK=" << r << " LOCAL_WORLD_SIZE=" << world
        << " MASTER_ADDR=127.0.0.1 MASTER_PORT=" << port << " HPCBENCH_SHARD_WORKER='" << spec << " " << rows << " "
        << accum << " " << out.string() << "' " << self_exe() << " '[shard_worker]' > " << (out / std::to_string(r)).string()
        << ".log 2>&1 & pids=\"$pids $!\"; ";
  cmd << "rc=0; for p in $pids; do wait $p || rc=1; done; for f in " << out.string()
      << "/*.log; do tail -n 30 $f; done; exit $rc";
  auto res = test::run_command(cmd.str());
  INFO(spec << " over " << world << " ranks:\n" << res.output);
  REQUIRE(res.exit_code == 0);
  return model::read_safetensors(out / "result.safetensors");
}

void require_same(const std::map<std::string, at::Tensor>& got, const std::map<std::string, at::Tensor>& want,
                  const std::string& what) {
  double num = 0, den = 0;
  for (auto& [k, w] : want) {
    if (!k.starts_with("param/")) continue;
    REQUIRE(got.count(k));
    auto x = got.at(k).to(at::kDouble), y = w.to(at::kDouble);
    num += (x - y).pow(2).sum().item<double>();
    den += y.pow(2).sum().item<double>();
    // qa_outputs.bias has a zero gradient in exact arithmetic (softmax
    // ignores a shift): it holds rounding noise that Adam scales up to
    // ~lr * 1e-2, whatever the order of the sums. The global check covers it.
    if (k == "param/qa_outputs.bias") continue;
    INFO(what << ": " << k);
    CHECK(((x - y).abs() / (1e-5 + 1e-5 * y.abs())).max().item<double>() <= 1.0);
  }
  INFO(what << ": global relative difference " << std::sqrt(num / den));
  CHECK(std::sqrt(num / den) < 1e-5);
  auto lg = got.at("losses"), lw = want.at("losses");
  INFO(what << ": losses " << lg << " vs " << lw);
  CHECK(((lg - lw).abs() / lw.abs()).max().item<double>() < 1e-5);
  auto ng = got.at("norms"), nw = want.at("norms");
  CHECK(((ng - nw).abs() / nw.abs()).max().item<double>() < 1e-4);
}

// The data of micro-step `m`: `global` rows, the same on every rank.
train::Batch batch_of(int64_t m, int64_t global) {
  auto g = at::make_generator<at::CPUGeneratorImpl>(1000 + m);
  train::Batch b;
  b.input_ids = at::randint(1, 128, {global, kSeq}, g, at::kLong);
  b.token_type_ids = (at::arange(kSeq).unsqueeze(0) >= kSeq / 2).to(at::kLong).expand({global, kSeq}).contiguous();
  b.attention_mask = at::ones({global, kSeq}, at::kLong);
  b.attention_mask.narrow(1, kSeq - 3, 3).zero_();
  b.start_positions = at::randint(0, kSeq, {global}, g, at::kLong);
  b.end_positions = at::randint(0, kSeq, {global}, g, at::kLong);
  return b;
}

}  // namespace

// One rank of a run; parameters come from HPCBENCH_SHARD_WORKER.
TEST_CASE("shard worker", "[.][shard_worker]") {
  std::istringstream spec_in(std::getenv("HPCBENCH_SHARD_WORKER"));
  std::string spec, out;
  int rows = 0, accum = 0;
  spec_in >> spec >> rows >> accum >> out;
  at::set_num_threads(1);
  auto layout = dist::detect_layout();
  const int world = layout.world_size, rank = layout.rank;
  torch::manual_seed(3);
  model::BertForQuestionAnswering model(tiny());
  model->train();
  train::OptimizerConfig ocfg{1e-3, 0.01, 0.9, 0.999, 1e-6};
  train::StepTimer timer(c10::kCPU);
  std::vector<double> losses, norms;
  std::map<std::string, at::Tensor> result;

  if (spec == "baseline") {
    auto opt = train::make_adamw(*model, ocfg);
    auto params = model->parameters();
    for (int s = 0; s < kSteps; ++s) {
      double loss = 0;
      for (int a = 0; a < accum; ++a) {
        auto b = batch_of(s * accum + a, rows * world);
        auto o = model->forward(b.input_ids, b.token_type_ids, b.attention_mask, b.start_positions, b.end_positions);
        (o.loss / accum).backward();
        loss += o.loss.item<double>() / accum;
      }
      norms.push_back(train::clip_grad_norm(params, kMaxNorm));
      opt->step();
      opt->zero_grad(true);
      losses.push_back(loss);
    }
  } else {
    dist::CommOptions copts;
    copts.timeout = std::chrono::seconds(60);
    auto comm = std::make_shared<dist::Comm>(layout, c10::Device(c10::kCPU), copts);
    auto strategy = make(spec);
    strategy->setup(model, strategies::StrategyContext{c10::kCPU, rank, world, "fp32", comm});
    auto opt = strategy->make_optimizer(ocfg);
    size_t state_bytes = 0;
    for (int s = 0; s < kSteps; ++s) {
      timer.begin();
      at::Tensor loss = at::zeros({1}, at::kDouble);
      for (int a = 0; a < accum; ++a) {
        auto b = batch_of(s * accum + a, rows * world).slice(rank * rows, (rank + 1) * rows);
        loss += strategy->forward_backward(model, b, 1.0 / accum, a + 1 == accum, timer).to(at::kDouble) / accum;
      }
      strategy->finish_gradients(timer);
      norms.push_back(strategy->clip_grad_norm(kMaxNorm));
      opt->step();
      strategy->after_optimizer_step();
      if (s == 0) state_bytes = strategy->model_state_bytes();
      opt->zero_grad(true);
      comm->allreduce(loss, /*average=*/true);
      losses.push_back(loss.item<double>());
      std::array<double, train::kPhases> ph{};
      timer.end(ph);
    }
    strategy->unshard_model();
    const auto& plan = strategy->plan();
    double theory = strategies::shard::theoretical_model_state_bytes(
        plan.name, plan.stage, plan.sharding, double(strategy->parameters()), world, double(strategy->largest_unit()));
    auto all = at::empty({world}, at::kDouble);
    comm->allgather(all, at::full({1}, double(state_bytes), at::kDouble));
    result["state_bytes"] = all;
    result["theory_bytes"] = at::full({1}, theory, at::kDouble);
    result["ddp_bytes"] = at::full({1}, 16.0 * double(strategy->parameters()), at::kDouble);
    comm->barrier();
  }
  if (rank == 0) {
    for (auto& np : model->named_parameters(true)) result["param/" + np.key()] = np.value().detach().clone();
    result["losses"] = at::tensor(losses, at::kDouble);
    result["norms"] = at::tensor(norms, at::kDouble);
    model::write_safetensors(result, fs::path(out) / "result.safetensors");
  }
}

TEST_CASE("zero stages 1-3 and fsdp equal the baseline with the same global batch") {
  test::TempDir dir;
  auto base4 = run(dir.path, "baseline", 1, 4, 1);
  auto base8 = run(dir.path, "baseline", 1, 8, 1);
  // The comparison can fail: another global batch gives other weights.
  {
    double num = 0, den = 0;
    for (auto& [k, v] : base4)
      if (k.starts_with("param/")) {
        num += (v - base8.at(k)).pow(2).sum().item<double>();
        den += v.pow(2).sum().item<double>();
      }
    CHECK(std::sqrt(num / den) > 1e-4);
  }
  // Clipping is engaged, so the sharded global norm is tested.
  CHECK(base4.at("norms").max().item<double>() > kMaxNorm);

  for (std::string spec : {"zero1", "zero2", "zero3", "fsdp-full", "fsdp-grad-op"}) {
    require_same(run(dir.path, spec, 2, 2, 1), base4, spec + " over 2 ranks");
    require_same(run(dir.path, spec, 4, 2, 1), base8, spec + " over 4 ranks");
  }
}

TEST_CASE("zero and fsdp accumulate gradients over micro-steps") {
  test::TempDir dir;
  auto base = run(dir.path, "baseline", 1, 4, 2);
  for (std::string spec : {"zero1", "zero2", "zero3", "fsdp-full"})
    require_same(run(dir.path, spec, 2, 2, 2), base, spec + " over 2 ranks, accumulation 2");
}

TEST_CASE("model state per rank is the ZeRO paper's figure for 1, 2 and 4 ranks") {
  test::TempDir dir;
  std::map<std::string, std::map<int, double>> measured;
  for (std::string spec : {"zero1", "zero2", "zero3", "fsdp-full", "fsdp-grad-op"})
    for (int world : {1, 2, 4}) {
      auto r = run(dir.path, spec, world, 1, 1);
      double theory = r.at("theory_bytes").item<double>();
      auto bytes = r.at("state_bytes");
      for (int k = 0; k < world; ++k) {
        double got = bytes[k].item<double>();
        INFO(spec << " rank " << k << " of " << world << ": " << got << " bytes, theory " << theory);
        CHECK(std::abs(got - theory) <= 0.05 * theory);
      }
      measured[spec][world] = bytes[0].item<double>();
      // One rank: ddp's 16Ψ plus one unit's working set (grad-op keeps a
      // gathered copy beside the shard, 20Ψ, as FSDP does).
      if (world == 1 && spec != "fsdp-grad-op") CHECK(std::abs(measured[spec][1] - r.at("ddp_bytes").item<double>()) <= 0.1 * theory);
    }
  // Sharding saves memory as the paper says it does.
  CHECK(measured["zero1"][4] < measured["zero1"][1]);
  CHECK(measured["zero2"][4] < measured["zero1"][4]);
  CHECK(measured["zero3"][4] < measured["zero2"][4]);
  CHECK(measured["zero3"][4] < 0.4 * measured["zero3"][1]);
}
