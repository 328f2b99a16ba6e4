#include "hub/http.h"

#include <curl/curl.h>
#include <dlfcn.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>

#include "core/error.h"
#include "core/progress.h"
#include "hub/cache.h"

namespace hpcbench::hub {
namespace fs = std::filesystem;
namespace {

long env_seconds(const char* name, long fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  double d = std::strtod(v, &end);
  if (end == v || *end || !(d > 0)) fail("{}={}: expected a positive number of seconds", name, v);
  return std::max(1L, static_cast<long>(d + 0.5));
}

// libcurl, loaded when a download first needs it rather than linked: a
// binary that lists libcurl.so.4 as NEEDED does not even start where it is
// missing (CUDA base images often lack it), and only `fetch` uses it. curl's
// headers give the types and constants; its ABI (soname 4) has kept these
// functions' signatures since 2006.
struct Curl {
  CURLcode (*global_init)(long) = nullptr;
  CURL* (*easy_init)() = nullptr;
  CURLcode (*easy_setopt)(CURL*, CURLoption, ...) = nullptr;
  CURLcode (*easy_perform)(CURL*) = nullptr;
  CURLcode (*easy_getinfo)(CURL*, CURLINFO, ...) = nullptr;
  void (*easy_cleanup)(CURL*) = nullptr;
  const char* (*easy_strerror)(CURLcode) = nullptr;
  curl_slist* (*slist_append)(curl_slist*, const char*) = nullptr;
  void (*slist_free_all)(curl_slist*) = nullptr;
  std::string why_not;  // "" once loaded and initialised
};

const Curl& load_curl() {
  static const Curl curl = [] {
    Curl c;
    // Tests name a library that does not exist to see `fetch` fail as it
    // does on a machine without libcurl (the system's cannot be uninstalled).
    const char* override_name = std::getenv("HPCBENCH_LIBCURL");
    std::string name = override_name && *override_name ? override_name : "libcurl.so.4";
    auto why = [&](const std::string& what) {
      return fmt::format("hpcbench fetch needs libcurl ({}), which {}; install it (Debian/Ubuntu: apt-get install "
                         "libcurl4, RHEL/Rocky: dnf install libcurl) or fetch on a machine that has it, such as the "
                         "login node (hpcbench run needs no libcurl)",
                         name, what);
    };
    // Never closed: curl's global state lives as long as the process.
    void* h = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!h) {
      const char* e = ::dlerror();
      c.why_not = why(fmt::format("could not be loaded ({})", e ? e : "unknown error"));
      return c;
    }
    std::string missing;
    auto sym = [&](auto& fn, const char* symbol) {
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(::dlsym(h, symbol));
      if (!fn) missing += (missing.empty() ? "" : ", ") + std::string(symbol);
    };
    sym(c.global_init, "curl_global_init");
    sym(c.easy_init, "curl_easy_init");
    sym(c.easy_setopt, "curl_easy_setopt");
    sym(c.easy_perform, "curl_easy_perform");
    sym(c.easy_getinfo, "curl_easy_getinfo");
    sym(c.easy_cleanup, "curl_easy_cleanup");
    sym(c.easy_strerror, "curl_easy_strerror");
    sym(c.slist_append, "curl_slist_append");
    sym(c.slist_free_all, "curl_slist_free_all");
    if (!missing.empty()) {
      c.why_not = why("lacks " + missing + " (not libcurl 7 or later?)");
      return c;
    }
    if (CURLcode r = c.global_init(CURL_GLOBAL_DEFAULT); r != CURLE_OK)
      c.why_not = why(fmt::format("failed to initialise: {}", c.easy_strerror(r)));
    return c;
  }();
  if (!curl.why_not.empty()) fail("{}", curl.why_not);
  return curl;
}

struct Easy {
  const Curl& curl;
  CURL* h;
  curl_slist* headers = nullptr;
  char errbuf[CURL_ERROR_SIZE] = {0};
  Easy() : curl(load_curl()) {
    h = curl.easy_init();
    if (!h) throw std::runtime_error("curl_easy_init failed");
    set(CURLOPT_ERRORBUFFER, errbuf);
    set(CURLOPT_NOSIGNAL, 1L);
    set(CURLOPT_USERAGENT, "hpcbench (libcurl)");
  }
  ~Easy() {
    curl.slist_free_all(headers);
    curl.easy_cleanup(h);
  }
  Easy(const Easy&) = delete;
  Easy& operator=(const Easy&) = delete;
  // Through a variadic function pointer the compiler no longer checks an
  // option's argument type (curl's macros did): callers pass long, pointers
  // and curl_off_t as curl_easy_setopt's documentation asks.
  template <typename T>
  void set(CURLoption option, T value) {
    curl.easy_setopt(h, option, value);
  }
  long status() const {
    long code = 0;
    curl.easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    return code;
  }
  std::string error(CURLcode code) const { return errbuf[0] ? errbuf : curl.easy_strerror(code); }
  void add_header(const std::string& line) { headers = curl.slist_append(headers, line.c_str()); }
};

size_t on_header(char* data, size_t size, size_t n, void* user) {
  auto* r = static_cast<Response*>(user);
  std::string line(data, size * n);
  // A new status line (after a redirect or a 100 Continue) starts a new set.
  if (line.rfind("HTTP/", 0) == 0) {
    r->headers.clear();
    return size * n;
  }
  auto colon = line.find(':');
  if (colon == std::string::npos) return size * n;
  std::string name = line.substr(0, colon);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  std::string value = line.substr(colon + 1);
  auto first = value.find_first_not_of(" \t");
  auto last = value.find_last_not_of(" \t\r\n");
  r->headers[name] = first == std::string::npos ? "" : value.substr(first, last - first + 1);
  return size * n;
}

// What a failed transfer means to someone at a terminal.
[[noreturn]] void transport_error(CURLcode code, const Easy& e, const std::string& url, long timeout_s) {
  std::string detail = e.error(code);
  switch (code) {
    case CURLE_COULDNT_CONNECT:
      fail("{}: connection refused or unreachable ({}); check HF_ENDPOINT and the proxy variables "
           "(https_proxy), or fetch on a node with internet access (the login node)", url, detail);
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      fail("{}: host name not resolved ({}); compute nodes often have no internet: fetch on the login node, "
           "or set HF_HUB_OFFLINE=1 to use the cache only", url, detail);
    case CURLE_OPERATION_TIMEDOUT:
      fail("{}: timed out after {} s without an answer ({}); raise HF_HUB_ETAG_TIMEOUT / "
           "HF_HUB_DOWNLOAD_TIMEOUT on a slow link", url, timeout_s, detail);
    default:
      fail("{}: {} (curl error {})", url, detail, static_cast<int>(code));
  }
}

bool same_host(const std::string& a, const std::string& b) {
  auto host = [](const std::string& u) {
    auto s = u.find("://");
    s = s == std::string::npos ? 0 : s + 3;
    return u.substr(0, u.find('/', s));
  };
  return host(a) == host(b);
}

struct Sink {
  const Easy* easy;
  const fs::path* part;
  FILE* file = nullptr;
  bool decided = false;
  Response* response;
  ~Sink() {
    if (file) std::fclose(file);
  }
};

size_t on_body(char* data, size_t size, size_t n, void* user) {
  auto* s = static_cast<Sink*>(user);
  if (!s->decided) {
    s->decided = true;
    long code = s->easy->status();
    // 206: the rest of the file after what we have; 200: the server ignored
    // the Range, so the whole file again from the start.
    if (code == 206) s->file = std::fopen(s->part->c_str(), "ab");
    else if (code == 200) s->file = std::fopen(s->part->c_str(), "wb");
    if ((code == 200 || code == 206) && !s->file) return 0;
  }
  if (!s->file) {
    if (s->response->body.size() < 4096) s->response->body.append(data, size * n);
    return size * n;
  }
  return std::fwrite(data, 1, size * n, s->file);
}

struct ProgressHook {
  LoopProgress* progress;
};

int on_progress(void* user, curl_off_t, curl_off_t now, curl_off_t, curl_off_t) {
  auto* p = static_cast<ProgressHook*>(user);
  p->progress->update(static_cast<int64_t>(now));
  return 0;
}

void set_auth(Easy& e, const std::string& token) {
  if (!token.empty()) e.add_header("Authorization: Bearer " + token);
}

}  // namespace

