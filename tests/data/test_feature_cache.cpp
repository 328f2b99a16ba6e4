// The on-disk feature cache: hits return what a build returns; anything that
// changes the features changes the key; damaged files are rebuilt.
#include "test_catch.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <memory>

#include "data/features.h"
#include "data/squad.h"
#include "data_test_util.h"
#include "core/error.h"
#include "core/file_lock.h"

using namespace hpcbench;

namespace {
void require_same(const data::Features& a, const data::Features& b) {
  REQUIRE(a.seq_len == b.seq_len);
  REQUIRE(a.input_ids == b.input_ids);
  REQUIRE(a.token_type_ids == b.token_type_ids);
  REQUIRE(a.attention_mask == b.attention_mask);
  REQUIRE(a.start_positions == b.start_positions);
  REQUIRE(a.end_positions == b.end_positions);
  REQUIRE(a.example_index == b.example_index);
  REQUIRE(a.offset_begin == b.offset_begin);
  REQUIRE(a.offset_end == b.offset_end);
}
size_t files_in(const std::filesystem::path& d) {
  size_t n = 0;
  for (auto& e : std::filesystem::directory_iterator(d)) n += e.is_regular_file();
  return n;
}
}  // namespace

TEST_CASE("feature cache round trip", "[cache]") {
  test::TempDir dir;
  auto cache = dir.path / "cache";
  data::FeatureConfig cfg{128, 32, 64};
  for (bool train : {false, true}) {
    auto built = data::load_or_build_squad_features(test::squad_v20(), test::vocab_path(), cfg, train, cache);
    CHECK_FALSE(built.from_cache);
    CHECK(built.examples == 706);
    CHECK(built.impossible == 320);
    auto hit = data::load_or_build_squad_features(test::squad_v20(), test::vocab_path(), cfg, train, cache);
    CHECK(hit.from_cache);
    CHECK(hit.examples == 706);
    CHECK(hit.impossible == 320);
    require_same(hit.features, built.features);
    auto direct = data::build_features(data::load_squad(test::squad_v20()).examples, test::bert_tokenizer(), cfg, train);
    require_same(direct, built.features);
  }
  CHECK(files_in(cache) == 2);
  // Another config, another key.
  auto other = data::load_or_build_squad_features(test::squad_v20(), test::vocab_path(), {128, 64, 64}, false, cache);
  CHECK_FALSE(other.from_cache);
  CHECK(files_in(cache) == 3);
  // Another file content, another key.
  auto copy = dir.path / "copy.json";
  write_file_atomic(copy, read_file(test::squad_v20()) + "\n");
  CHECK_FALSE(data::load_or_build_squad_features(copy, test::vocab_path(), cfg, false, cache).from_cache);
  CHECK(files_in(cache) == 4);

  // A damaged file is rebuilt (and rewritten), never read.
  for (auto& e : std::filesystem::directory_iterator(cache)) {
    if (!e.is_regular_file()) continue;  // .locks/
    std::string bytes = read_file(e.path());
    write_file_atomic(e.path(), bytes.substr(0, bytes.size() / 2));
  }
  auto rebuilt = data::load_or_build_squad_features(test::squad_v20(), test::vocab_path(), cfg, false, cache);
  CHECK_FALSE(rebuilt.from_cache);
  CHECK(data::load_or_build_squad_features(test::squad_v20(), test::vocab_path(), cfg, false, cache).from_cache);

  // No cache dir: nothing written.
  auto none = data::load_or_build_squad_features(test::squad_v20(), test::vocab_path(), cfg, false, {});
  CHECK_FALSE(none.from_cache);
}

TEST_CASE("default cache dir follows XDG_CACHE_HOME", "[cache]") {
  ::setenv("XDG_CACHE_HOME", "/some/where", 1);
  CHECK(data::default_feature_cache_dir() == std::filesystem::path("/some/where/hpcbench/features"));
  ::unsetenv("XDG_CACHE_HOME");
  CHECK(data::default_feature_cache_dir().string().find(".cache/hpcbench/features") != std::string::npos);
}

TEST_CASE("concurrent builders wait for the one building, also where flock is unsupported", "[cache]") {
  // A file system without flock (Lustre or GPFS mounted without it): flock
  // answers ENOLCK, the lock falls back to fcntl.
  auto saved = lock_calls();
  lock_calls().flock = [](int, int) {
    errno = ENOLCK;
    return -1;
  };
  FileLock::forget_notices();
  test::TempDir dir;
  data::FeatureConfig cfg{128, 32, 64};
  CHECK_FALSE(
      data::load_or_build_squad_features(test::squad_v20(), test::vocab_path(), cfg, false, dir.path / "a").from_cache);
  std::filesystem::path name;
  for (auto& e : std::filesystem::directory_iterator(dir.path / "a"))
    if (e.is_regular_file()) name = e.path().filename();
  REQUIRE(!name.empty());
  CHECK(files_in(dir.path / "a") == 1);  // the lock is not among the features

  // Another process is building into b: it holds the lock. (The waiter is
  // forked first: a child would inherit the lock's open file.)
  auto b = dir.path / "b";
  auto go = dir.path / "go", started = dir.path / "started", outcome = dir.path / "outcome";
  pid_t pid = ::fork();
  if (pid == 0) {
    int rc = 0;
    try {
      for (int i = 0; i < 3000 && !std::filesystem::exists(go); ++i) ::usleep(10000);
      write_file_atomic(started, "1");
      auto sf = data::load_or_build_squad_features(test::squad_v20(), test::vocab_path(), cfg, false, b);
      write_file_atomic(outcome, sf.from_cache ? "hit" : "built");
    } catch (...) {
      rc = 3;
    }
    ::_exit(rc);
  }
  auto other = std::make_unique<FileLock>(b / ".locks" / (name.string() + ".lock"), "test");
  CHECK(other->method() == FileLock::Method::fcntl);
  write_file_atomic(go, "1");
  for (int i = 0; i < 3000 && !std::filesystem::exists(started); ++i) ::usleep(10000);
  ::usleep(300000);
  CHECK(!std::filesystem::exists(outcome));  // waiting, not building beside it
  // The other builder finishes: its file in place, then the lock released.
  std::filesystem::copy_file(dir.path / "a" / name, b / name);
  other.reset();
  int status = 0;
  ::waitpid(pid, &status, 0);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(read_file(outcome) == "hit");
  lock_calls() = saved;
}

