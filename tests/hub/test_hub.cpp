// hpcbench fetch and the names `run` resolves, against tests/hub/hub_server.py
// (a hub-like tree on 127.0.0.1, started and stopped here), with Python's
// huggingface_hub (from PyPI, pointed at the server by HF_ENDPOINT) filling
// and reading the same cache.
#include <signal.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <sys/wait.h>

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include "hub/cache.h"
#include "hub/fetch.h"
#include "hub/git_blob.h"
#include "core/error.h"
#include "core/file_lock.h"
#include "core/stop_signal.h"
#include "hub/resolve.h"
#include "hub/sha256.h"
#include "test_env.h"

using namespace hpcbench;
namespace fs = std::filesystem;

namespace {

std::string python() { return test::env_path("HPCBENCH_PY").string(); }
fs::path hub_dir() { return test::source_dir() / "tests" / "hub"; }

// The tiny models the server serves, made once per test binary: one folder
// per repository id, under real names too (bert-base-uncased, bert-large-uncased).
const fs::path& model_root() {
  static test::TempDir dir;
  static bool made = false;
  if (!made) {
    for (auto* id : {"org/tiny", "bert-base-uncased", "bert-large-uncased"}) fs::create_directories(dir.path / id);
    auto r = test::run_command(python() + " " + (hub_dir() / "make_tiny_model.py").string() + " " +
                               test::vocab_file() + " " + (dir.path / "org/tiny").string() + " " +
                               (dir.path / "bert-base-uncased").string() + " " +
                               (dir.path / "bert-large-uncased").string());
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    made = true;
  }
  return dir.path;
}

struct Server {
  test::TempDir dir;
  pid_t pid = 0;
  int port = 0;
  explicit Server(const std::string& flags = "") {
    fs::path port_file = dir.path / "port";
    std::string cmd = "exec " + python() + " " + (hub_dir() / "hub_server.py").string() + " --root " +
                      model_root().string() + " --port-file " + port_file.string() + " --log " +
                      log_path().string() + " --squad-dir " + (test::test_data() / "squad").string() + " " + flags;
    pid = ::fork();
    if (pid == 0) {
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    for (int i = 0; i < 400 && !fs::exists(port_file); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    REQUIRE(fs::exists(port_file));
    port = std::stoi(test::slurp(port_file));
  }
  ~Server() {
    ::kill(pid, SIGTERM);
    int status;
    ::waitpid(pid, &status, 0);
  }
  fs::path log_path() const { return dir.path / "requests.jsonl"; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port); }
  std::string log() const { return test::slurp(log_path()); }
  // Requests whose line holds all the given pieces.
  size_t count(std::initializer_list<std::string> pieces) const {
    std::istringstream in(log());
    size_t n = 0;
    for (std::string line; std::getline(in, line);) {
      bool all = true;
      for (auto& p : pieces) all = all && line.find(p) != std::string::npos;
      n += all;
    }
    return n;
  }
};

// The environment prefix that points hpcbench and huggingface_hub at one cache.
std::string env(const fs::path& home, const std::string& endpoint, const std::string& extra = "") {
  // Nothing of the developer's own set-up leaks in: token, caches, and a proxy
  // that would otherwise be asked for 127.0.0.1.
  return "env -u HF_TOKEN -u HF_TOKEN_PATH -u HF_HUB_CACHE -u HUGGINGFACE_HUB_CACHE -u HF_HUB_OFFLINE "
         "-u HPCBENCH_DATASETS_CACHE -u HPCBENCH_SQUAD_URL -u HF_HUB_ETAG_TIMEOUT -u HF_HUB_DOWNLOAD_TIMEOUT "
         "no_proxy=127.0.0.1,localhost NO_PROXY=127.0.0.1,localhost HF_HOME=" + home.string() +
         " HF_ENDPOINT=" + endpoint + " HF_HUB_DISABLE_XET=1 HF_HUB_DISABLE_TELEMETRY=1 " + extra + " ";
}

test::CommandResult fetch(const std::string& env_prefix, const std::string& args) {
  return test::run_command(env_prefix + test::hpcbench_bin().string() + " fetch " + args);
}

fs::path repo(const fs::path& home, const std::string& folder) { return home / "hub" / folder; }
const std::string commit = "0123456789abcdef0123456789abcdef01234567";

// What huggingface_hub makes of the cache: each file's path and sha256.
test::CommandResult hf_read(const std::string& env_prefix, const std::string& repo_id) {
  std::string code =
      "import hashlib,sys\n"
      "from huggingface_hub import hf_hub_download\n"
      "for f in ('config.json','vocab.txt','model.safetensors'):\n"
      "    p = hf_hub_download(sys.argv[1], f)\n"
      "    print(f, p, hashlib.sha256(open(p,'rb').read()).hexdigest())\n";
  return test::run_command(env_prefix + python() + " -c \"" + code + "\" " + repo_id);
}

std::string file_sha(const fs::path& p) { return hub::sha256_file(p); }

// SQuAD laid out as `hpcbench fetch squad|squad_v2` leaves it, from the
// samples cut to their first paragraphs (whole files make the runs slow,
// and the test is about where the files are found, not what they hold).
void place_squad(const fs::path& home, const std::string& name) {
  std::string v = name == "squad" ? "v1.1" : "v2.0";
  auto j = nlohmann::json::parse(test::slurp(test::squad_file(("dev-" + v + "-sample.json").c_str())));
  auto& paragraphs = j["data"][0]["paragraphs"];
  paragraphs.erase(paragraphs.begin() + 3, paragraphs.end());
  j["data"].erase(j["data"].begin() + 1, j["data"].end());
  fs::path ds = home / "hpcbench-datasets" / name;
  fs::create_directories(ds);
  for (auto* split : {"train", "dev"}) std::ofstream(ds / (std::string(split) + "-" + v + ".json")) << j.dump();
}

void check_no_partial_files(const fs::path& root) {
  if (!fs::exists(root)) return;
  for (auto& e : fs::recursive_directory_iterator(root)) {
    INFO(e.path().string());
    CHECK(e.path().string().find(".incomplete") == std::string::npos);
  }
}

}  // namespace

TEST_CASE("sha256 matches the FIPS 180-2 test vectors", "[hub]") {
  auto hex = [](const std::string& s) {
    hub::Sha256 h;
    h.update(s.data(), s.size());
    return h.hex_digest();
  };
  CHECK(hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  hub::Sha256 m;
  std::string a(1000, 'a');
  for (int i = 0; i < 1000; ++i) m.update(a.data(), a.size());
  CHECK(m.hex_digest() == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("a model fetched into the cache layout, read by huggingface_hub", "[hub]") {
  Server server;
  test::TempDir home;
  auto e = env(home.path, server.url());
  auto r = fetch(e, "org/tiny");
  INFO(r.output);
  REQUIRE(r.exit_code == 0);

  fs::path rp = repo(home.path, "models--org--tiny");
  CHECK(test::slurp(rp / "refs" / "main") == commit);
  fs::path snap = rp / "snapshots" / commit;
  for (auto* f : {"config.json", "vocab.txt", "model.safetensors"}) {
    INFO(f);
    REQUIRE(fs::is_symlink(snap / f));
    auto target = fs::read_symlink(snap / f);
    CHECK(target.string().rfind("../../blobs/", 0) == 0);
    CHECK(file_sha(snap / f) == file_sha(model_root() / "org/tiny" / f));
  }
  // LFS blobs are named by their sha256, as the hub's X-Linked-Etag says.
  std::string weights_sha = file_sha(model_root() / "org/tiny" / "model.safetensors");
  CHECK(fs::read_symlink(snap / "model.safetensors").filename() == weights_sha);
  CHECK(fs::is_regular_file(rp / "blobs" / weights_sha));
  CHECK(fs::exists(home.path / "hub" / ".locks" / "models--org--tiny" / (weights_sha + ".lock")));
  check_no_partial_files(home.path);
  CHECK(server.count({"\"GET\"", "/cdn/"}) == 1);

  // huggingface_hub, online against the same server, finds everything cached.
  auto py = hf_read(e, "org/tiny");
  INFO(py.output);
  REQUIRE(py.exit_code == 0);
  for (auto* f : {"config.json", "vocab.txt", "model.safetensors"})
    CHECK(py.output.find(std::string(f) + " " + (snap / f).string() + " " +
                         file_sha(model_root() / "org/tiny" / f)) != std::string::npos);
  CHECK(server.count({"\"GET\""}) == 3);  // still only hpcbench's downloads
  // Offline, huggingface_hub goes by refs/main alone.
  auto closed = "http://127.0.0.1:" + std::to_string(test::free_loopback_port());
  auto py_off = hf_read(env(home.path, closed, "HF_HUB_OFFLINE=1"), "org/tiny");
  INFO(py_off.output);
  REQUIRE(py_off.exit_code == 0);
  CHECK(py_off.output.find((snap / "model.safetensors").string()) != std::string::npos);

  // A second fetch downloads nothing; offline, it needs no server at all.
  r = fetch(e, "org/tiny");
  CHECK(r.exit_code == 0);
  CHECK(server.count({"\"GET\""}) == 3);
  r = fetch(env(home.path, closed, "HF_HUB_OFFLINE=1"), "org/tiny");
  INFO(r.output);
  CHECK(r.exit_code == 0);
  CHECK(r.output.find((snap / "model.safetensors").string()) != std::string::npos);
}

TEST_CASE("offline mode and names not in the cache fail with the fetch command", "[hub]") {
  test::TempDir home;
  auto offline = env(home.path, "http://127.0.0.1:" + std::to_string(test::free_loopback_port()), "HF_HUB_OFFLINE=1");
  auto r = fetch(offline, "org/tiny");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("HF_HUB_OFFLINE") != std::string::npos);
  CHECK(r.output.find("hpcbench fetch org/tiny") != std::string::npos);

  auto run = [&](const std::string& args) {
    return test::run_command(env(home.path, "http://127.0.0.1:1") + test::hpcbench_bin().string() +
                             " run --results-dir " + (home.path / "results").string() + " " + args);
  };
  r = run("--model org/tiny@v2 --max-steps 1");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("`hpcbench fetch org/tiny --revision v2`") != std::string::npos);
  r = run("--model bert-base-uncased --train-data squad_v2");
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("`hpcbench fetch squad_v2`") != std::string::npos);
  r = run("--model bert-base-uncased --train-data " + test::squad_file("dev-v2.0-sample.json"));
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("`hpcbench fetch bert-base-uncased`") != std::string::npos);
  CHECK(!fs::exists(home.path / "results"));
}

