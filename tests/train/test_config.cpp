#include "test_catch.h"

#include <set>

#include "core/atomic_file.h"
#include "core/error.h"
#include "test_env.h"
#include "train/config.h"

using namespace hpcbench;

TEST_CASE("every setting has a unique TOML key and flag") {
  train::TrainConfig cfg;
  auto settings = train::settings_of(cfg);
  std::set<std::string> keys, flags;
  for (auto& s : settings) {
    CHECK(keys.insert(s.key).second);
    CHECK(flags.insert(s.flag).second);
    CHECK(s.flag.rfind("--", 0) == 0);
  }
}

TEST_CASE("TOML files set values; unknown keys, wrong types and syntax errors name the file") {
  test::TempDir dir;
  auto p = dir.path / "c.toml";
  write_file_atomic(p, "[train]\nlr = 1e-3\nbatch_size = 4\nprecision = \"bf16\"\n[model]\nname = \"bert-mini\"\n");
  train::TrainConfig cfg;
  train::load_toml(cfg, p);
  CHECK(cfg.lr == 1e-3);
  CHECK(cfg.batch_size == 4);
  CHECK(cfg.precision == "bf16");
  CHECK(cfg.model == "bert-mini");

  write_file_atomic(p, "[train]\nlearning_rate = 1e-3\n");
  REQUIRE_THROWS_WITH(train::load_toml(cfg, p), Catch::Contains("unknown setting 'train.learning_rate'") &&
                                                    Catch::Contains(p.string()));
  write_file_atomic(p, "[train]\nbatch_size = \"eight\"\n");
  REQUIRE_THROWS_WITH(train::load_toml(cfg, p), Catch::Contains("'train.batch_size' must be an integer"));
  write_file_atomic(p, "[train]\nlr = \n");
  REQUIRE_THROWS_WITH(train::load_toml(cfg, p), Catch::Contains(p.string() + ":2:"));
  REQUIRE_THROWS_WITH(train::load_toml(cfg, dir.path / "missing.toml"), Catch::Contains("no such file"));
}

TEST_CASE("flag values are parsed strictly and named on error") {
  train::TrainConfig cfg;
  for (auto& s : train::settings_of(cfg)) {
    if (s.flag == "--lr") {
      train::set_from_string(s, "2e-5");
      REQUIRE_THROWS_WITH(train::set_from_string(s, "fast"), Catch::Contains("--lr fast"));
    }
    if (s.flag == "--batch-size") REQUIRE_THROWS_WITH(train::set_from_string(s, "8.5"), Catch::Contains("--batch-size"));
  }
  CHECK(cfg.lr == 2e-5);
}

TEST_CASE("impossible settings are refused with the flag named") {
  auto refuses = [](auto mutate, const char* what) {
    train::TrainConfig cfg;
    mutate(cfg);
    REQUIRE_THROWS_WITH(train::validate(cfg), Catch::Contains(what));
  };
  refuses([](auto& c) { c.precision = "fp8"; }, "--precision fp8");
  refuses([](auto& c) { c.batch_size = 0; }, "--batch-size 0");
  refuses([](auto& c) { c.doc_stride = c.max_seq_length; }, "--doc-stride");
  refuses([](auto& c) { c.train_data = "train.json"; }, "needs --vocab");
  refuses([](auto& c) { c.warmup_ratio = 1.5; }, "--warmup-ratio");
  train::TrainConfig ok;
  REQUIRE_NOTHROW(train::validate(ok));
}

TEST_CASE("every shipped configuration in configs/ loads and validates") {
  int n = 0;
  for (auto& e : std::filesystem::directory_iterator(test::source_dir() / "configs")) {
    if (e.path().extension() != ".toml") continue;
    INFO(e.path());
    train::TrainConfig cfg;
    REQUIRE_NOTHROW(train::load_toml(cfg, e.path()));
    REQUIRE_NOTHROW(train::validate(cfg));
    ++n;
  }
  CHECK(n >= 3);
}
