#include <filesystem>
#include <fstream>

#include "test_catch.h"
#include "test_env.h"

#include "core/error.h"
#include "results/bench_comm_file.h"
#include "predict/collective.h"
#include "predict/system_toml.h"

using namespace hpcbench;

namespace {

predict::System toy(double bw1, double lat1, double eff1, double bw2, double lat2, double eff2, int g) {
  predict::System s;
  s.name = "toy";
  s.gpus_per_node = g;
  s.intra = {"intra", bw1, lat1, eff1};
  s.inter = {"inter", bw2, lat2, eff2};
  return s;
}

}  // namespace

TEST_CASE("bus factors are nccl-tests' (doc/PERFORMANCE.md)") {
  // all-reduce 2(n-1)/n, all-gather and reduce-scatter (n-1)/n, broadcast 1:
  // the documented values written out.
  CHECK(results::bus_factor("all_reduce", 2) == Approx(1.0));
  CHECK(results::bus_factor("all_reduce", 8) == Approx(1.75));
  CHECK(results::bus_factor("all_gather", 8) == Approx(0.875));
  CHECK(results::bus_factor("reduce_scatter", 4) == Approx(0.75));
  CHECK(results::bus_factor("broadcast", 16) == Approx(1.0));
  CHECK(predict::ring_steps("all_reduce", 8) == 14);
  CHECK(predict::ring_steps("all_gather", 8) == 7);
  CHECK(predict::ring_steps("all_reduce", 1) == 0);
}

TEST_CASE("one node: alpha-beta by hand") {
  predict::AlphaBeta m(toy(100, 10, 0.5, 25, 5, 1, 8));
  // 8 ranks, 1 GB all-reduce: 14 steps x 10 us + 1e9 x 1.75 / (100e9 x 0.5) = 0.03514 s
  CHECK(m.seconds("all_reduce", 1e9, {1, 8}) == Approx(0.03514).epsilon(1e-9));
  // 4 ranks, 400 MB all-gather: 3 x 10 us + 4e8 x 0.75 / 50e9 = 0.00603 s
  CHECK(m.seconds("all_gather", 4e8, {1, 4}) == Approx(0.00603).epsilon(1e-9));
  CHECK(m.seconds("reduce_scatter", 4e8, {1, 4}) == Approx(0.00603).epsilon(1e-9));
  CHECK(m.seconds("all_reduce", 1e9, {1, 1}) == 0);
  // The bus bandwidth nccl-tests would print (algbw x factor) tends to the
  // tier's effective rate as the latency term vanishes.
  const double S = 1e13, t = m.seconds("all_reduce", S, {1, 8});
  CHECK(S / t * results::bus_factor("all_reduce", 8) == Approx(50e9).epsilon(1e-6));
}

TEST_CASE("two levels: intra-node reduce-scatter, inter-node all-reduce of a GPU's part, intra all-gather") {
  // 2 nodes x 4 GPUs; NVLink 100 GB/s a GPU; 50 GB/s of NICs a node, so
  // 12.5 GB/s a GPU. All-reduce of 8 GB, by hand:
  //   intra RS + AG: 2 x 8e9 x 3/4 / 100e9            = 0.12 s
  //   inter AR of 2e9 over 2 nodes: 2 x 2e9 x 1/2 / 12.5e9 = 0.16 s
  //   latency: 2 x (3 x 1 us + 1 x 5 us)              = 16 us
  predict::AlphaBeta m(toy(100, 1, 1, 50, 5, 1, 4));
  CHECK(m.seconds("all_reduce", 8e9, {2, 4}) == Approx(0.28 + 16e-6).epsilon(1e-9));
  CHECK(m.seconds("all_gather", 8e9, {2, 4}) == Approx(0.14 + 8e-6).epsilon(1e-9));
  // One GPU a node: a flat ring over the NICs (the whole node's bandwidth),
  // halved when two such groups cross the NICs at once.
  CHECK(m.seconds("all_reduce", 1e9, {4, 1}) == Approx(6 * 5e-6 + 1e9 * 1.5 / 50e9).epsilon(1e-9));
  CHECK(m.seconds("all_reduce", 1e9, {4, 1, 2}) == Approx(6 * 5e-6 + 1e9 * 1.5 / 25e9).epsilon(1e-9));
}

TEST_CASE("bench-comm results: interpolated, extrapolated at the largest row's bandwidth, rescaled by bus factor") {
  auto dir = std::filesystem::temp_directory_path() / "hpcbench_test_predict";
  std::filesystem::create_directories(dir);
  auto file = dir / "comm.txt";
  {
    std::ofstream out(file);
    out << "# hpcbench bench-comm: test\n# backend gloo, 2 rank(s) on 1 node(s) (local), rendezvous x:1\n#\n"
        << results::bench_comm_header();
    for (auto [bytes, us] : {std::pair{1024, 100.0}, {2048, 150.0}}) {
      results::BenchCommRow r{"all_reduce", bytes, bytes / 4, "float", "sum", -1, us, 0, 0, 0};
      out << results::bench_comm_line(r);
    }
  }
  auto m = predict::read_bench_comm(file.string());
  CHECK(m->ranks() == 2);
  CHECK(m->seconds("all_reduce", 1536, {1, 2}) == Approx(125e-6));
  CHECK(m->seconds("all_reduce", 512, {1, 2}) == Approx(100e-6));
  CHECK(m->seconds("all_reduce", 4096, {1, 2}) == Approx(300e-6));
  // 4 ranks: bus factor 1.5 against 1.0 at 2 ranks.
  CHECK(m->seconds("all_reduce", 2048, {1, 4}) == Approx(225e-6));
  CHECK_THROWS_AS(m->seconds("all_gather", 2048, {1, 2}), UserError);
  std::ofstream(dir / "bad.txt") << "no header\n";
  CHECK_THROWS_AS(predict::read_bench_comm((dir / "bad.txt").string()), UserError);
}

TEST_CASE("the shipped system files load, and a bad one is refused by name") {
  auto root = std::filesystem::path(test::source_dir()) / "configs" / "systems";
  for (auto name : {"dgx-a100.toml", "dgx-h100.toml", "a100-pcie-2x.toml", "hdr-ib-200g.toml"}) {
    auto s = predict::read_system((root / name).string());
    CHECK(s.gpus_per_node >= 2);
    CHECK(s.intra.bandwidth_GBps > 0);
    CHECK(s.inter.efficiency <= 1);
  }
  auto a100 = predict::read_system((root / "dgx-a100.toml").string());
  CHECK(a100.gpus_per_node == 8);
  CHECK(a100.inter.bandwidth_GBps == 200);
  auto dir = std::filesystem::temp_directory_path() / "hpcbench_test_predict";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "nointer.toml") << "gpus_per_node = 2\n[intra]\nbandwidth_GBps = 10\nlatency_us = 1\n";
  CHECK_THROWS_WITH(predict::read_system((dir / "nointer.toml").string()), Catch::Contains("[inter]"));
}