TEST_CASE("a cache filled by huggingface_hub serves hpcbench run --model, offline", "[hub]") {
  test::TempDir home;
  {
    Server server;
    auto py = hf_read(env(home.path, server.url()), "org/tiny");
    INFO(py.output);
    REQUIRE(py.exit_code == 0);
  }  // the server is gone: the run must not need it
  place_squad(home.path, "squad_v2");
  auto e = env(home.path, "http://127.0.0.1:" + std::to_string(test::free_loopback_port()));
  auto r = test::run_command(e + test::hpcbench_bin().string() +
                             " run --model org/tiny --train-data squad_v2 --eval-data squad_v2 --max-steps 2 "
                             "--batch-size 4 --max-seq-length 128 --doc-stride 64 --device cpu --cache-dir none "
                             "--run-name hf --results-dir " + (home.path / "results").string());
  INFO(r.output);
  REQUIRE(r.exit_code == 0);
  fs::path snap = repo(home.path, "models--org--tiny") / "snapshots" / commit;
  CHECK(r.output.find("Hugging Face cache " + snap.string()) != std::string::npos);
  CHECK(r.output.find("org/tiny fp32") != std::string::npos);  // named after the repository, not the commit
  CHECK(r.output.find("EM ") != std::string::npos);
  // The run recorded the snapshot's files as its model, vocabulary and weights.
  auto run_json = test::slurp(home.path / "results" / "hf" / "run.json");
  for (auto* f : {"config.json", "vocab.txt", "model.safetensors"})
    CHECK(run_json.find((snap / f).string()) != std::string::npos);

  // `data` takes the same names; `env` says which caches a job looks in.
  auto d = test::run_command(e + test::hpcbench_bin().string() + " data --squad squad_v2 --eval --vocab org/tiny " +
                             "--max-seq-length 128 --doc-stride 64 --no-cache");
  INFO(d.output);
  CHECK(d.exit_code == 0);
  CHECK(d.output.find((home.path / "hpcbench-datasets" / "squad_v2" / "dev-v2.0.json").string()) != std::string::npos);
  auto missing = test::run_command(e + test::hpcbench_bin().string() + " data --squad squad --vocab org/tiny");
  CHECK(missing.exit_code != 0);
  CHECK(missing.output.find("`hpcbench fetch squad`") != std::string::npos);
  auto no_model = test::run_command(e + test::hpcbench_bin().string() + " data --squad squad_v2 --vocab org/absent");
  CHECK(no_model.exit_code != 0);
  CHECK(no_model.output.find("`hpcbench fetch org/absent`") != std::string::npos);
  auto env_out = test::run_command(e + test::hpcbench_bin().string() + " env");
  CHECK(env_out.output.find("hub cache         " + (home.path / "hub").string()) != std::string::npos);
  CHECK(env_out.output.find("datasets cache    " + (home.path / "hpcbench-datasets").string()) !=
        std::string::npos);
}

