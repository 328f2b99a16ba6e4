// libcurl is loaded only by `fetch` (lib/hub/http.cpp): the binary lists no
// libcurl, starts and trains where there is none, and `fetch` then says what
// is missing and how to get it. "No libcurl" is made two ways: a stub
// libcurl.so.4 first on LD_LIBRARY_PATH (hides the system's from the loader
// as well as from dlopen), and HPCBENCH_LIBCURL naming a file that does not exist.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "test_env.h"

using namespace hpcbench;
namespace fs = std::filesystem;

namespace {

std::string bin() { return test::hpcbench_bin().string(); }
const std::string hide = std::string("LD_LIBRARY_PATH=") + HPCBENCH_STUB_CURL_DIR + " ";

// A `fetch` that would reach the network: a closed loopback port, an empty cache.
test::CommandResult fetch(const fs::path& home, const std::string& env) {
  std::string endpoint = "http://127.0.0.1:" + std::to_string(test::free_loopback_port());
  return test::run_command("env -u HF_HUB_OFFLINE -u HF_TOKEN -u HF_HUB_CACHE HF_HOME=" + home.string() +
                           " HF_ENDPOINT=" + endpoint + " " + env + bin() + " fetch org/tiny");
}

}  // namespace

TEST_CASE("the binary does not list libcurl among the libraries it needs", "[hub]") {
  if (test::run_command("command -v readelf").exit_code != 0) {
    WARN("readelf is not installed (binutils): not checked");
    return;
  }
  auto r = test::run_command("readelf -d " + bin());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  REQUIRE(r.output.find("(NEEDED)") != std::string::npos);
  CHECK(r.output.find("libcurl") == std::string::npos);
}

TEST_CASE("without libcurl the binary starts and trains; only fetch fails, naming libcurl.so.4", "[hub]") {
  test::TempDir dir;
  auto r = test::run_command(hide + bin() + " --version");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  r = test::run_command(hide + bin() +
                        " run --device cpu --threads 1 --max-steps 1 --synthetic-samples 8 --batch-size 4 "
                        "--max-seq-length 64 --sample-ms 0 --run-name nocurl --results-dir " +
                        (dir.path / "results").string());
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(fs::exists(dir.path / "results" / "nocurl" / "run.json"));

  // The stub is found but is no libcurl.
  r = fetch(dir.path / "hf", hide);
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("libcurl.so.4") != std::string::npos);
  CHECK(r.output.find("lacks curl_global_init") != std::string::npos);
  CHECK(r.output.find("apt-get install libcurl4") != std::string::npos);

  // No library at all under the name asked for.
  r = fetch(dir.path / "hf", "HPCBENCH_LIBCURL=/nonexistent/libcurl.so.4 ");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("/nonexistent/libcurl.so.4") != std::string::npos);
  CHECK(r.output.find("could not be loaded") != std::string::npos);
  CHECK(r.output.find("apt-get install libcurl4") != std::string::npos);
  CHECK(test::entries(dir.path / "hf" / "hub") == 0);
}
