#include "hub/git_blob.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include <fmt/format.h>

#include "core/bounded_read.h"
#include "core/error.h"

namespace hpcbench::hub {
namespace {

// SHA-1 (FIPS 180-4): a blob id, not a security measure; the hub's LFS
// files are checked with SHA-256.
class Sha1 {
 public:
  void update(const void* data, size_t size) {
    auto p = static_cast<const uint8_t*>(data);
    total_ += size;
    while (size > 0) {
      size_t n = std::min(size, 64 - len_);
      std::memcpy(buf_.data() + len_, p, n);
      len_ += n, p += n, size -= n;
      if (len_ == 64) block(buf_.data()), len_ = 0;
    }
  }
  std::string hex_digest() {
    uint64_t bits = total_ * 8;
    uint8_t pad = 0x80;
    update(&pad, 1);
    uint8_t zero = 0;
    while (len_ != 56) update(&zero, 1);
    uint8_t len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(bits >> (56 - 8 * i));
    update(len, 8);
    std::string out;
    for (uint32_t v : h_) out += fmt::format("{:08x}", v);
    return out;
  }

 private:
  static uint32_t rotl(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }
  void block(const uint8_t* p) {
    uint32_t w[80];
    for (int i = 0; i < 16; ++i)
      w[i] = uint32_t(p[4 * i]) << 24 | uint32_t(p[4 * i + 1]) << 16 | uint32_t(p[4 * i + 2]) << 8 | p[4 * i + 3];
    for (int i = 16; i < 80; ++i) w[i] = rotl(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
    uint32_t a = h_[0], b = h_[1], c = h_[2], d = h_[3], e = h_[4];
    for (int i = 0; i < 80; ++i) {
      uint32_t f, k;
      if (i < 20) f = (b & c) | (~b & d), k = 0x5A827999;
      else if (i < 40) f = b ^ c ^ d, k = 0x6ED9EBA1;
      else if (i < 60) f = (b & c) | (b & d) | (c & d), k = 0x8F1BBCDC;
      else f = b ^ c ^ d, k = 0xCA62C1D6;
      uint32_t t = rotl(a, 5) + f + e + k + w[i];
      e = d, d = c, c = rotl(b, 30), b = a, a = t;
    }
    h_[0] += a, h_[1] += b, h_[2] += c, h_[3] += d, h_[4] += e;
  }
  std::array<uint32_t, 5> h_{0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0};
  std::array<uint8_t, 64> buf_{};
  size_t len_ = 0;
  uint64_t total_ = 0;
};

}  // namespace

std::string git_blob_sha1_file(const std::filesystem::path& path) {
  try {
    ReadableFile in = open_regular_file(path, file_limit::kCheckpoint);
    Sha1 h;
    std::string head = fmt::format("blob {}", in.size());
    h.update(head.data(), head.size() + 1);  // with its '\0'
    std::vector<char> buf(1 << 16);
    uint64_t hashed = 0;
    for (size_t n; (n = in.read_some(buf.data(), buf.size())) > 0; hashed += n) h.update(buf.data(), n);
    // The header promised the size: a file that changed while it was hashed has no id.
    if (hashed != in.size()) fail("it changed size while it was read");
    return h.hex_digest();
  } catch (const Interrupted&) {
    throw;
  } catch (const UserError& e) {
    fail("cannot read {}: {}", path.string(), e.what());
  }
}

bool is_git_blob_id(const std::string& etag) {
  return etag.size() == 40 &&
         std::all_of(etag.begin(), etag.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

}  // namespace hpcbench::hub