TEST_CASE("the shipped configs resolve from a huggingface_hub cache", "[hub]") {
  test::TempDir home;
  {
    Server server;
    for (auto* id : {"bert-base-uncased", "bert-large-uncased"}) {
      auto py = hf_read(env(home.path, server.url()), id);
      INFO(py.output);
      REQUIRE(py.exit_code == 0);
    }
  }
  place_squad(home.path, "squad");
  place_squad(home.path, "squad_v2");
  auto e = env(home.path, "http://127.0.0.1:" + std::to_string(test::free_loopback_port()));
  for (auto* config : {"bert-base-squad2.toml", "bert-large-squad1-nvidia.toml"}) {
    INFO(config);
    // As shipped, but one step, fp32 (no fp16 on a CPU) and the tiny model's speed.
    auto r = test::run_command(e + test::hpcbench_bin().string() + " run --config " +
                               (test::source_dir() / "configs" / config).string() +
                               " --max-steps 1 --precision fp32 --device cpu --cache-dir none --run-name x --results-dir " +
                               (home.path / "results" / config).string());
    INFO(r.output);
    CHECK(r.exit_code == 0);
    CHECK(r.output.find("Hugging Face cache") != std::string::npos);
  }
}

TEST_CASE("a download cut half-way is resumed with a Range request", "[hub]") {
  Server server("--cut-first-get");
  test::TempDir home;
  auto r = fetch(env(home.path, server.url()), "org/tiny");
  INFO(r.output);
  INFO(server.log());
  REQUIRE(r.exit_code == 0);
  auto size = fs::file_size(model_root() / "org/tiny" / "model.safetensors");
  CHECK(server.count({"\"GET\"", "/cdn/", "\"range\": null"}) == 1);
  CHECK(server.count({"\"GET\"", "/cdn/", "\"range\": \"bytes=" + std::to_string(size / 2) + "-\""}) == 1);
  fs::path snap = repo(home.path, "models--org--tiny") / "snapshots" / commit;
  CHECK(file_sha(snap / "model.safetensors") == file_sha(model_root() / "org/tiny" / "model.safetensors"));
  check_no_partial_files(home.path);
}

