#include "distributed/stall.h"

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "core/bounded_read.h"
#include "core/atomic_file.h"
#include "core/error.h"

namespace hpcbench::dist {

namespace {

using Clock = std::chrono::steady_clock;

std::string key(const std::string& prefix, int r) { return prefix + std::to_string(r); }

std::string seq_of(const std::string& post) { return post.substr(0, post.find('\t')); }

}  // namespace

StallReport find_stalled(c10d::Store& store, const std::string& prefix, int rank, int size, uint64_t seq,
                         const std::string& what, std::chrono::milliseconds window) {
  StallReport report;
  std::map<int, std::string> posts;
  try {
    // The failing process waits no longer than the window on a store that
    // does not answer (rank 0 stopped: the store is its thread).
    store.setTimeout(window);
    const std::string mine = fmt::format("{}\t{}", seq, what);
    store.set(key(prefix, rank), std::vector<uint8_t>(mine.begin(), mine.end()));
    const auto end = Clock::now() + window;
    for (;;) {
      for (int r = 0; r < size; ++r)
        if (!posts.count(r) && store.check({key(prefix, r)})) {
          auto v = store.get(key(prefix, r));
          posts[r] = std::string(v.begin(), v.end());
        }
      if (static_cast<int>(posts.size()) == size || Clock::now() >= end) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  } catch (...) {
    report.store_unreachable = true;
    return report;
  }
  // The store is a thread of one of these ranks and ends with its process:
  // had that rank returned now, a rank that began waiting a moment later and
  // still reads would find the store gone and blame its host. So each says
  // it has read, and none returns before every rank that posted has said so,
  // bounded by another window for a rank killed meanwhile. What was read
  // stands whatever happens here.
  try {
    store.set(key(prefix + "read/", rank), std::vector<uint8_t>{1});
    const auto end = Clock::now() + window;
    for (;;) {
      bool all_read = true;
      for (int r = 0; r < size && all_read; ++r)
        if (r != rank && (posts.count(r) || store.check({key(prefix, r)})))
          all_read = store.check({key(prefix + "read/", r)});
      if (all_read || Clock::now() >= end) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  } catch (...) {
    // The host went after the others had read: nothing left to keep.
  }
  const std::string my_seq = std::to_string(seq);
  for (int r = 0; r < size; ++r) {
    auto it = posts.find(r);
    if (it == posts.end()) report.silent.push_back(r);
    else if (seq == 0 || seq_of(it->second) == my_seq) report.waiting.push_back(r);
    else report.elsewhere[r] = it->second;
  }
  return report;
}

std::string describe(const StallReport& report, const std::vector<int>& global, std::chrono::milliseconds window) {
  auto name = [&](int r) { return size_t(r) < global.size() ? global[size_t(r)] : r; };
  if (report.store_unreachable)
    return fmt::format("the rendezvous store (a thread of rank {}) did not answer within {:.0f} s either: rank {} "
                       "is stopped, hung or dead", name(0), std::chrono::duration<double>(window).count(), name(0));
  if (report.silent.empty()) return "";
  std::vector<int> silent, waiting;
  for (int r : report.silent) silent.push_back(name(r));
  for (int r : report.waiting) waiting.push_back(name(r));
  std::string out = fmt::format(
      "{} {} did not arrive: {} nothing within {:.1f} s, while rank(s) {} reported waiting at the same collective; "
      "{} stopped (SIGSTOP, a debugger), hung or dead",
      silent.size() == 1 ? "rank" : "ranks", fmt::join(silent, ", "), silent.size() == 1 ? "it posted" : "they posted",
      std::chrono::duration<double>(window).count(), fmt::join(waiting, ", "),
      silent.size() == 1 ? "it is" : "they are");
  for (auto& [r, post] : report.elsewhere) {
    const auto tab = post.find('\t');
    out += fmt::format("; rank {} waits at another collective, #{} ({})", name(r), post.substr(0, tab),
                       tab == std::string::npos ? "" : post.substr(tab + 1));
  }
  return out;
}

void tell_launcher(int global_rank, const std::vector<int>& silent) {
  const char* dir = std::getenv(kLaunchNotesVariable);
  if (!dir || !*dir || silent.empty()) return;
  try {
    write_file_atomic(std::filesystem::path(dir) / fmt::format("rank{}", global_rank),
                      fmt::format("{}", fmt::join(silent, " ")));
  } catch (...) {
    // The rank's own message names them already.
  }
}

std::vector<int> read_launch_notes(const std::string& dir) {
  std::map<int, int> named;
  std::error_code ec;
  for (auto it = std::filesystem::directory_iterator(dir, ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    if (it->path().filename().string().starts_with(".")) continue;  // write_file_atomic's temporaries
    std::string text;
    try {
      text = read_file_bounded(it->path(), file_limit::kSmall);
    } catch (const Interrupted&) {
      throw;
    } catch (const UserError&) {
      continue;  // a note that cannot be read names no rank
    }
    size_t pos = 0;
    while (pos < text.size()) {
      size_t used = 0;
      try {
        int r = std::stoi(text.substr(pos), &used);
        ++named[r];
      } catch (...) {
        break;
      }
      pos += used;
    }
  }
  std::vector<std::pair<int, int>> order(named.begin(), named.end());
  std::stable_sort(order.begin(), order.end(), [](auto& a, auto& b) { return a.second > b.second; });
  std::vector<int> out;
  for (auto& [r, n] : order) out.push_back(r);
  return out;
}

}  // namespace hpcbench::dist
