#include "test_catch.h"

#include "core/error.h"
#include "distributed/launch_env.h"
#include "distributed/process_group.h"

using namespace hpcbench;
using dist::EnvMap;

namespace {
EnvMap slurm_step(int procid, int ntasks, int localid, int nodeid) {
  return {{"SLURM_JOB_ID", "123456"},          {"SLURM_STEP_ID", "0"},
          {"SLURM_PROCID", std::to_string(procid)}, {"SLURM_NTASKS", std::to_string(ntasks)},
          {"SLURM_LOCALID", std::to_string(localid)}, {"SLURM_NODEID", std::to_string(nodeid)},
          {"SLURM_STEP_NUM_NODES", "2"},       {"SLURM_STEP_TASKS_PER_NODE", "4(x2)"},
          {"SLURM_STEP_NODELIST", "gpu-[007-008]"}, {"SLURM_JOB_NODELIST", "gpu-[001-008]"}};
}
}  // namespace

TEST_CASE("no launcher: a single process") {
  auto l = dist::detect_layout(EnvMap{{"HOME", "/root"}});
  CHECK(l.source == "single");
  CHECK(l.rank == 0);
  CHECK(l.world_size == 1);
  CHECK(l.num_nodes == 1);
  // Its own rendezvous: a free port, not torchrun's 29500 that a second
  // single-rank job on the node would also claim; MASTER_PORT still chooses.
  CHECK(l.master_port == 0);
  CHECK(dist::detect_layout(EnvMap{{"MASTER_PORT", "29511"}}).master_port == 29511);
}

TEST_CASE("SLURM step: ranks, nodes, first host and the job's port") {
  auto l = dist::detect_layout(slurm_step(6, 8, 2, 1));
  CHECK(l.source == "slurm");
  CHECK(l.rank == 6);
  CHECK(l.world_size == 8);
  CHECK(l.local_rank == 2);
  CHECK(l.local_world_size == 4);
  CHECK(l.node_rank == 1);
  CHECK(l.num_nodes == 2);
  CHECK(l.master_addr == "gpu-007");  // the step's first host, not the job's
  CHECK(l.master_port == 20000 + 123456 % 20000);
  CHECK(l.hosts == std::vector<std::string>{"gpu-007", "gpu-008"});
}

TEST_CASE("SLURM: the port follows the job id so two jobs on a node differ") {
  auto a = slurm_step(0, 8, 0, 0), b = slurm_step(0, 8, 0, 0);
  b["SLURM_JOB_ID"] = "123457";
  CHECK(dist::detect_layout(a).master_port != dist::detect_layout(b).master_port);
  CHECK(dist::default_port_for_job("40000") == 20000);
  CHECK(dist::default_port_for_job("39999") == 39999);
  CHECK(dist::default_port_for_job("777_3") == 20777);
  CHECK_THROWS_AS(dist::default_port_for_job("abc"), UserError);
}

TEST_CASE("SLURM: MASTER_ADDR and MASTER_PORT override, uneven tasks per node") {
  auto env = slurm_step(6, 7, 2, 1);
  env["SLURM_STEP_TASKS_PER_NODE"] = "4,3";
  env["MASTER_ADDR"] = "10.0.0.5";
  env["MASTER_PORT"] = "31337";
  auto l = dist::detect_layout(env);
  CHECK(l.master_addr == "10.0.0.5");
  CHECK(l.master_port == 31337);
  CHECK(l.local_world_size == 3);
}

TEST_CASE("SLURM batch script (no step) is a single process") {
  auto env = slurm_step(0, 8, 0, 0);
  env.erase("SLURM_STEP_ID");
  CHECK(dist::detect_layout(env).source == "single");
}

TEST_CASE("SLURM: the host list goes through the resolver (scontrol in production)") {
  auto l = dist::detect_layout(slurm_step(0, 8, 0, 0), [](std::string_view) {
    return std::vector<std::string>{"alpha", "beta"};
  });
  CHECK(l.master_addr == "alpha");
}

TEST_CASE("torchrun variables win over SLURM's") {
  EnvMap env = slurm_step(0, 8, 0, 0);
  env.merge(EnvMap{{"RANK", "5"}, {"WORLD_SIZE", "8"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "4"},
                   {"GROUP_RANK", "1"}, {"MASTER_ADDR", "head"}, {"MASTER_PORT", "29555"}});
  auto l = dist::detect_layout(env);
  CHECK(l.source == "torchrun");
  CHECK(l.rank == 5);
  CHECK(l.world_size == 8);
  CHECK(l.local_rank == 1);
  CHECK(l.local_world_size == 4);
  CHECK(l.node_rank == 1);
  CHECK(l.num_nodes == 2);
  CHECK(l.master_addr == "head");
  CHECK(l.master_port == 29555);
}