TEST_CASE("a fetch resumes what an interrupted one left in .incomplete", "[hub]") {
  Server server;
  test::TempDir home;
  fs::path weights = model_root() / "org/tiny" / "model.safetensors";
  std::string sha = file_sha(weights);
  std::string bytes = test::slurp(weights);
  fs::path blobs = repo(home.path, "models--org--tiny") / "blobs";
  fs::create_directories(blobs);
  std::ofstream(blobs / (sha + ".incomplete"), std::ios::binary) << bytes.substr(0, 1000000);
  auto r = fetch(env(home.path, server.url()), "org/tiny");
  INFO(r.output);
  INFO(server.log());
  REQUIRE(r.exit_code == 0);
  CHECK(r.output.find("resuming after 1000000 bytes") != std::string::npos);
  CHECK(server.count({"\"GET\"", "/cdn/", "\"range\": \"bytes=1000000-\""}) == 1);
  CHECK(server.count({"\"GET\"", "/cdn/"}) == 1);
  CHECK(file_sha(blobs / sha) == sha);
  check_no_partial_files(home.path);
}

TEST_CASE("a checksum mismatch is refused and nothing stays in the cache", "[hub]") {
  Server server("--corrupt");
  test::TempDir home;
  auto r = fetch(env(home.path, server.url()), "org/tiny");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("checksum mismatch") != std::string::npos);
  fs::path rp = repo(home.path, "models--org--tiny");
  std::string weights_sha = file_sha(model_root() / "org/tiny" / "model.safetensors");
  CHECK(!fs::exists(rp / "blobs" / weights_sha));
  CHECK(!fs::exists(rp / "snapshots" / commit / "model.safetensors"));
  CHECK(!fs::exists(rp / "refs" / "main"));
  check_no_partial_files(home.path);

  // The pinned SQuAD sums refuse whatever else is served under their names.
  auto d = fetch(env(home.path, server.url(), "HPCBENCH_SQUAD_URL=" + server.url() + "/squad"), "squad_v2");
  INFO(d.output);
  CHECK(d.exit_code == 2);
  CHECK(d.output.find("squad_v2/") != std::string::npos);
  CHECK(test::entries(home.path / "hpcbench-datasets" / "squad_v2") == 0);
}

