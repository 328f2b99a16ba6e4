#include "test_catch.h"
#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "read_whole_file.h"
#include "core/error.h"
#include "distributed/sampler.h"
#include "test_env.h"

using namespace hpcbench;

TEST_CASE("DistributedSampler reproduces torch.utils.data.DistributedSampler") {
  auto cases = nlohmann::json::parse(read_file(test::reference_dir() / "dist_sampler.json"));
  REQUIRE(cases.size() > 300);
  size_t shuffled = 0;
  for (auto& c : cases) {
    dist::DistributedSampler s(c["n"].get<int64_t>(), c["num_replicas"].get<int>(), c["rank"].get<int>(),
                               c["shuffle"].get<bool>(), c["seed"].get<uint64_t>(), c["drop_last"].get<bool>());
    s.set_epoch(c["epoch"].get<int64_t>());
    auto expected = c["indices"].get<std::vector<int64_t>>();
    INFO("n " << c["n"] << " replicas " << c["num_replicas"] << " rank " << c["rank"] << " shuffle "
              << c["shuffle"] << " drop_last " << c["drop_last"] << " seed " << c["seed"] << " epoch "
              << c["epoch"]);
    CHECK(s.size() == static_cast<int64_t>(expected.size()));
    CHECK(s.indices() == expected);
    shuffled += c["shuffle"].get<bool>();
  }
  CHECK(shuffled > 100);
}

TEST_CASE("DistributedSampler: ranks partition the padded epoch") {
  const int64_t n = 10;
  std::vector<int> seen(n, 0);
  for (int r = 0; r < 4; ++r)
    for (auto i : dist::DistributedSampler(n, 4, r, true, 7).indices()) seen[static_cast<size_t>(i)]++;
  int total = 0;
  for (int v : seen) {
    CHECK(v >= 1);
    total += v;
  }
  CHECK(total == 12);  // padded to 3 per rank
}

TEST_CASE("DistributedSampler rejects a rank outside the world") {
  CHECK_THROWS_AS(dist::DistributedSampler(10, 2, 2), UserError);
  CHECK_THROWS_AS(dist::DistributedSampler(10, 2, -1), UserError);
  CHECK_THROWS_AS(dist::DistributedSampler(10, 0, 0), UserError);
}
