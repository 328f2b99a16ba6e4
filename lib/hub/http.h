#pragma once
// The few HTTP requests a download needs, through libcurl, which honours the
// usual proxy variables (https_proxy, HTTPS_PROXY, no_proxy, ALL_PROXY; plain
// http:// only through lower-case http_proxy, as curl does).
// Timeouts follow huggingface_hub's variables: HF_HUB_ETAG_TIMEOUT (seconds
// for a HEAD, default 10) and HF_HUB_DOWNLOAD_TIMEOUT (seconds to connect, and
// seconds without a byte before a download is given up, default 10).
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>

namespace hpcbench::hub {

struct Response {
  long status = 0;
  std::map<std::string, std::string> headers;  // names in lower case; the last value wins
  std::string body;                            // only for responses that are not a file's bytes
  std::string header(const std::string& lower_name) const {
    auto it = headers.find(lower_name);
    return it == headers.end() ? "" : it->second;
  }
};

// HEAD without following redirects; throws UserError naming the URL on a
// transport failure (refused, unresolvable host, timeout, TLS).
Response http_head(const std::string& url, const std::string& token);

// GETs url into `part`, resuming from the bytes `part` already holds with a
// Range request, following redirects (the token is not sent to other hosts).
// A broken connection is retried from where it stopped while each try makes
// progress. Returns the final response (status 200/206 on success; the body
// of an error response in .body). `label` names the file in progress output;
// expected_size (0: unknown) sizes the progress bar.
Response http_download(const std::string& url, const std::filesystem::path& part, const std::string& token,
                       uint64_t expected_size, const std::string& label);

}  // namespace hpcbench::hub