TEST_CASE("404, 401 without a token, a refused connection and a timeout are clear errors", "[hub]") {
  test::TempDir home;
  {
    Server server("--token s3cret");
    auto r = fetch(env(home.path, server.url()), "org/tiny");
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("HTTP 401") != std::string::npos);
    CHECK(r.output.find("set HF_TOKEN") != std::string::npos);
    r = fetch(env(home.path, server.url(), "HF_TOKEN=s3cret"), "org/tiny");
    INFO(r.output);
    CHECK(r.exit_code == 0);
    // The token goes to the hub, never to the storage host it redirects to.
    CHECK(server.count({"/resolve/", "Bearer s3cret"}) > 0);
    CHECK(server.count({"/cdn/", "Bearer"}) == 0);
    r = fetch(env(home.path, server.url(), "HF_TOKEN=s3cret"), "org/missing");
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("HTTP 404") != std::string::npos);
    CHECK(r.output.find("org/missing") != std::string::npos);
    r = fetch(env(home.path, server.url(), "HF_TOKEN=s3cret"), "org/tiny --revision nope");
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("RevisionNotFound") != std::string::npos);
  }
  int port = test::free_loopback_port();
  auto r = fetch(env(home.path, "http://127.0.0.1:" + std::to_string(port)), "org/other");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("connection refused") != std::string::npos);
  CHECK(r.output.find("127.0.0.1:" + std::to_string(port)) != std::string::npos);

  Server slow("--stall 5");
  r = fetch(env(home.path, slow.url(), "HF_HUB_ETAG_TIMEOUT=1"), "org/other");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK(r.output.find("timed out after 1 s") != std::string::npos);
}

TEST_CASE("two fetches of the same file at once leave one good copy", "[hub]") {
  Server server("--slow 0.05");
  test::TempDir home;
  auto e = env(home.path, server.url());
  std::string one = e + test::hpcbench_bin().string() + " fetch org/tiny";
  auto r = test::run_command("(" + one + " > " + (home.path / "a.log").string() + " 2>&1; echo a=$? >> " +
                             (home.path / "rc").string() + ") & (" + one + " > " + (home.path / "b.log").string() +
                             " 2>&1; echo b=$? >> " + (home.path / "rc").string() + ") & wait");
  auto rc = test::slurp(home.path / "rc");
  INFO(test::slurp(home.path / "a.log") + test::slurp(home.path / "b.log"));
  CHECK(rc.find("a=0") != std::string::npos);
  CHECK(rc.find("b=0") != std::string::npos);
  CHECK(server.count({"\"GET\"", "/cdn/"}) == 1);
  fs::path rp = repo(home.path, "models--org--tiny");
  CHECK(test::entries(rp / "blobs") == 3);
  CHECK(file_sha(rp / "snapshots" / commit / "model.safetensors") ==
        file_sha(model_root() / "org/tiny" / "model.safetensors"));
  check_no_partial_files(home.path);
}

TEST_CASE("a revision never leads out of the cache: fetch org/name@../../x is refused", "[hub]") {
  for (const char* ok : {"main", "v1.0", "refs/pr/1", "0123456789abcdef0123456789abcdef01234567", "feature/x-y_z"})
    CHECK(hub::is_revision(ok));
  for (const char* bad : {"", "..", "../../x", "a/../../b", "/etc", "a//b", "a/", ".hidden", "a/.b", "x.lock",
                          "a b", "a\\b", "a:b", "a~1", "a^", "a?", "a*", "a[", "a@{1}", "end.", "a\nb"}) {
    INFO(bad);
    CHECK(!hub::is_revision(bad));
  }
  // The server answers any revision, as a mirror resolving refs loosely
  // would: only hpcbench's own check stands between the name and the path.
  Server server("--any-revision");
  test::TempDir home;
  auto e = env(home.path, server.url());
  for (const std::string& args : {std::string("org/tiny@../../../escaped"), std::string("org/tiny --revision ../../../escaped"),
                                  std::string("org/tiny@refs/../../../../escaped")}) {
    auto r = fetch(e, args);
    INFO(args << "\n" << r.output);
    CHECK(r.exit_code == 2);
    CHECK(r.output.find("is not a branch, tag or commit name") != std::string::npos);
    CHECK(r.output.find("../../../escaped") != std::string::npos);
  }
  CHECK(!fs::exists(home.path / "escaped"));
  CHECK(!fs::exists(home.path / "hub" / "escaped"));
  CHECK(server.count({"resolve"}) == 0);  // refused before asking
  // A legitimate branch with '/' still works and lands under refs/.
  auto ok = fetch(e, "org/tiny@refs/pr/1");
  INFO(ok.output);
  CHECK(ok.exit_code == 0);
  CHECK(test::slurp(repo(home.path, "models--org--tiny") / "refs/refs/pr/1") == commit);
  // run's resolution refuses the same names instead of reading refs/../..
  ::unsetenv("HF_HUB_CACHE");
  ::unsetenv("HUGGINGFACE_HUB_CACHE");
  ::setenv("HF_HOME", home.path.c_str(), 1);
  CHECK_THROWS_WITH(hub::find_cached_model("org/tiny", "../../../escaped"),
                    Catch::Contains("is not a branch, tag or commit name"));
  CHECK(hub::find_cached_model("org/tiny", "refs/pr/1").has_value());
  ::unsetenv("HF_HOME");
}

