// The files a run reads and writes, checked before its first step
// (preflight/run_inputs.h): each refusal names the flag and the value, and
// a check that passes leaves nothing behind.
#include "test_catch.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "preflight/run_inputs.h"
#include "test_env.h"

namespace fs = std::filesystem;
using namespace hpcbench;

namespace {

// The message `check` refuses with ("" when it passes).
template <typename Check>
std::string refusal(Check&& check) {
  try {
    check();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

preflight::RunOutputs checkpoint_to(const fs::path& p) {
  preflight::RunOutputs o;
  o.save_checkpoint = p.string();
  return o;
}

preflight::RunOutputs dump_to(const fs::path& p) {
  preflight::RunOutputs o;
  o.dump_data = p.string();
  return o;
}


}  // namespace

TEST_CASE("missing input files are refused by their flag") {
  train::TrainConfig cfg;
  CHECK(refusal([&] { preflight::check_input_files(cfg); }) == "");  // synthetic data reads no file
  cfg.train_data = "/nonexistent/train.json";
  CHECK(refusal([&] { preflight::check_input_files(cfg); }) == "--train-data /nonexistent/train.json: no such file");
  cfg.train_data = "synthetic";
  cfg.vocab = "/nonexistent/vocab.txt";
  CHECK(refusal([&] { preflight::check_input_files(cfg); }) == "--vocab /nonexistent/vocab.txt: no such file");
  cfg.vocab.clear();
  cfg.checkpoint = "/nonexistent/model";
  CHECK_THAT(refusal([&] { preflight::check_input_files(cfg); }), Catch::Contains("--checkpoint /nonexistent/model"));
}

TEST_CASE("an evaluation set that is missing or empty is refused before training") {
  test::TempDir tmp;
  train::TrainConfig cfg;
  cfg.vocab = test::vocab_file();
  cfg.eval_data = (tmp.path / "none.json").string();
  CHECK_THAT(refusal([&] { preflight::check_eval_set(cfg); }), Catch::Contains("no such file"));
  const auto empty = tmp.path / "empty.json";
  std::ofstream(empty) << R"({"version": "1.1", "data": []})";
  cfg.eval_data = empty.string();
  CHECK_THAT(refusal([&] { preflight::check_eval_set(cfg); }), Catch::Contains("no questions in it"));
  cfg.eval_data = test::squad_file("dev-v1.1-sample.json");
  CHECK(refusal([&] { preflight::check_eval_set(cfg); }) == "");
}

TEST_CASE("a vocabulary larger than the model's embedding is refused") {
  train::TrainConfig cfg;
  cfg.vocab = test::vocab_file();  // bert-base-uncased's 30522 tokens
  cfg.model = "bert-tiny";         // the same 30522 rows
  CHECK(refusal([&] { preflight::check_vocab_fits_model(cfg); }) == "");
  test::TempDir tmp;
  const auto small = tmp.path / "config.json";
  std::ofstream(small) << R"({"vocab_size": 1000, "hidden_size": 32, "num_hidden_layers": 1,
    "num_attention_heads": 2, "intermediate_size": 64, "max_position_embeddings": 512, "type_vocab_size": 2})";
  cfg.model = small.string();
  // Synthetic training data and no evaluation read no text: nothing to check.
  CHECK(refusal([&] { preflight::check_vocab_fits_model(cfg); }) == "");
  cfg.eval_data = test::squad_file("dev-v1.1-sample.json");
  CHECK_THAT(refusal([&] { preflight::check_vocab_fits_model(cfg); }), Catch::Contains("30522 tokens"));
}

TEST_CASE("outputs that cannot be written are refused, and a check leaves nothing behind") {
  test::TempDir tmp;
  const auto folder = tmp.path / "made" / "by" / "the check";
  CHECK(refusal([&] { preflight::check_outputs(checkpoint_to(folder / "w.safetensors")); }) == "");
  CHECK(!fs::exists(tmp.path / "made"));
  const auto file = tmp.path / "a file";
  std::ofstream(file) << "x";
  CHECK_THAT(refusal([&] { preflight::check_outputs(dump_to(file / "d.safetensors")); }),
             Catch::Contains("--dump-data"));
  fs::create_directories(tmp.path / "folder.safetensors");
  CHECK_THAT(refusal([&] { preflight::check_outputs(checkpoint_to(tmp.path / "folder.safetensors")); }),
             Catch::Contains("a folder is there"));
  CHECK_THAT(refusal([&] { preflight::check_folder_writable("--results-dir", ""); }), Catch::Contains("--results-dir ''"));
}