TEST_CASE("a byte flipped anywhere in a cache file is caught by its checksum and the file rebuilt", "[cache]") {
  test::TempDir dir;
  auto cache = dir.path / "cache";
  data::FeatureConfig cfg{128, 32, 64};
  auto built = data::load_or_build_squad_features(test::squad_v11(), test::vocab_path(), cfg, true, cache);
  REQUIRE_FALSE(built.from_cache);
  REQUIRE(!built.cache_file.empty());
  const std::string good = read_file(built.cache_file);
  // Inside the rows, far from the header and the trailer: before the whole
  // file had a checksum, this one bit trained on silently.
  std::string bad = good;
  bad[bad.size() / 2] ^= 0x01;
  write_file_atomic(built.cache_file, bad);
  auto again = data::load_or_build_squad_features(test::squad_v11(), test::vocab_path(), cfg, true, cache);
  CHECK_FALSE(again.from_cache);
  require_same(again.features, built.features);
  // Rebuilt in place: the next run reads it.
  CHECK(read_file(built.cache_file) == good);
  CHECK(data::load_or_build_squad_features(test::squad_v11(), test::vocab_path(), cfg, true, cache).from_cache);
}

TEST_CASE("a token id outside the vocabulary is refused even under a matching checksum", "[cache]") {
  test::TempDir dir;
  auto cache = dir.path / "cache";
  data::FeatureConfig cfg{128, 32, 64};
  auto built = data::load_or_build_squad_features(test::squad_v11(), test::vocab_path(), cfg, true, cache);
  std::string bytes = read_file(built.cache_file);
  // The first row's first token ([CLS]) follows the 64-byte header and the
  // row's 16-byte record; the checksum is the 8 bytes before the trailer.
  const int32_t past = static_cast<int32_t>(test::bert_tokenizer().vocab_size()) + 7;
  int32_t cls = 0;
  std::memcpy(&cls, bytes.data() + 80, 4);
  REQUIRE(cls == test::bert_tokenizer().cls_id());
  std::memcpy(bytes.data() + 80, &past, 4);
  const uint64_t sum = data::feature_cache_checksum(std::string_view(bytes).substr(0, bytes.size() - 16));
  std::memcpy(bytes.data() + bytes.size() - 16, &sum, 8);
  write_file_atomic(built.cache_file, bytes);
  auto again = data::load_or_build_squad_features(test::squad_v11(), test::vocab_path(), cfg, true, cache);
  CHECK_FALSE(again.from_cache);
  require_same(again.features, built.features);
}

TEST_CASE("a cache file or folder linked to itself is a clear error naming it; a link to /dev/zero is rebuilt",
          "[cache]") {
  test::TempDir dir;
  auto cache = dir.path / "cache";
  data::FeatureConfig cfg{128, 32, 64};
  auto built = data::load_or_build_squad_features(test::squad_v11(), test::vocab_path(), cfg, true, cache);
  REQUIRE(!built.cache_file.empty());
  const auto file = built.cache_file;
  std::filesystem::remove(file);
  std::filesystem::create_symlink(file, file);
  try {
    (void)data::load_or_build_squad_features(test::squad_v11(), test::vocab_path(), cfg, true, cache);
    FAIL("a cache file linked to itself was read");
  } catch (const UserError& e) {
    CHECK(std::string(e.what()).find(file.string()) != std::string::npos);
    CHECK(std::string(e.what()).find("loop of symbolic links") != std::string::npos);
  }
  // --cache-dir itself a link to itself.
  auto loop = dir.path / "loop";
  std::filesystem::create_symlink(loop, loop);
  CHECK_THROWS_AS(data::load_or_build_squad_features(test::squad_v11(), test::vocab_path(), cfg, true, loop),
                  UserError);
  // An endless file where the cache file is: not read into memory, rebuilt.
  std::filesystem::remove(file);
  std::filesystem::create_symlink("/dev/zero", file);
  auto again = data::load_or_build_squad_features(test::squad_v11(), test::vocab_path(), cfg, true, cache);
  CHECK_FALSE(again.from_cache);
  require_same(again.features, built.features);
}