namespace {

// What spdlog said while it lives.
struct LogCapture {
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink = std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(200);
  std::shared_ptr<spdlog::logger> saved = spdlog::default_logger();
  LogCapture() { spdlog::set_default_logger(std::make_shared<spdlog::logger>("capture", sink)); }
  ~LogCapture() { spdlog::set_default_logger(saved); }
  size_t count(const std::string& piece) const {
    size_t n = 0;
    for (auto& line : sink->last_formatted()) n += line.find(piece) != std::string::npos;
    return n;
  }
  std::string text() const {
    std::string out;
    for (auto& line : sink->last_formatted()) out += line;
    return out;
  }
};

// The lock calls of a file system without flock (and, as asked, without
// fcntl locks or exclusive creation), restored at the end of the scope.
struct NoLocks {
  LockCalls saved = lock_calls();
  explicit NoLocks(bool fcntl_too = false, bool excl_too = false) {
    lock_calls().flock = [](int, int) {
      errno = ENOLCK;
      return -1;
    };
    if (fcntl_too)
      lock_calls().fcntl_lock = [](int, int, struct ::flock*) {
        errno = ENOLCK;
        return -1;
      };
    if (excl_too)
      lock_calls().open_exclusive = [](const char*) {
        errno = EACCES;
        return -1;
      };
    FileLock::forget_notices();
  }
  ~NoLocks() { lock_calls() = saved; }
};

// Whether another process can take the lock on `path` right now.
bool free_for_another_process(const fs::path& path) {
  pid_t pid = ::fork();
  if (pid == 0) {
    int rc = 3;
    try {
      FileLock l(path, "test", FileLock::Wait::no);
      rc = l.held() ? 0 : 1;
    } catch (...) {
    }
    ::_exit(rc);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(WIFEXITED(status));
  REQUIRE(WEXITSTATUS(status) != 3);
  return WEXITSTATUS(status) == 0;
}

}  // namespace

TEST_CASE("where flock answers ENOLCK the lock falls back to fcntl, says so once, and still excludes", "[hub][lock]") {
  NoLocks no_flock;
  LogCapture log;
  test::TempDir dir;
  auto a = dir.path / "a.lock";
  {
    FileLock held(a, "test");
    CHECK(held.method() == FileLock::Method::fcntl);
    CHECK(!free_for_another_process(a));
    FileLock other(dir.path / "b.lock", "test");
    CHECK(other.method() == FileLock::Method::fcntl);
  }
  CHECK(free_for_another_process(a));
  INFO(log.text());
  CHECK(log.count("flock is not supported on this file system (ENOLCK") == 1);
}

TEST_CASE("where fcntl locks fail too, an exclusive lock file; a stale one of a dead process is taken over",
          "[hub][lock]") {
  NoLocks no_locks(true);
  LogCapture log;
  test::TempDir dir;
  auto a = dir.path / "a.lock";
  {
    FileLock held(a, "test");
    CHECK(held.method() == FileLock::Method::lock_file);
    CHECK(fs::exists(dir.path / "a.lock.excl"));
    CHECK(!free_for_another_process(a));
  }
  CHECK(!fs::exists(dir.path / "a.lock.excl"));
  CHECK(free_for_another_process(a));
  CHECK(log.count("using lock files") == 1);
  // Left by a process of this host that is gone (a fetch killed by SIGKILL).
  pid_t gone = ::fork();
  if (gone == 0) ::_exit(0);
  ::waitpid(gone, nullptr, 0);
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  std::ofstream(dir.path / "a.lock.excl") << host << " " << gone << "\n";
  FileLock again(a, "test");
  CHECK(again.held());
  CHECK(log.count("which is gone; taking it over") == 1);
}

TEST_CASE("where no lock works, the error names each errno", "[hub][lock]") {
  NoLocks nothing(true, true);
  test::TempDir dir;
  CHECK_THROWS_WITH(FileLock(dir.path / "a.lock", "test"),
                    Catch::Contains("cannot lock") && Catch::Contains("flock ENOLCK") &&
                        Catch::Contains("fcntl ENOLCK") && Catch::Contains("lock file EACCES"));
}

TEST_CASE("fetch on a file system without flock: downloads, says so once", "[hub][lock]") {
  Server server;
  test::TempDir home;
  NoLocks no_flock;
  LogCapture log;
  for (const char* v : {"HF_TOKEN", "HF_TOKEN_PATH", "HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HUB_OFFLINE",
                        "http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"})
    ::unsetenv(v);
  ::setenv("HF_HOME", home.path.c_str(), 1);
  ::setenv("HF_ENDPOINT", server.url().c_str(), 1);
  auto m = hub::fetch_model("org/tiny");
  ::unsetenv("HF_HOME");
  ::unsetenv("HF_ENDPOINT");
  INFO(log.text());
  CHECK(m.files.size() == 3);
  CHECK(file_sha(m.snapshot / "model.safetensors") == file_sha(model_root() / "org/tiny" / "model.safetensors"));
  CHECK(log.count("flock is not supported") == 1);
  CHECK(log.count("waiting for") == 0);
}

// Issue 33, class 7: a lock file that names no owner is not waited on
// forever, and a wait for a lock a live process holds ends on SIGTERM.
TEST_CASE("an empty lock file is taken over once it is stale, not waited on forever", "[hub][lock]") {
  NoLocks no_locks(true);
  LogCapture log;
  test::TempDir dir;
  auto a = dir.path / "a.lock";
  // Fresh: its owner may be about to write its name, so it is still respected.
  std::ofstream(dir.path / "a.lock.excl").flush();
  CHECK(!FileLock(a, "test", FileLock::Wait::no).held());
  // As a process killed (or a full disk) between creating and writing it leaves it.
  fs::last_write_time(dir.path / "a.lock.excl",
                      fs::file_time_type::clock::now() - std::chrono::seconds(FileLock::kEmptyLockStaleS + 5));
  auto t0 = std::chrono::steady_clock::now();
  FileLock taken(a, "test");
  CHECK(taken.held());
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(5));
  INFO(log.text());
  CHECK(log.count("names no owner and is") == 1);
  CHECK(log.count("taking it over as stale") == 1);
}

