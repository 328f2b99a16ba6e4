#include "core/time.h"

#include <chrono>
#include <ctime>

namespace hpcbench {

namespace {

std::string now_as(const char* format, bool utc) {
  auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  if (utc) gmtime_r(&t, &tm);
  else localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), format, &tm);
  return buf;
}

}  // namespace

std::string utc_now_iso() { return now_as("%Y-%m-%dT%H:%M:%SZ", true); }

std::string local_timestamp() { return now_as("%Y%m%d-%H%M%S", false); }

}  // namespace hpcbench