TEST_CASE("torchrun defaults: one node, port 29500") {
  auto l = dist::detect_layout(EnvMap{{"RANK", "1"}, {"WORLD_SIZE", "2"}});
  CHECK(l.local_rank == 1);
  CHECK(l.local_world_size == 2);
  CHECK(l.num_nodes == 1);
  CHECK(l.master_addr == "127.0.0.1");
  CHECK(l.master_port == 29500);
}

TEST_CASE("inconsistent rank variables are errors naming the variable") {
  CHECK_THROWS_WITH(dist::detect_layout(EnvMap{{"RANK", "2"}, {"WORLD_SIZE", "2"}}), Catch::Contains("RANK=2"));
  CHECK_THROWS_WITH(dist::detect_layout(EnvMap{{"RANK", "0"}}), Catch::Contains("WORLD_SIZE"));
  CHECK_THROWS_WITH(dist::detect_layout(EnvMap{{"RANK", "x"}, {"WORLD_SIZE", "2"}}), Catch::Contains("RANK='x'"));
  CHECK_THROWS_WITH(dist::detect_layout(EnvMap{{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}}),
                    Catch::Contains("MASTER_PORT"));
  auto env = slurm_step(0, 8, 0, 0);
  for (const char* bad : {"four", "4,,4", "4,4,"}) {
    INFO(bad);
    env["SLURM_STEP_TASKS_PER_NODE"] = bad;
    CHECK_THROWS_WITH(dist::detect_layout(env), Catch::Contains("SLURM_STEP_TASKS_PER_NODE"));
  }
  env = slurm_step(9, 8, 0, 0);
  CHECK_THROWS_WITH(dist::detect_layout(env), Catch::Contains("SLURM_PROCID=9"));
}

TEST_CASE("requested nodes / GPUs per node are checked against the job") {
  auto l = dist::detect_layout(slurm_step(0, 8, 0, 0));
  CHECK_NOTHROW(dist::check_layout(l, {.nodes = 2, .gpus_per_node = 4, .uses_accelerator = true, .visible_devices = 4}));
  CHECK_THROWS_WITH(dist::check_layout(l, {.nodes = 4}), Catch::Contains("--nodes 4") && Catch::Contains("2 node"));
  CHECK_THROWS_WITH(dist::check_layout(l, {.gpus_per_node = 8}), Catch::Contains("--gpus-per-node 8"));
  CHECK_THROWS_WITH(dist::check_layout(l, {.uses_accelerator = true, .visible_devices = 2}),
                    Catch::Contains("sees only 2"));
  CHECK_THROWS_WITH(dist::check_layout(l, {.uses_accelerator = true, .visible_devices = 0}),
                    Catch::Contains("no accelerator"));
  // One GPU bound per task (srun --gpus-per-task=1) is fine: every rank uses device 0.
  CHECK_NOTHROW(dist::check_layout(l, {.uses_accelerator = true, .visible_devices = 1}));
  CHECK(dist::device_index_for(l, 1) == 0);
  CHECK(dist::device_index_for(l, 4) == 0);
  auto l6 = dist::detect_layout(slurm_step(6, 8, 2, 1));
  CHECK(dist::device_index_for(l6, 4) == 2);
  CHECK(dist::device_index_for(l6, 2) == -1);

  auto single = dist::detect_layout(EnvMap{});
  CHECK_THROWS_WITH(dist::check_layout(single, {.nodes = 2}), Catch::Contains("--nproc-per-node"));
}