namespace {

// A child that waits for the lock on `path` (held by this process) under
// the run's stop handlers; SIGTERM after a moment. Returns its exit status
// and what it said.
std::pair<int, std::string> wait_then_sigterm(const fs::path& path, const fs::path& said) {
  pid_t pid = ::fork();
  if (pid == 0) {
    install_stop_handlers(false);
    try {
      FileLock l(path, "the test's lock");
      ::_exit(0);
    } catch (const Interrupted& e) {
      std::ofstream(said) << e.what();
      ::_exit(128 + e.signal());
    } catch (...) {
      ::_exit(3);
    }
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  ::kill(pid, SIGTERM);
  auto t0 = std::chrono::steady_clock::now();
  int status = 0;
  while (::waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(10)) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return {-1, "still waiting 10 s after SIGTERM"};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -2, test::slurp(said)};
}

}  // namespace

TEST_CASE("SIGTERM ends a wait for a lock, with flock, fcntl or a lock file, and says so", "[hub][lock]") {
  test::TempDir dir;
  for (int kind = 0; kind < 3; ++kind) {
    INFO("kind " << kind);
    std::optional<NoLocks> no;
    if (kind > 0) no.emplace(kind == 2);
    // Names built with fmt: `"literal" + std::string&&` draws a false
    // -Wrestrict from GCC 12 (libstdc++'s char_traits.h; GCC bug 105651).
    auto a = dir.path / fmt::format("k{}.lock", kind);
    FileLock held(a, "test");
    CHECK(static_cast<int>(held.method()) == kind + 1);
    auto [rc, said] = wait_then_sigterm(a, dir.path / fmt::format("said{}", kind));
    CHECK(rc == 128 + SIGTERM);
    std::string want = "interrupted by SIGTERM while waiting for the test's lock (lock ";
    want += a.string();
    CHECK_THAT(said, Catch::Contains(want));
  }
}