Response http_head(const std::string& url, const std::string& token) {
  Easy e;
  Response r;
  long timeout = env_seconds("HF_HUB_ETAG_TIMEOUT", 10);
  set_auth(e, token);
  // The real size, not that of a compressed transfer (as huggingface_hub asks).
  e.add_header("Accept-Encoding: identity");
  e.set(CURLOPT_URL, url.c_str());
  e.set(CURLOPT_NOBODY, 1L);
  e.set(CURLOPT_HTTPHEADER, e.headers);
  e.set(CURLOPT_TIMEOUT, timeout);
  e.set(CURLOPT_CONNECTTIMEOUT, timeout);
  e.set(CURLOPT_HEADERFUNCTION, on_header);
  e.set(CURLOPT_HEADERDATA, &r);
  CURLcode code = e.curl.easy_perform(e.h);
  if (code != CURLE_OK) transport_error(code, e, url, timeout);
  r.status = e.status();
  return r;
}

Response http_download(const std::string& url, const fs::path& part, const std::string& token, uint64_t expected_size,
                       const std::string& label) {
  long timeout = env_seconds("HF_HUB_DOWNLOAD_TIMEOUT", 10);
  constexpr int max_tries = 5;
  for (int attempt = 1;; ++attempt) {
    std::error_code ec;
    uint64_t have = fs::exists(part, ec) ? fs::file_size(part, ec) : 0;
    if (expected_size && have >= expected_size) {
      Response done;
      done.status = 206;
      return done;
    }
    Easy e;
    Response r;
    // Authorization goes to the hub only, never to the storage host it redirects to.
    if (same_host(url, endpoint())) set_auth(e, token);
    e.add_header("Accept-Encoding: identity");
    if (have > 0) e.add_header(fmt::format("Range: bytes={}-", have));
    // This transfer's bytes: a resumed download counts from where it resumed.
    const bool tty = ::isatty(STDERR_FILENO);
    LoopProgress progress(have > 0 ? fmt::format("{} (resumed at {:.1f} MiB)", label, have / 1048576.0) : label,
                          ProgressUnit("MiB", 1048576, 1),
                          static_cast<int64_t>(expected_size > have ? expected_size - have : 0), true, tty,
                          std::chrono::milliseconds(tty ? 200 : 5000));
    ProgressHook hook{&progress};
    Sink sink{&e, &part, nullptr, false, &r};
    e.set(CURLOPT_URL, url.c_str());
    e.set(CURLOPT_FOLLOWLOCATION, 1L);
    e.set(CURLOPT_MAXREDIRS, 10L);
    e.set(CURLOPT_HTTPHEADER, e.headers);
    e.set(CURLOPT_CONNECTTIMEOUT, timeout);
    e.set(CURLOPT_LOW_SPEED_LIMIT, 1L);
    e.set(CURLOPT_LOW_SPEED_TIME, timeout);
    e.set(CURLOPT_HEADERFUNCTION, on_header);
    e.set(CURLOPT_HEADERDATA, &r);
    e.set(CURLOPT_WRITEFUNCTION, on_body);
    e.set(CURLOPT_WRITEDATA, &sink);
    e.set(CURLOPT_NOPROGRESS, 0L);
    e.set(CURLOPT_XFERINFOFUNCTION, on_progress);
    e.set(CURLOPT_XFERINFODATA, &hook);
    CURLcode code = e.curl.easy_perform(e.h);
    r.status = e.status();
    if (sink.file) {
      if (std::fclose(sink.file) != 0) fail("{}: write error (disk full?)", part.string());
      sink.file = nullptr;
    }
    if (code == CURLE_WRITE_ERROR) fail("{}: cannot write (disk full, or no permission?)", part.string());
    if (code == CURLE_OK) {
      // 416: asked past the end; what we hold is the whole file (the checks decide).
      if (r.status == 416 && have > 0) r.status = 206;
      return r;
    }
    uint64_t now = fs::exists(part, ec) ? fs::file_size(part, ec) : 0;
    bool broken = code == CURLE_PARTIAL_FILE || code == CURLE_RECV_ERROR || code == CURLE_GOT_NOTHING ||
                  code == CURLE_OPERATION_TIMEDOUT || code == CURLE_SEND_ERROR || code == CURLE_HTTP2_STREAM;
    if (broken && now > have && attempt < max_tries) {
      spdlog::warn("{}: connection broken after {} bytes ({}); resuming", label, now,
                   e.error(code));
      continue;
    }
    if (broken && now > 0)
      spdlog::error("{}: {} bytes kept in {}; running the same fetch again resumes from there", label, now,
                    part.string());
    transport_error(code, e, url, timeout);
  }
}

}  // namespace hpcbench::hub