TEST_CASE("two local ranks on one visible GPU are refused with what to change") {
  // What `hpcbench run --nproc-per-node 2` on a one-GPU machine gives each
  // rank: torchrun's variables, the same single visible device.
  auto l = dist::detect_layout(EnvMap{{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"},
                                      {"LOCAL_WORLD_SIZE", "2"}});
  CHECK(dist::device_index_for(l, 1) == -1);
  CHECK(dist::device_index_for(l, 2) == 1);
  CHECK_THROWS_WITH(dist::check_layout(l, {.uses_accelerator = true, .visible_devices = 1}),
                    Catch::Contains("2 ranks on this node need one GPU each but 1 is visible") &&
                        Catch::Contains("--nproc-per-node 1") && Catch::Contains("world size 1"));
  CHECK_THROWS_WITH(dist::check_layout(dist::detect_layout(EnvMap{{"RANK", "0"}, {"WORLD_SIZE", "4"},
                                                                  {"LOCAL_RANK", "0"}, {"LOCAL_WORLD_SIZE", "4"}}),
                                       {.uses_accelerator = true, .visible_devices = 2}),
                    Catch::Contains("--nproc-per-node 2") && Catch::Contains("CUDA_VISIBLE_DEVICES"));
  // A single process on one GPU is fine.
  CHECK(dist::device_index_for(dist::detect_layout(EnvMap{}), 1) == 0);
}

TEST_CASE("a launcher's per-rank CUDA_VISIBLE_DEVICES binds each rank to its one GPU") {
  EnvMap env{{"RANK", "1"}, {"WORLD_SIZE", "2"}, {"LOCAL_RANK", "1"}, {"LOCAL_WORLD_SIZE", "2"},
             {"CUDA_VISIBLE_DEVICES", "3"}};
  auto l = dist::detect_layout(env);
  CHECK(dist::one_visible_device_named(env));
  CHECK_FALSE(dist::one_visible_device_named(EnvMap{{"CUDA_VISIBLE_DEVICES", "0,1"}}));
  CHECK_FALSE(dist::one_visible_device_named(EnvMap{}));
  CHECK(dist::device_index_for(l, 1, /*bound=*/true) == 0);
  CHECK_NOTHROW(dist::check_layout(l, {.uses_accelerator = true, .visible_devices = 1,
                                       .bound_by_visible_devices = true}));
}

TEST_CASE("--allow-shared-gpu puts local ranks on the visible GPUs in turn") {
  auto rank = [](int r) {
    return dist::detect_layout(EnvMap{{"RANK", std::to_string(r)}, {"WORLD_SIZE", "4"},
                                      {"LOCAL_RANK", std::to_string(r)}, {"LOCAL_WORLD_SIZE", "4"}});
  };
  CHECK(dist::device_index_for(rank(3), 1, false, /*shared=*/true) == 0);
  CHECK(dist::device_index_for(rank(3), 2, false, /*shared=*/true) == 1);
  CHECK(dist::device_index_for(rank(3), 1, false, /*shared=*/false) == -1);
  CHECK_NOTHROW(dist::check_layout(rank(2), {.uses_accelerator = true, .visible_devices = 1, .shared_devices = true}));
}

TEST_CASE("the backend follows the device unless chosen, and sharing a GPU needs Gloo") {
  c10::Device cpu(c10::kCPU), gpu(c10::kCUDA, 0);
  CHECK(dist::resolve_backend("auto", cpu, false) == "gloo");
  CHECK(dist::resolve_backend("auto", gpu, false) == "nccl");
  CHECK(dist::resolve_backend("gloo", gpu, true) == "gloo");
  CHECK_THROWS_WITH(dist::resolve_backend("nccl", cpu, false), Catch::Contains("--backend nccl needs CUDA"));
  CHECK_THROWS_WITH(dist::resolve_backend("auto", gpu, true),
                    Catch::Contains("--allow-shared-gpu needs --backend gloo") && Catch::Contains("duplicate GPU"));
  CHECK_THROWS_WITH(dist::resolve_backend("mpi", cpu, false), Catch::Contains("--backend mpi: unknown"));
}

TEST_CASE("ranks of one host that would share a GPU are named") {
  CHECK_NOTHROW(dist::check_distinct_devices({"n1/0000:1B:00.0", "n1/0000:1C:00.0", "n2/0000:1B:00.0"}));
  // The driver could not say: nothing to compare.
  CHECK_NOTHROW(dist::check_distinct_devices({"n1/", "n1/"}));
  CHECK_THROWS_WITH(dist::check_distinct_devices({"n1/0000:1B:00.0", "n2/0000:1B:00.0", "n1/0000:1B:00.0"}),
                    Catch::Contains("ranks 0 and 2 would share the GPU n1/0000:1B:00.0") &&
                        Catch::Contains("--nproc-per-node 1"));
}

TEST_CASE("waits block the host on Gloo and only order the stream on NCCL") {
  CHECK(dist::wait_mode("gloo") == dist::WaitMode::HostBlocking);
  CHECK(dist::wait_mode("nccl") == dist::WaitMode::StreamOrdered);
}

// The first GPU run of pipeline on 2 ranks sharing a GPU over Gloo failed at the
// first activation: Gloo's send wrote the CUDA pointer to its socket
// ("writev: Bad address"). Its point to point is host-only; a device tensor goes
// through a host copy, while NCCL and host tensors go as they are.
TEST_CASE("Gloo's point to point stages device tensors through the host") {
  CHECK(dist::p2p_stages_on_host(dist::wait_mode("gloo"), c10::Device("cuda:0")));
  CHECK_FALSE(dist::p2p_stages_on_host(dist::wait_mode("gloo"), c10::Device("cpu")));
  CHECK_FALSE(dist::p2p_stages_on_host(dist::wait_mode("nccl"), c10::Device("cuda:0")));
}