// Issue 33, class 6: every downloaded file is checked whole, the small ones
// (not in LFS) by their git blob id, and a bad copy in the cache is replaced.
TEST_CASE("git blob ids match git hash-object", "[hub]") {
  test::TempDir dir;
  for (std::string text : {std::string(""), std::string("hello\n"), std::string(100000, 'x')}) {
    std::ofstream(dir.path / "f", std::ios::binary) << text;
    auto git = test::run_command("cd " + dir.path.string() + " && " + python() +
                                 " -c \"import hashlib;d=open('f','rb').read();"
                                 "print(hashlib.sha1(b'blob %d\\0' % len(d) + d).hexdigest())\"");
    CHECK(hub::git_blob_sha1_file(dir.path / "f") + "\n" == git.output);
  }
  CHECK(hub::is_git_blob_id("b6fc4c620b67d95f953a5c1c1230aaab5db5a1b0"));
  CHECK(!hub::is_git_blob_id("B6FC4C620B67D95F953A5C1C1230AAAB5DB5A1B0"));
  CHECK(!hub::is_git_blob_id("../../etc"));
}

TEST_CASE("a small file served with extra bytes is refused, whatever size the server claims", "[hub]") {
  for (const char* flags : {"--pad config.json", "--pad config.json --pad-get-only"}) {
    INFO(flags);
    Server server(flags);
    test::TempDir home;
    auto r = fetch(env(home.path, server.url()), "org/tiny");
    INFO(r.output);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.output, Catch::Contains("org/tiny/config.json: the download from") &&
                             Catch::Contains("is not the file") && Catch::Contains("nothing was kept"));
    fs::path rp = repo(home.path, "models--org--tiny");
    CHECK(!fs::exists(rp / "snapshots" / commit / "config.json"));
    CHECK(!fs::exists(rp / "refs" / "main"));
    CHECK(test::entries(rp / "blobs") == 0);
    check_no_partial_files(home.path);
  }
}

TEST_CASE("a bad copy in the cache is found and replaced by the next fetch", "[hub]") {
  Server server;
  test::TempDir home;
  auto good = fetch(env(home.path, server.url()), "org/tiny");
  REQUIRE(good.exit_code == 0);
  fs::path rp = repo(home.path, "models--org--tiny");
  auto config = fs::canonical(rp / "snapshots" / commit / "config.json");
  auto weights = fs::canonical(rp / "snapshots" / commit / "model.safetensors");
  const std::string true_config = test::slurp(model_root() / "org/tiny" / "config.json");
  // As an unchecked fetch left it: the true name, more bytes; and the
  // weights cut short by a full disk.
  std::ofstream(config, std::ios::app) << "\n<!-- injected -->\n";
  fs::resize_file(weights, fs::file_size(weights) / 2);
  auto again = fetch(env(home.path, server.url()), "org/tiny");
  INFO(again.output);
  CHECK(again.exit_code == 0);
  CHECK_THAT(again.output, Catch::Contains("org/tiny/config.json: the copy in the cache") &&
                               Catch::Contains("is not the file") && Catch::Contains("downloading it again"));
  CHECK_THAT(again.output, Catch::Contains("org/tiny/model.safetensors: the copy in the cache"));
  CHECK(test::slurp(config) == true_config);
  CHECK(file_sha(weights) == file_sha(model_root() / "org/tiny" / "model.safetensors"));
  // A good copy is left alone.
  auto third = fetch(env(home.path, server.url()), "org/tiny");
  CHECK(third.exit_code == 0);
  CHECK_THAT(third.output, !Catch::Contains("is not the file"));
  CHECK(server.count({"\"GET\"", "config.json"}) == 2);
}

// Issue 44, class 6: filesystem calls with error codes, and messages that
// name the cause. A cache whose blobs/ folder links to itself ended in
// "internal error: filesystem error".
TEST_CASE("a cache whose blobs/ links to itself: the message names the loop", "[hub]") {
  Server server;
  test::TempDir home;
  fs::path rp = repo(home.path, "models--org--tiny");
  fs::create_directories(rp);
  fs::create_symlink(rp / "blobs", rp / "blobs");
  auto r = fetch(env(home.path, server.url()), "org/tiny");
  INFO(r.output);
  CHECK(r.exit_code == 2);
  CHECK_THAT(r.output, Catch::Contains((rp / "blobs").string()) && Catch::Contains("a loop of symbolic links"));
  CHECK_THAT(r.output, !Catch::Contains("internal error") && !Catch::Contains("filesystem error"));
}
