// `hpcbench data` on good and bad input: exit code 2, the file named in the
// message, no --out file left behind.
#include <sys/wait.h>

#include "test_catch.h"
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/atomic_file.h"
#include "read_whole_file.h"
#include "test_env.h"

using namespace hpcbench;

namespace {
struct Result {
  int code;
  std::string out, log;
};

Result run(const test::TempDir& dir, const std::string& args) {
  auto o = dir.path / "stdout.txt", e = dir.path / "stderr.txt";
  std::string cmd = fmt::format("'{}' data {} > '{}' 2> '{}'", test::hpcbench_bin().string(), args, o.string(), e.string());
  int status = std::system(cmd.c_str());
  // spdlog's default logger writes to stdout: messages are looked for in both.
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, read_file(o), read_file(o) + read_file(e)};
}

}  // namespace

TEST_CASE("hpcbench data builds features of a SQuAD file", "[cli]") {
  test::TempDir dir;
  auto out = dir.path / "counts.json";
  auto squad = test::test_data() / "squad" / "dev-v2.0-sample.json";
  auto r = run(dir, fmt::format("--squad '{}' --vocab '{}' --cache-dir '{}' --out '{}'", squad.string(), test::vocab_file(),
                                (dir.path / "cache").string(), out.string()));
  INFO(r.out << r.log);
  REQUIRE(r.code == 0);
  auto j = nlohmann::json::parse(read_file(out));
  CHECK(j["examples"] == 706);
  CHECK(j["impossible"] == 320);
  CHECK(j["mismatched_answers"] == 0);
  CHECK(j["features"] == 713);
  CHECK(j["from_cache"] == false);
  r = run(dir, fmt::format("--squad '{}' --vocab '{}' --cache-dir '{}' --out '{}'", squad.string(), test::vocab_file(),
                           (dir.path / "cache").string(), out.string()));
  REQUIRE(r.code == 0);
  CHECK(nlohmann::json::parse(read_file(out))["from_cache"] == true);
  CHECK(r.log.find("feature cache hit") != std::string::npos);

  r = run(dir, fmt::format("--synthetic 50 --max-seq-length 128 --doc-stride 32 --out '{}'", out.string()));
  REQUIRE(r.code == 0);
  CHECK(nlohmann::json::parse(read_file(out))["features"] == 50);
}

TEST_CASE("hpcbench data on bad input: exit 2, names the file, no --out", "[cli]") {
  test::TempDir dir;
  auto out = dir.path / "counts.json";
  auto good = (test::test_data() / "squad" / "dev-v1.1-sample.json").string();
  auto write = [&](const std::string& name, const std::string& content) {
    auto p = dir.path / name;
    write_file_atomic(p, content);
    return p.string();
  };
  struct Case {
    std::string squad, vocab, what;
  };
  std::vector<Case> cases = {
      {write("malformed.json", "{\"version\": \"1.1\", \"data\": [ {"), test::vocab_file(), "at byte"},
      {write("noversion.json", R"({"data": []})"), test::vocab_file(), "version"},
      {write("badversion.json", R"({"version": "9", "data": []})"), test::vocab_file(), "unsupported SQuAD version"},
      {write("nofields.json", R"({"version": "1.1", "data": [{"paragraphs": [{"qas": []}]}]})"), test::vocab_file(), "context"},
      {(dir.path / "missing.json").string(), test::vocab_file(), "cannot read"},
      {good, (dir.path / "missing-vocab.txt").string(), "vocabulary"},
      {good, write("empty-vocab.txt", ""), "empty"},
      {good, write("bad-vocab.txt", "[PAD]\n[UNK]\nhello\n"), "[CLS]"},
  };
  for (const auto& c : cases) {
    const std::string& named = c.what == "vocabulary" || c.vocab != test::vocab_file() ? c.vocab : c.squad;
    auto r = run(dir, fmt::format("--squad '{}' --vocab '{}' --no-cache --out '{}'", c.squad, c.vocab, out.string()));
    INFO(named << ": " << r.log);
    CHECK(r.code == 2);
    CHECK(r.log.find(named) != std::string::npos);
    CHECK(r.log.find(c.what) != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(out));
  }
  auto r = run(dir, fmt::format("--squad '{}' --vocab '{}' --no-cache --doc-stride 500 --out '{}'", good, test::vocab_file(), out.string()));
  CHECK(r.code == 2);
  CHECK(r.log.find("--doc-stride") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(out));
}
