#pragma once
// SHA-256, enough to check downloads against the hub's LFS ETags and the
// pinned SQuAD sums without pulling a crypto library into the build.
#include <array>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace hpcbench::hub {

class Sha256 {
 public:
  Sha256();
  void update(const void* data, size_t size);
  std::string hex_digest();  // finishes the hash; call once

 private:
  void block(const uint8_t* p);
  std::array<uint32_t, 8> h_;
  std::array<uint8_t, 64> buf_{};
  size_t buf_len_ = 0;
  uint64_t total_ = 0;
};

// Lower-case hex digest of a whole file; throws UserError naming it when it cannot be read.
std::string sha256_file(const std::filesystem::path& path);

}  // namespace hpcbench::hub
